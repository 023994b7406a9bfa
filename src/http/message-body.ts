import type { FastifyRequest } from 'fastify';
import type { Readable } from 'node:stream';
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import type { AppContext } from '../context.js';
import { callerKey } from '../domain/access/caller-key.js';
import { type PreparedAttachment, prepareAttachment } from '../domain/attachments/prepare.js';
import { DecodedPost } from '../domain/messages/decoded-post.js';
import { postMessageInput, type PostMessageInput } from '../domain/messages/schema.js';
import { hostileInputError, toFieldIssues } from '../edge/field-issues.js';
import { callerOf } from '../edge/auth.js';
import { AppError, fieldError, FieldValidationError } from '../errors.js';
import { offloadTask } from '../offload/pool.js';
import { type PortableError, portableError, rebuiltError, withBuffers } from '../offload/outcome.js';
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
 * attachment. Only the bytes cross back (moved, not copied), never the megabytes of base64 text.
 */
export async function decodeLargePost(body: Uint8Array): Promise<DecodedPostData> {
  const value = parseLargeJson(Buffer.from(body.buffer, body.byteOffset, body.byteLength), parseJsonText);
  const hostile = hostileInputError('body', value);
  if (hostile) throw hostile;
  const parsed = postMessageInput.safeParse(value === null ? undefined : value, { reportInput: true });
  if (!parsed.success) throw new FieldValidationError(toFieldIssues('body', parsed.error.issues));
  const input = parsed.data;
  const prepared: PreparedAttachment[] = [];
  let rejection: PortableError | null = null;
  for (const [index, spec] of input.attachments.entries()) {
    try {
      prepared.push(await prepareAttachment(spec, index));
    } catch (err) {
      rejection = portableError(err);
      if (!rejection) throw err;
      break;
    }
  }
  for (const spec of input.attachments) spec.src = '';
  return withBuffers(
    { input, prepared, rejection },
    prepared.flatMap((a) => (a.form === 'inline' ? [a.bytes] : [])),
  );
}

/** What the main thread posts on an upload's port: a piece of the body, then null once the body is whole. */
type BodyPiece = Uint8Array | null;

/** The body's bytes as they come through `port`, in one buffer of its declared size when it has one. */
function receiveBody(port: MessagePort, declared: number | null): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const whole = declared === null ? null : Buffer.allocUnsafe(declared);
    const pieces: Uint8Array[] = [];
    let filled = 0;
    port.on('message', (piece: BodyPiece) => {
      if (piece === null) {
        port.close();
        resolve(whole ?? Buffer.concat(pieces, filled));
        return;
      }
      if (whole) whole.set(piece, filled);
      else pieces.push(piece);
      filled += piece.byteLength;
    });
    // The main thread closes the port when it gives up on the body (too large, cut, refused): there is nothing to decode.
    port.once('close', () => reject(new AppError('bad_request', 'The body was not received whole.')));
  });
}

/** Runs on a worker thread: assembles a large post from the pieces the main thread forwards as they arrive, then decodes it. */
export async function decodeStreamedPost({ port, declared }: { port: MessagePort; declared: number | null }): Promise<DecodedPostData> {
  return decodeLargePost(await receiveBody(port, declared));
}

export const decodeStreamedPostTask = offloadTask(import.meta.url, decodeStreamedPost);

/** Pieces forwarded to the worker are gathered to this size first: fewer messages, each moved rather than copied. */
const PIECE_BYTES = 1024 * 1024;

/**
 * Each large body is read no faster than this (bytes per second): receiving, copying and decoding megabytes as fast as a client
 * sends them would take the CPU from every tenant's alert path, while a paced body still completes in a few seconds.
 */
const READ_BYTES_PER_SECOND = 8 * 1024 * 1024;

/**
 * Forwards the body to `port` as it arrives, holding at most one piece of it here; fails (and closes the port) as soon as the
 * body is longer than declared or than `limit`, shorter than declared, cut, or `decoded` failed.
 */
function forwardBody(payload: Readable, port: MessagePort, declared: number | null, limit: number, decoded: Promise<unknown>): Promise<void> {
  return new Promise((resolve, reject) => {
    let piece = Buffer.allocUnsafeSlow(PIECE_BYTES);
    let filled = 0;
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
      port.close();
      reject(err);
    };
    const send = () => {
      port.postMessage(piece.subarray(0, filled), [piece.buffer]);
      piece = Buffer.allocUnsafeSlow(PIECE_BYTES);
      filled = 0;
      // Backpressure: the socket is not read while the body is ahead of its pace, so the client waits, not the event loop.
      const ahead = (total / READ_BYTES_PER_SECOND) * 1000 - (performance.now() - started);
      if (ahead <= 0) return;
      payload.pause();
      setTimeout(() => {
        if (!settled) payload.resume();
      }, ahead);
    };
    const onData = (chunk: Buffer) => {
      total += chunk.length;
      if (declared !== null && total > declared) return finish(new AppError('bad_request', 'The body is longer than its Content-Length.'));
      if (total > limit) return finish(tooLarge(limit));
      for (let at = 0; at < chunk.length; ) {
        const copied = chunk.copy(piece, filled, at);
        filled += copied;
        at += copied;
        if (filled === PIECE_BYTES) send();
      }
    };
    const onEnd = () => {
      if (declared !== null && total !== declared) return finish(new AppError('bad_request', 'The body is shorter than its Content-Length.'));
      if (filled > 0) send();
      port.postMessage(null satisfies BodyPiece);
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
 * with one of the key's worker slots, is forwarded piece by piece to a worker thread as it arrives (413 as soon as it crosses
 * the route's limit), which assembles and decodes it into a DecodedPost. The main thread never holds a large body whole.
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
    const { port1, port2 } = new MessageChannel();
    const decoded = slot.run(decodeStreamedPostTask, { port: port2, declared }, [port2]);
    await forwardBody(payload, port1, declared, limit, decoded);
    const data = await decoded;
    // Buffers arrive as plain byte arrays: each is wrapped again, on the same memory.
    const prepared = data.prepared.map((a) => (a.form === 'inline' ? { ...a, bytes: Buffer.from(a.bytes.buffer, a.bytes.byteOffset, a.bytes.byteLength) } : a));
    return new DecodedPost(data.input, prepared, data.rejection ? rebuiltError(data.rejection) : null);
  } finally {
    slot.release();
  }
}
