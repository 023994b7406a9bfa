import { type OffloadOutcome, portableError } from './outcome.js';

/** Imports the task's module (once per thread) and runs the named export on the input; errors of the service cross as data. */
export async function runTask({ module, name, input }: { module: string; name: string; input: unknown }): Promise<unknown> {
  const fn = (await import(module))[name] as (input: unknown) => unknown;
  let value: unknown;
  try {
    value = await fn(input);
  } catch (err) {
    const error = portableError(err);
    if (!error) throw err;
    return { ok: false, error } satisfies OffloadOutcome<unknown>;
  }
  return { ok: true, value } satisfies OffloadOutcome<unknown>;
}
