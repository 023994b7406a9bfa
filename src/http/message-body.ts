import type { FastifyRequest } from 'fastify';
import type { Readable } from 'node:stream';
import type { AppContext } from '../context.js';
import { callerKey } from '../domain/access/caller-key.js';
import { type PreparedAttachment, prepareAttachment } from '../domain/attachments/prepare.js';
import { DecodedPost } from '../domain/messages/decoded-post.js';
import { postMessageInput, type PostMessageInput } from '../domain/messages/schema.js';
import { hostileInputError, toFieldIssues } from '../edge/field-issues.js';
import { callerOf } from '../edge/auth.js';
import { AppError, fieldError, FieldValidationError } from '../errors.js';
import { offloadTask } from '../offload/pool.js';
import { asBuffer, inSharedMemory, type PortableError, portableError, rebuiltError } from '../offload/outcome.js';
import { LARGE_BODY_BYTES, largeBodySlot } from './large-bodies.js';
import { parseLargeJson, readBody } from './large-json.js';

/** What a large post becomes on a worker thread; the main thread turns it into a DecodedPost. */
interface DecodedPostData {
  input: PostMessageInput;
  prepared: PreparedAttachment[];
  rejection: PortableError | null;
}

/** JSON.parse refusing what the framework's parser refuses: `__proto__` keys and `constructor` objects with a `prototype`. */
function parseJsonText(text: string): unknown {
  try {
    return JSON.parse(text, (key, value: unknown) => {
      if (key === '__proto__' || (key === 'constructor' && value !== null && typeof value === 'object' && Object.hasOwn(value, 'prototype'))) {
        throw new SyntaxError('Object contains forbidden prototype property');
      }
      return value;
    });
  } catch (err) {
    if (err instanceof SyntaxError) throw fieldError(['body'], 'The body is not valid JSON.', 'json_invalid');
    throw err;
  }
}

/**
 * Runs on a worker thread: parses a large post, validates it as the route would, and decodes, checks and hashes each inline
 * attachment. Only the decoded bytes cross back, in shared memory (see inSharedMemory), never the megabytes of base64 text.
 */
export async function decodeLargePost(body: Uint8Array): Promise<DecodedPostData> {
  const value = parseLargeJson(asBuffer(body), parseJsonText);
  const hostile = hostileInputError('body', value);
  if (hostile) throw hostile;
  const parsed = postMessageInput.safeParse(value === null ? undefined : value, { reportInput: true });
  if (!parsed.success) throw new FieldValidationError(toFieldIssues('body', parsed.error.issues));
  const input = parsed.data;
  const prepared: PreparedAttachment[] = [];
  let rejection: PortableError | null = null;
  for (const [index, spec] of input.attachments.entries()) {
    try {
      const attachment = await prepareAttachment(spec, index);
      prepared.push(attachment.form === 'inline' ? { ...attachment, bytes: inSharedMemory(attachment.bytes) } : attachment);
    } catch (err) {
      rejection = portableError(err);
      if (!rejection) throw err;
      break;
    }
  }
  for (const spec of input.attachments) spec.src = '';
  return { input, prepared, rejection };
}

/**
 * An upload's state, in a word of shared memory the main thread writes and the worker waits on: RECEIVING until the body is
 * whole (its length then in the next word) or given up (too large, cut, refused): then there is nothing to decode.
 */
const RECEIVING = 0;
const WHOLE = 1;
const ABANDONED = 2;

/** Runs on a worker thread: waits until the main thread has written the whole body into `body`, then decodes it. */
export async function decodeStreamedPost({ body, state }: { body: SharedArrayBuffer; state: Int32Array }): Promise<DecodedPostData> {
  const wait = Atomics.waitAsync(state, 0, RECEIVING);
  if (wait.async) await wait.value;
  if (Atomics.load(state, 0) !== WHOLE) throw new AppError('bad_request', 'The body was not received whole.');
  return decodeLargePost(new Uint8Array(body, 0, Atomics.load(state, 1)));
}

export const decodeStreamedPostTask = offloadTask(import.meta.url, decodeStreamedPost);

/**
 * Each large body is read no faster than this (bytes per second): receiving, copying and decoding megabytes as fast as a client
 * sends them would take the CPU from every tenant's alert path, while a paced body still completes in a few seconds.
 */
const READ_BYTES_PER_SECOND = 8 * 1024 * 1024;

