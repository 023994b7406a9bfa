import { AppError, type ErrorCode, type FieldIssue, FieldValidationError } from '../errors.js';

/**
 * What a worker thread answers: the task's value, or the error it threw in a form that crosses threads (a structured clone
 * keeps an Error's message but not its class or fields). Errors of other kinds are thrown as they are and become 500s.
 */
export type OffloadOutcome<O> = { ok: true; value: O } | { ok: false; error: PortableError };

export type PortableError =
  | { kind: 'app'; code: ErrorCode; message: string; extra: Record<string, unknown>; status: number }
  | { kind: 'fields'; issues: FieldIssue[] };

export function portableError(err: unknown): PortableError | null {
  if (err instanceof AppError) return { kind: 'app', code: err.code, message: err.message, extra: err.extra, status: err.status };
  if (err instanceof FieldValidationError) return { kind: 'fields', issues: err.issues };
  return null;
}

export function rebuiltError(error: PortableError): Error {
  return error.kind === 'app' ? new AppError(error.code, error.message, error.extra, { status: error.status }) : new FieldValidationError(error.issues);
}

/**
 * The buffers of `value` that are worth moving rather than copying: those that own memory of their own (a small Buffer is a
 * slice of a shared pool, which must stay where it is). Each memory is listed once, as postMessage requires.
 */
export function movableBuffers(buffers: Uint8Array[]): ArrayBuffer[] {
  const out = new Set<ArrayBuffer>();
  for (const b of buffers) if (b.buffer instanceof ArrayBuffer && b.buffer.byteLength > Buffer.poolSize) out.add(b.buffer);
  return [...out];
}

/** A task's value whose large buffers move to the main thread instead of being copied. */
export interface WithBuffers<O> {
  value: O;
  buffers: Uint8Array[];
}

export const MOVE = Symbol.for('emergency-api.offload.move');

/** Marks a task's value whose `buffers` move to the main thread rather than being copied (the pool's worker unwraps it). */
export function withBuffers<O>(value: O, buffers: Uint8Array[]): O {
  return { [MOVE]: { value, buffers } satisfies WithBuffers<O> } as O;
}
