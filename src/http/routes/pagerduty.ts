import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppContext } from '../../context.js';
import type { Principal } from '../../domain/access/principal.js';
import { integrationKeyKind } from '../../domain/integrations/keys.js';
import {
  enqueuePagerDutyEvent,
  PAGERDUTY_BODY_BYTES,
  pagerDutyAccepted,
  pagerDutyEvent,
  pagerDutyInvalid,
  PagerDutyRefusal,
  pagerDutyThrottled,
} from '../../domain/integrations/pagerduty.js';
import { CachedKeyVerifier } from '../../domain/keys/verifier.js';
import type { KeyGate } from '../../edge/auth.js';
import { callerOf } from '../../edge/auth.js';
import { fieldIssuesOf, RequestPartError, toFieldIssues } from '../../edge/field-issues.js';
import { idempotencyHeaders, idempotentRoutes, writeOptionsOf } from '../../edge/idempotency.js';
import { enforceRateLimit, type RateDecision } from '../../edge/rate-limit.js';
import { AppError, type FieldIssue, FieldValidationError } from '../../errors.js';
import { errorResponse } from '../error-schemas.js';

const INVALID = 'Event object is invalid';
const THROTTLED = 'Requests for this service are arriving too quickly. Please retry later.';

const PAGERDUTY_EXAMPLE = {
  routing_key: 'enk_int_0123456789abcdef0123456789abcdef',
  event_action: 'trigger',
  dedup_key: 'control-room-disk',
  payload: {
    summary: 'Disk full on the control room server',
    timestamp: '2026-12-07T18:00:00.000+0000',
    source: 'control-room-1.example.com',
    severity: 'critical',
    component: 'disk',
    group: 'control-room',
    class: 'disk full',
    custom_details: { free: '0 B' },
  },
  links: [{ href: 'https://monitoring.example.com/disk', text: 'Disk dashboard' }],
  client: 'Example Monitoring',
  client_url: 'https://monitoring.example.com',
};

/** An event PagerDuty would refuse, in PagerDuty's words. */
class InvalidEvent extends Error {
  constructor(readonly errors: string[]) {
    super(INVALID);
  }
}

/** A field issue as PagerDuty words it: `'payload.severity' is invalid (...)`. */
const issueText = (issue: FieldIssue) => {
  const path = issue.loc.slice(1).join('.');
  return path ? `'${path}' ${/^(is |must )/.test(issue.msg) ? issue.msg : `is invalid (${issue.msg})`}` : `Event ${issue.msg}`;
};

/** PagerDuty's answers to what it refuses: 400 `invalid event` and 429 `throttle exceeded`; server failures keep the service's own. */
function pagerDutyError(error: FastifyError | Error, _request: FastifyRequest, reply: FastifyReply) {
  const invalid = (errors: string[]) => reply.code(400).send({ status: 'invalid event', message: INVALID, errors });
  if (error instanceof InvalidEvent || error instanceof PagerDutyRefusal) return invalid(error.errors);
  if (error instanceof RequestPartError) return invalid(fieldIssuesOf(error).map(issueText));
  if (error instanceof FieldValidationError) return invalid(error.issues.map(issueText));
  if (error instanceof z.ZodError) return invalid(toFieldIssues('body', error.issues).map(issueText));
  if (error instanceof AppError) {
    if (error.status === 429) {
      if (error.retryAfterSeconds !== undefined) reply.header('retry-after', error.retryAfterSeconds);
      return reply.code(429).send({ status: 'throttle exceeded', message: THROTTLED });
    }
    if (error.status === 401 || error.status === 403 || error.status === 404) return invalid(['Invalid routing key']);
    if (error.status < 500) return reply.code(error.status).send({ status: 'invalid event', message: error.message, errors: [error.code] });
    throw error;
  }
  const status = (error as FastifyError).statusCode;
  if (status === 413) return invalid([`Event is larger than ${PAGERDUTY_BODY_BYTES / 1024} KB`]);
  if (status === 415) return invalid(['Content-Type must be application/json']);
  if (status !== undefined && status >= 400 && status < 500) return invalid(['Event body is not valid JSON']);
  // Everything else (a database outage, a fault) is answered by the service's own handler: 503 with Retry-After, or 500.
  throw error;
}

/**
 * preHandler: the body's routing_key must be an active integration key, with the failed-authentication throttle and the
 * per-key rate limit of every other key; the caller is then the integration, in the key's org.
 */
