import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';

// This entry imports nothing of the service statically: the pool may load it as CommonJS, and the tasks' modules must be one
// instance (one AppError class) with what runs them, so both come through import() below.
const EXTENSION = extname(fileURLToPath(import.meta.url));

let ready: Promise<typeof import('./run-task.js')> | undefined;

function runner(): Promise<typeof import('./run-task.js')> {
  ready ??= import(new URL(`./run-task${EXTENSION}`, import.meta.url).href) as Promise<typeof import('./run-task.js')>;
  return ready;
}

/** The entry of each pool thread. */
export default async function runTask(job: { module: string; name: string; input: unknown }): Promise<unknown> {
  return (await runner()).runTask(job);
}
