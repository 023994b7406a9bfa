import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger, FastifyServerOptions } from 'fastify';
import type { Config } from '../config.js';
import { DeferredChildLogger } from '../observability/deferred-logger.js';
import { loggerOptions } from '../observability/log-format.js';
import { clientErrorHandler, frameworkErrorHandler } from './framework-errors.js';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Fastify's options: logging, request ids, limits and the framework's own error answers. */
export function serverOptions(config: Config): FastifyServerOptions {
  const silent = config.LOG_LEVEL === 'silent';
  return {
    logger: silent ? false : loggerOptions(config),
    bodyLimit: 1024 * 1024,
    genReqId: (req) => {
      const incoming = req.headers['x-request-id'];
      return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    },
    // Request loggers are created lazily; without a logger there is nothing to defer.
    ...(silent
      ? {}
      : {
          childLoggerFactory: (logger: FastifyBaseLogger, bindings: Record<string, unknown>, options: object) =>
            Object.keys(options).length > 0
              ? logger.child(bindings, options)
              : new DeferredChildLogger(logger as FastifyBaseLogger & { isLevelEnabled(level: string): boolean }, bindings),
        }),
    requestTimeout: 30_000,
    // Above Node's header limit, so an emergency id of any length reaches its route (and is a 404).
    routerOptions: { maxParamLength: 16 * 1024 },
    clientErrorHandler,
    frameworkErrors: frameworkErrorHandler,
    keepAliveTimeout: 72_000,
    return503OnClosing: true,
  };
}
