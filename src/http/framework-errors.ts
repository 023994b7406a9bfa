import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { ErrorCode } from '../errors.js';

/** The one error body of the service, `{"detail":{"error","message"}}`, as JSON text. */
export function errorBody(code: ErrorCode, message: string): string {
  return JSON.stringify({ detail: { error: code, message } });
}

/**
 * Requests that never become a Fastify request: Node's HTTP parser refuses them (malformed request
 * line, headers over the size limit, a request that took longer than `requestTimeout` to arrive).
 * Fastify's default handler writes its own body; these get the service's error body instead, and the
 * socket is closed since the stream can no longer be trusted to be in sync.
 */
export function clientErrorHandler(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  let status = 400;
  let body = errorBody('bad_request', 'The request could not be parsed as HTTP/1.1.');
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    status = 408;
    body = errorBody('request_timeout', 'The request was not received in time; send it again.');
  } else if (err.code === 'HPE_HEADER_OVERFLOW') {
    status = 431;
    body = errorBody('headers_too_large', 'The request line and headers exceed the size limit (16 KiB).');
  }
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

/**
 * Errors raised by Fastify's router before a route is chosen: a path with broken percent-encoding,
 * or a path parameter beyond the router's length limit (set above Node's header limit, so a long id
 * reaches its route and is answered there).
 */
export function frameworkErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  reply.header('x-request-id', request.id);
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    reply.code(414).type('application/json').send(errorBody('uri_too_long', 'A path segment is longer than this service accepts.'));
    return;
  }
  reply.code(400).type('application/json').send(errorBody('bad_request', 'The URL is malformed (broken percent-encoding); encode each path segment.'));
}