function requireRoutingKey(gate: KeyGate, keys: CachedKeyVerifier<unknown>) {
  return (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void): void => {
    const token = (request.body as { routing_key: string }).routing_key;
    const address = gate.addresses.of(request.raw);
    const refuse = (decision: RateDecision) => {
      if (!decision.allowed) reply.header('retry-after', decision.retryAfterSeconds);
      return decision.allowed ? new InvalidEvent(['Invalid routing key']) : new AppError('rate_limited', THROTTLED);
    };
    const admit = (principal: Principal | null) => {
      if (principal?.kind !== 'api_key') return done(refuse(gate.authFailures.failed(address, keys.idOf(token))));
      try {
        enforceRateLimit(gate.rateLimiter, principal.keyId, reply);
      } catch (err) {
        return done(err as Error);
      }
      gate.intake?.authenticated(request.raw.socket);
      request.principal = principal;
      done();
    };
    const cached = keys.matches(token) ? keys.authenticateCached(token) : null;
    if (cached !== undefined) {
      admit(cached);
      return;
    }
    gate.authFailures.lookupRefusal(address, keys.idOf(token)!, keys.knowsKeyIdOf(token)).then((refusal) => {
      if (refusal) done(refuse(refusal));
      else keys.authenticate(token).then(admit, done);
    }, done);
  };
}

/** PagerDuty Events API v2 (extensions §12): any tool that speaks it sends here by changing its URL. No Authorization header. */
export const pagerDutyRoutes =
  (ctx: AppContext, gate: KeyGate): FastifyPluginAsync =>
  async (app) => {
    const keys = new CachedKeyVerifier(integrationKeyKind(ctx));
    app.setErrorHandler(pagerDutyError);
    app.addHook('preHandler', requireRoutingKey(gate, keys as CachedKeyVerifier<unknown>));
    idempotentRoutes(app, ctx.db);
    const r = app.withTypeProvider<ZodTypeProvider>();
    r.post('/integrations/pagerduty/v2/enqueue', {
      bodyLimit: PAGERDUTY_BODY_BYTES,
      config: { idempotentAnswer: (answer) => ({ status: 202, body: answer }) },
      schema: {
        headers: idempotencyHeaders,
        operationId: 'enqueuePagerDutyEvent',
        // No Authorization header, as in PagerDuty: the routing key is in the body.
        security: [],
        tags: ['integrations'],
        summary: 'PagerDuty Events API v2: send an alert event (an integration key as routing_key).',
        description:
          "PagerDuty's https://events.pagerduty.com/v2/enqueue, with an integration key of the organization (enk_int_..., minted " +
          'with the admin API or `emergency-api admin integration-key create`) as routing_key and no Authorization header. trigger ' +
          'declares an emergency (externalId pd:<dedup_key>, description payload.summary, source payload.source, occurredAt ' +
          "payload.timestamp, category by the organization's mapping of payload.severity, the rest in metadata.pagerduty); a " +
          'trigger whose dedup_key has an open emergency is posted to it as a message; acknowledge is posted as a message; ' +
          'resolve resolves it. acknowledge and resolve without an open emergency are dropped. Answers as PagerDuty does. ' +
          `At most ${PAGERDUTY_BODY_BYTES / 1024} KB an event.`,
        body: pagerDutyEvent.meta({ examples: [PAGERDUTY_EXAMPLE] }),
        response: {
          202: pagerDutyAccepted,
          400: pagerDutyInvalid.describe('invalid event: a malformed body, a missing or bad field, an unknown or revoked routing key.'),
          409: pagerDutyInvalid.describe('idempotency_key_in_use: a request with this Idempotency-Key is still running.'),
          422: pagerDutyInvalid.describe('idempotency_key_reused: this Idempotency-Key was used for another event.'),
          429: pagerDutyThrottled.describe(
            'throttle exceeded: the rate limit of the integration key, or failed routing keys from this address; see Retry-After.',
          ),
          500: errorResponse.describe('internal: the outcome is unknown; send the event again (with the same dedup_key it changes nothing twice).'),
          503: errorResponse.describe('unavailable: the database is unavailable; retry after Retry-After.'),
        },
      },
      handler: async (req, reply) => reply.code(202).send(await enqueuePagerDutyEvent(ctx, callerOf(req), req.body, writeOptionsOf(req))),
    });
  };
