import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { FastifyBaseLogger, FastifyHttpOptions, FastifyRequest } from 'fastify';
import type { Config } from '../config.js';
import type { ClientAddresses } from '../edge/client-address.js';
import { DeferredChildLogger } from '../observability/deferred-logger.js';
import { loggerOptions } from '../observability/log-format.js';
import { clientErrorHandler, frameworkErrorHandler } from './framework-errors.js';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** A request as its log lines show it: the client address is the one the limits count (PROXY protocol and TRUST_PROXY applied). */
function requestForLogs(addresses: ClientAddresses) {
  return (request: FastifyRequest) => ({
    method: request.method,
    url: request.url,
    host: request.host,
    remoteAddress: addresses.of(request.raw),
    remotePort: request.socket?.remotePort,
  });
}

/** Fastify's options: logging, request ids, limits and the framework's own error answers. */
export function serverOptions(config: Config, addresses: ClientAddresses): FastifyHttpOptions<Server> {
  const silent = config.LOG_LEVEL === 'silent';
  const trust = addresses.trust;
  return {
    logger: silent ? false : { ...loggerOptions(config), serializers: { req: requestForLogs(addresses) } },
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
    // Slow clients: headers must arrive in HEADERS_TIMEOUT_MS, checked often enough that the limit holds to about a second.
    http: {
      headersTimeout: config.HEADERS_TIMEOUT_MS,
      requestTimeout: 30_000,
      connectionsCheckingInterval: Math.min(1_000, Math.max(50, Math.floor(config.HEADERS_TIMEOUT_MS / 4))),
    },
    // X-Forwarded-Proto/Host and request.ip from the proxies TRUST_PROXY names (the throttles use ClientAddresses, which adds Forwarded and the PROXY protocol).
    ...(trust ? { trustProxy: trust } : {}),
    // Above Node's header limit, so an emergency id of any length reaches its route (and is a 404).
    routerOptions: { maxParamLength: 16 * 1024 },
    clientErrorHandler,
    frameworkErrors: frameworkErrorHandler,
    keepAliveTimeout: 72_000,
    return503OnClosing: true,
  };
}