/** Sets an upload's state (see RECEIVING) and wakes the worker waiting on it. */
function settle(state: Int32Array, outcome: typeof WHOLE | typeof ABANDONED, length = 0): void {
  Atomics.store(state, 1, length);
  Atomics.store(state, 0, outcome);
  Atomics.notify(state, 0);
}

/**
 * Writes the body into `body` (shared with the worker that decodes it) as it arrives, then marks it whole in `state`; fails
 * (and marks it abandoned) as soon as the body is longer than declared or than the buffer, shorter than declared, cut, or
 * `decoded` failed. Shared memory spares the main thread a buffer per piece, whose external memory would prompt full
 * collections.
 */
function receiveInto(payload: Readable, body: SharedArrayBuffer, state: Int32Array, declared: number | null, decoded: Promise<unknown>): Promise<void> {
  return new Promise((resolve, reject) => {
    const target = new Uint8Array(body);
    const limit = body.byteLength;
    let total = 0;
    let settled = false;
    const started = performance.now();
    const finish = (err?: Error) => {
      if (settled) return;
      settled = true;
      payload.off('data', onData).off('end', onEnd).off('error', finish).off('close', onClose);
      if (!err) {
        resolve();
        return;
      }
      payload.pause();
      settle(state, ABANDONED);
      reject(err);
    };
    const onData = (chunk: Buffer) => {
      if (declared !== null && total + chunk.length > declared) return finish(new AppError('bad_request', 'The body is longer than its Content-Length.'));
      if (total + chunk.length > limit) return finish(tooLarge(limit));
      target.set(chunk, total);
      total += chunk.length;
      // Backpressure: the socket is not read while the body is ahead of its pace, so the client waits, not the event loop.
      const ahead = (total / READ_BYTES_PER_SECOND) * 1000 - (performance.now() - started);
      if (ahead <= 0) return;
      payload.pause();
      setTimeout(() => {
        if (!settled) payload.resume();
      }, ahead);
    };
    const onEnd = () => {
      if (declared !== null && total !== declared) return finish(new AppError('bad_request', 'The body is shorter than its Content-Length.'));
      settle(state, WHOLE, total);
      finish();
    };
    const onClose = () => finish(new AppError('bad_request', 'The body was cut before its end.'));
    payload.on('data', onData).once('end', onEnd).once('error', finish).once('close', onClose);
    decoded.catch(finish);
  });
}

function tooLarge(limit: number): AppError {
  return new AppError('payload_too_large', `The request body exceeds the size limit of this endpoint (${limit} bytes).`);
}

/**
 * Reads a message post's body: a small one is parsed here; a large one (or one of unknown size), admitted by the large-body gate
 * with one of the key's worker slots, is written as it arrives into memory shared with a worker thread (413 as soon as it
 * crosses the route's limit), which decodes it into a DecodedPost once it is whole.
 */
export async function readMessageBody(
  ctx: AppContext,
  request: FastifyRequest,
  payload: Readable,
  limit: number,
  parseSmall: (text: string) => unknown,
): Promise<unknown> {
  const declaredHeader = request.headers['content-length'];
  if (declaredHeader !== undefined && Number(declaredHeader) <= LARGE_BODY_BYTES)
    return parseLargeJson(await readBody(payload, declaredHeader, limit), parseSmall);
  const declared = declaredHeader === undefined ? null : Number(declaredHeader);
  if (declared !== null && !Number.isSafeInteger(declared)) throw new AppError('bad_request', 'Content-Length is not a byte count.');
  if (declared !== null && declared > limit) throw tooLarge(limit);
  const slot = largeBodySlot(request) ?? ctx.offload.slot(callerKey(callerOf(request)));
  try {
    // Of the declared size, or of the limit for a body of unknown size: pages never written are never committed.
    const body = new SharedArrayBuffer(declared ?? limit);
    const state = new Int32Array(new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT));
    const decoded = slot.run(decodeStreamedPostTask, { body, state });
    await receiveInto(payload, body, state, declared, decoded);
    const data = await decoded;
    const prepared = data.prepared.map((a) => (a.form === 'inline' ? { ...a, bytes: asBuffer(a.bytes) } : a));
    return new DecodedPost(data.input, prepared, data.rejection ? rebuiltError(data.rejection) : null);
  } finally {
    slot.release();
  }
}
