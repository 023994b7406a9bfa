#!/usr/bin/env node
// Registers the TypeScript loader, then runs the command-line entry point.
import { register } from 'tsx/esm/api';
register();
await import('../src/main.ts');
