import type { FastifyReply, FastifyRequest } from 'fastify';
import type { IncomingMessage } from 'node:http';
import { callerKey } from '../domain/access/caller-key.js';
import { callerOf } from '../edge/auth.js';
import { AppError } from '../errors.js';
import type { Offload, OffloadSlot } from '../offload/pool.js';

/** Bodies above this size count as large (the limit of every other route). */
export const LARGE_BODY_BYTES = 1024 * 1024;

/** The worker slot each admitted large body holds, taken before its first byte is read. */
const slots = new WeakMap<IncomingMessage, OffloadSlot>();

/** The worker slot the gate took for this request's large body, if it took one. */
export function largeBodySlot(request: FastifyRequest): OffloadSlot | undefined {
  return slots.get(request.raw);
}

/** Whether a request's body may be large: over the bound, or chunked (its size is unknown until it ends). */
export function mayBeLarge(request: FastifyRequest): boolean {
  const declared = request.headers['content-length'];
  return declared === undefined ? request.headers['transfer-encoding'] !== undefined : Number(declared) > LARGE_BODY_BYTES;
}

/**
 * Bounds how many large bodies (message posts with inline media, up to 64 MiB each) are received and decoded at once, for the
 * process (503 with Retry-After) and for each key (its worker slots, 429 with Retry-After). Runs after authentication, so only
 * valid keys can take a slot, and before the body is read: a refused body is never read (see `closeUnreadBodies`).
 */
export function largeBodyGate(max: number, offload: Offload) {
  let taken = 0;
  return (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void): void => {
    if (!mayBeLarge(request)) {
      done();
      return;
    }
    if (taken >= max) {
      done(new AppError('unavailable', `${max} large message bodies are being received; retry after 1 s.`, {}, { retryAfterSeconds: 1 }));
      return;
    }
    let slot: OffloadSlot;
    try {
      slot = offload.slot(callerKey(callerOf(request)));
    } catch (err) {
      done(err as Error);
      return;
    }
    taken++;
    slots.set(request.raw, slot);
    let released = false;
    // 'close' comes once the response is sent or the client went away, whatever happened in between.
    reply.raw.once('close', () => {
      if (released) return;
      released = true;
      taken--;
      slot.release();
    });
    done();
  };
}

/**
 * Answers sent before the body was read whole (refused, too large, malformed) close the connection, and the socket is destroyed
 * once the answer is flushed: otherwise the server would go on reading the rest of the body, megabytes of it, only to drop it.
 */
export function closeUnreadBodies(request: FastifyRequest, reply: FastifyReply): void {
  if (request.raw.complete) return;
  reply.header('connection', 'close');
  reply.raw.once('finish', () => request.raw.socket?.destroy());
}
