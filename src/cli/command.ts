import type { ParseArgsConfig } from 'node:util';
import type { AppContext } from '../context.js';
import type { AdminApi } from './admin-api.js';

export type CliOptions = NonNullable<ParseArgsConfig['options']>;

/** One `--option` of a command: how it is parsed and how its help describes it. */
export interface CliOption {
  type: 'string' | 'boolean';
  /** The value's placeholder in the usage line, e.g. `ID`, `N`, `ISO` (string options). */
  value?: string;
  /** Shown without brackets in the usage line (the command itself checks it). */
  required?: boolean;
  /** One line of the command's help. */
  description: string;
}

export interface CliPositional {
  name: string;
  description: string;
}

/** A command's parsed arguments. */
export interface CliArgs {
  values: Record<string, string | boolean | undefined>;
  positionals: string[];
}

/** What every command declares for its help and its output. */
export interface CommandInfo<R> {
  /** One line: in the group's listing and at the top of the command's help. */
  summary: string;
  /** Positional arguments it requires, in order. */
  positionals?: CliPositional[];
  options?: Record<string, CliOption>;
  /** Further lines at the end of the command's help. */
  details?: string[];
  /** What `--json` does for this command, in its help; false when it has no JSON output. Default: one JSON object. */
  json?: string | false;
  /** Columns of the `items` table in the human-readable output (default: every field). */
  columns?: string[];
  /** The human-readable output, instead of the default `key: value` lines and tables. */
  human?(result: R): string;
  /** When the result reports a failure (e.g. a test ping that failed): the message; the exit code is then 1. */
  failure?(result: R): string | null;
  /** May create a missing SQLite database (migrate, the demo, the first admin key); other commands refuse one (exit 66). */
  createsDatabase?: boolean;
}

/** A command without an admin API route that works on the database of DATABASE_URL (migrate, the demo). */
export interface DatabaseCommand<R = unknown> extends CommandInfo<R> {
  standalone?: false;
  /** Pending migrations are applied before `run` unless false: `migrate` applies them itself, to report what it applied. */
  migrateFirst?: boolean;
  run(args: CliArgs & { ctx: AppContext }): Promise<R>;
}

/** A command that opens what it needs itself, or nothing (serve and worker open their database, device simulate a socket). */
export interface StandaloneCommand<R = unknown> extends CommandInfo<R> {
  standalone: true;
  run(args: CliArgs): Promise<R>;
}

/**
 * A command with an admin API route. Its arguments are parsed once (`input`, before anything is opened); then it
 * runs either on the database through the domain services (`local`, as the operator) or on a server through its
 * admin API (`remote`). Both give the same result `R`, so the output does not depend on where the command ran:
 * `adminCommand` (admin-command.ts) derives both from one declaration.
 */
export interface AdminCommand<I = unknown, R = unknown> extends CommandInfo<R> {
  standalone?: undefined;
  input(args: CliArgs): I;
  local(ctx: AppContext, input: I): Promise<R>;
  remote(api: AdminApi, input: I): Promise<R>;
}

/** Any command (each has its own input and result types: the methods' parameters are checked bivariantly). */
export type CliCommand = AdminCommand | DatabaseCommand | StandaloneCommand;

export const isAdminCommand = (command: CliCommand): command is AdminCommand => 'remote' in command;

/** Declares a command that works on the database only (the literal alone could not tell it from the other kinds). */
export function databaseCommand<R>(command: DatabaseCommand<R>): DatabaseCommand<R> {
  return command;
}

/** The options in the form node:util parseArgs takes. */
export function parseArgsOptions(command: CliCommand): CliOptions {
  return Object.fromEntries(Object.entries(command.options ?? {}).map(([name, option]) => [name, { type: option.type }]));
}

export class UsageError extends Error {}

export function requireOption(values: Record<string, string | boolean | undefined>, name: string): string {
  const value = values[name];
  if (typeof value !== 'string' || value.trim() === '') throw new UsageError(`--${name} is required`);
  return value;
}

export function parseSubject(value: string): { subjectType: 'partner' | 'enterprise' | 'org'; subjectId: string } {
  const match = /^(partner|enterprise|org):([0-9a-fA-F-]{36})$/.exec(value);
  if (!match) throw new UsageError('--subject must be org:ID, enterprise:ID or partner:ID');
  return { subjectType: match[1] as 'partner' | 'enterprise' | 'org', subjectId: match[2]!.toLowerCase() };
}

export function parseIdList(value: string | boolean | undefined, flag: string): string[] | null {
  if (typeof value !== 'string') return null;
  const ids = value
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
  if (ids.length === 0 || !ids.every((id) => /^[0-9a-f-]{36}$/.test(id))) throw new UsageError(`--${flag} must be a comma-separated list of ids`);
  return ids;
}
