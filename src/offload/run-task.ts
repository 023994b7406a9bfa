import { move, transferableSymbol, valueSymbol } from 'piscina';
import { MOVE, movableBuffers, type OffloadOutcome, portableError, type WithBuffers } from './outcome.js';

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
  const marked = value !== null && typeof value === 'object' ? ((value as Record<symbol, unknown>)[MOVE] as WithBuffers<unknown> | undefined) : undefined;
  if (!marked) return { ok: true, value } satisfies OffloadOutcome<unknown>;
  const outcome: OffloadOutcome<unknown> = { ok: true, value: marked.value };
  return move({ [transferableSymbol]: movableBuffers(marked.buffers), [valueSymbol]: outcome } as never);
}
