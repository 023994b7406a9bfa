import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';

/** Bodies above this size count as large (the limit of every other route). */
export const LARGE_BODY_BYTES = 1024 * 1024;

/**
 * Bounds how many large bodies (message posts with inline media, up to 64 MiB each) are received and
 * decoded at once, since each holds about twice its size in memory until it is stored. A post beyond
 * the bound is refused before its body is read: 503 unavailable with Retry-After, and the connection
 * is closed rather than drained. Runs after authentication, so only valid keys can take a slot.
 */
export function largeBodyGate(max: number) {
  let taken = 0;
  return (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void): void => {
    const declared = request.headers['content-length'];
    // A chunked body has no declared size: it may be large, so it takes a slot too.
    const large = declared === undefined ? request.headers['transfer-encoding'] !== undefined : Number(declared) > LARGE_BODY_BYTES;
    if (!large) {
      done();
      return;
    }
    if (taken >= max) {
      reply.header('retry-after', 1).header('connection', 'close');
      done(new AppError('unavailable', `${max} large message bodies are being received; retry after 1 s.`));
      return;
    }
    taken++;
    let released = false;
    // 'close' comes once the response is sent or the client went away, whatever happened in between.
    reply.raw.once('close', () => {
      if (released) return;
      released = true;
      taken--;
    });
    done();
  };
}
