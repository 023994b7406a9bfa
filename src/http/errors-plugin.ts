import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { AppError, FieldValidationError } from '../errors.js';
import { fieldIssuesOf, RequestPartError, toFieldIssues } from './validation.js';

function sendAppError(reply: FastifyReply, err: AppError) {
  if (err.status === 401) reply.header('www-authenticate', 'Bearer');
  return reply.code(err.status).send({ detail: err.toDetail() });
}

/** The one place where every failure becomes an HTTP response; 5xx bodies never carry internals. */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError | Error, request: FastifyRequest, reply: FastifyReply) => {
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
      return reply.code(status).send({ detail: { error: 'bad_request', message: 'The request could not be read.' } });
    }
    request.log.error({ err: error }, 'unhandled error');
    return reply.code(500).send({ detail: { error: 'internal', message: 'Internal error; the outcome of a write is unknown, read before retrying.' } });
  });

  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({ detail: { error: 'not_found', message: `No route ${request.method} ${request.url.split('?')[0]}.` } }),
  );
}
