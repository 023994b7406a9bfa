import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../context.js';
import { IdempotencyKeyTaken } from '../db/idempotency.js';
import { DATABASE_RETRY_AFTER_SECONDS, databaseUnavailable, isDatabaseUnavailable } from '../db/unavailable.js';
import { replayTakenKey } from '../edge/idempotency.js';
import { AppError, type ErrorCode, FieldValidationError } from '../errors.js';
import { fieldIssuesOf, RequestPartError, toFieldIssues } from '../edge/field-issues.js';

/** Framework-level client errors keep their status and get the code of the closed list that names it. */
const CLIENT_ERROR_CODES: Partial<Record<number, ErrorCode>> = {
  404: 'not_found',
  405: 'method_not_allowed',
  408: 'request_timeout',
  414: 'uri_too_long',
  431: 'headers_too_large',
};

function sendAppError(reply: FastifyReply, err: AppError) {
  if (err.status === 401) reply.header('www-authenticate', 'Bearer');
  if (err.retryAfterSeconds !== undefined) reply.header('retry-after', err.retryAfterSeconds);
  return reply.code(err.status).send({ detail: err.toDetail() });
}

/** The one place where every failure becomes an HTTP response; 5xx bodies never carry internals. */
export function installErrorHandling(app: FastifyInstance, ctx: Pick<AppContext, 'db' | 'dbOutage'>): void {
  const { db } = ctx;
  app.setErrorHandler((error: FastifyError | Error, request: FastifyRequest, reply: FastifyReply) => {
    if (error instanceof IdempotencyKeyTaken) {
      // Another request with the key committed first; this one was rolled back whole: send that answer.
      return replayTakenKey(db, request, reply, error.apiKeyId, error.key).catch((err: unknown) =>
        err instanceof AppError ? sendAppError(reply, err) : reply.code(500).send({ detail: { error: 'internal', message: 'Internal error.' } }),
      );
    }
    if (error instanceof RequestPartError) return reply.code(422).send({ detail: fieldIssuesOf(error) });
    if (error instanceof FieldValidationError) return reply.code(422).send({ detail: error.issues });
    if (error instanceof z.ZodError) return reply.code(422).send({ detail: toFieldIssues('body', error.issues) });
    if (error instanceof AppError) return sendAppError(reply, error);
    const status = (error as FastifyError).statusCode;
    const code = (error as FastifyError).code;
    if (status === 413 || code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      return sendAppError(reply, new AppError('payload_too_large', 'The request body exceeds the size limit of this endpoint.'));
    }
    if (status === 415 || code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
      return sendAppError(reply, new AppError('unsupported_media_type', 'Send the body as Content-Type: application/json.'));
    }
    if (code === 'FST_ERR_CTP_EMPTY_JSON_BODY') {
      return reply.code(422).send({ detail: [{ loc: ['body'], msg: 'Field required', type: 'missing' }] });
    }
    if (status === 400 && (error instanceof SyntaxError || code === 'FST_ERR_CTP_INVALID_JSON_BODY' || /JSON/i.test(error.message))) {
      return reply.code(422).send({ detail: [{ loc: ['body'], msg: 'The body is not valid JSON.', type: 'json_invalid' }] });
    }
    if (status !== undefined && status >= 400 && status < 500) {
      const code = CLIENT_ERROR_CODES[status] ?? 'bad_request';
      return reply.code(status).send({ detail: { error: code, message: 'The request could not be read.' } });
    }
    if (isDatabaseUnavailable(error)) {
      // Logged once per outage, not per request (see OutageLog); the client is told when to come back.
      ctx.dbOutage.failed(error);
      reply.header('retry-after', DATABASE_RETRY_AFTER_SECONDS);
      return sendAppError(reply, databaseUnavailable());
    }
    request.log.error({ err: error }, 'unhandled error');
    const message =
      request.method === 'GET' || request.method === 'HEAD'
        ? 'Internal error; nothing was changed, retry later.'
        : 'Internal error; the outcome of a write is unknown, read before retrying.';
    return reply.code(500).send({ detail: { error: 'internal', message } });
  });

  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({ detail: { error: 'not_found', message: `No route ${request.method} ${request.url.split('?')[0]}.` } }),
  );
}
