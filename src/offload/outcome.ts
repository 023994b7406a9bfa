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
 * A copy of `bytes` in shared memory, for a task's value: it crosses to the main thread without a copy, and, unlike memory
 * moved or allocated there, it does not count toward the main thread's external memory, whose growth prompts its full
 * garbage collections (pauses every tenant's alert path waits behind).
 */
export function inSharedMemory(bytes: Uint8Array): Buffer {
  const shared = Buffer.from(new SharedArrayBuffer(bytes.byteLength));
  shared.set(bytes);
  return shared;
}

/** A buffer that came from a worker thread (as a plain byte array), wrapped again as a Buffer on the same memory. */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
