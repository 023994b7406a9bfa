import type { FastifyReply } from 'fastify';

/**
 * Sends JSON text built from stored records as is: a string with a JSON content type skips the
 * serializer, so it is not parsed and encoded again.
 */
export function sendJsonText(reply: FastifyReply, json: string) {
  return reply.type('application/json; charset=utf-8').send(json as never);
}
