import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppContext } from '../../context.js';
import { streamStart } from '../../domain/events/feed.js';
import { streamQuery } from '../../domain/events/schema.js';
import { tenantQuotaOf } from '../../domain/tenancy/connection-quotas.js';
import { bearerToken, callerOf } from '../../edge/auth.js';
import { errorResponses } from '../error-schemas.js';
import { eventStreamResponse } from '../media-responses.js';
import { orgPath } from './params.js';

/** An organization's events as they commit (SSE): served by the processes that hold live connections (src/roles.ts). */
export const streamRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (app) => {
    const r = app.withTypeProvider<ZodTypeProvider>();
    // Created with the application (src/app.ts), which ends every stream before the server closes.
    const streams = app.services.streams;

    r.get('/orgs/:org_id/stream', {
      schema: {
        operationId: 'streamEvents',
        tags: ['events'],
        summary: "The organization's events as they commit, as Server-Sent Events (permission: events:read).",
        description:
          'For browsers and other watchers: authenticate with the Authorization header (e.g. fetch() reading the body as a stream; ' +
          'EventSource cannot send it), so no key sits in a URL. Each event is `id: <offset>`, `event: <eventType>`, `data: <the ' +
          'envelope>`; a `: keep-alive` comment comes every 15 s. Without `after` (or Last-Event-ID) the stream starts with the next ' +
          'event; reconnect with `after=<last id>` to get what was missed, in order, with no gap and no duplicate.\n\n' +
          'A stream lives under the rules of its key: it ends (the body ends) within 2 s of the key being revoked, ' +
          'expiring or no longer covering the organization. A key holds at most `STREAMS_PER_KEY` streams at once per instance ' +
          '(default 20; the next is a 429 `too_many_streams`), an organization at most `STREAMS_PER_ORG` and a partner ' +
          '`STREAMS_PER_PARTNER` per instance unless an admin set their own quotas (429 `too_many_streams`), and an instance at most ' +
          '`MAX_STREAMS` (the next is a 503 `unavailable`; also when the organization or its partner holds its share of the instance, ' +
          '`TENANT_CONNECTION_SHARE`); all carry Retry-After. A client that does not read is disconnected once more than 1 MiB is queued ' +
          'for it, or once queued data has not moved for 30 s; it resumes with `after=<last id>` and loses nothing.',
        params: orgPath,
        querystring: streamQuery,
        response: {
          200: eventStreamResponse('`id: <offset>` / `event: <eventType>` / `data: <envelope>` blocks, and `: keep-alive` comments.'),
          ...errorResponses({
            410: 'events_expired: events after this offset are past the retention; body adds oldestOffset.',
            429:
              'too_many_streams: this key already holds STREAMS_PER_KEY streams on this instance, or the organization or its partner ' +
              'its stream quota (STREAMS_PER_ORG, STREAMS_PER_PARTNER or its own); close one before opening another. ' +
              'Also rate_limited when the per-key rate limit is exceeded. Both carry Retry-After.',
            503:
              'unavailable: this instance holds as many streams as it can (MAX_STREAMS, or its open-file limit), or as many of this ' +
              "organization's or its partner's as one tenant may (TENANT_CONNECTION_SHARE); retry after the " +
              'seconds of Retry-After. Also when the database is unavailable or the server is shutting down.',
          }),
        },
      },
      handler: async (req, reply) => {
        const lastEventId = Number(req.headers['last-event-id']);
        const after = req.query.after ?? (Number.isSafeInteger(lastEventId) && lastEventId >= 0 ? lastEventId : undefined);
        const caller = callerOf(req);
        // Counted before anything is read, so concurrent opens of one key cannot slip past its limit.
        const admission = streams.reserve(bearerToken(req.headers.authorization)!);
        if (!admission.admitted) {
          reply.header('retry-after', admission.retryAfterSeconds);
          throw admission.error;
        }
        let start: Awaited<ReturnType<typeof streamStart>>;
        try {
          start = await streamStart(ctx, caller, req.params.org_id, after);
          // Counted against the org's and partner's quotas only once the key may read the org: another tenant's id is a 403, not a 429.
          const quota = await tenantQuotaOf(ctx, 'streams', start.orgId);
          const overQuota = quota && streams.charge(admission.slot, quota);
          if (overQuota) {
            reply.header('retry-after', overQuota.retryAfterSeconds);
            throw overQuota.error;
          }
        } catch (err) {
          streams.release(admission.slot);
          throw err;
        }
        reply.hijack();
        reply.raw.writeHead(200, {
          ...(reply.getHeaders() as Record<string, string>),
          'content-type': 'text/event-stream; charset=utf-8',
          'cache-control': 'no-cache, no-transform',
          'x-accel-buffering': 'no',
          connection: 'keep-alive',
        });
        // Tells the client where it starts, so even a quiet stream can be resumed exactly.
        reply.raw.write(`: after ${start.after}\n\n`);
        streams.watch(admission.slot, start.orgId, start.after, reply.raw);
      },
    });
  };
