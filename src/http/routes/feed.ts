import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppContext } from '../../context.js';
import { devicePage, emergencyReceiptsSchema, receiptsQuery } from '../../domain/devices/receipt-schema.js';
import { emergencyReceipts, listOrgDevices } from '../../domain/devices/receipts.js';
import { listEmergencyEventsJson, listEventsJson, streamStart } from '../../domain/events/feed.js';
import { emergencyEventsQuery, eventPage, listEventsQuery, streamQuery } from '../../domain/events/schema.js';
import { coveredOrgPage, listCoveredOrgs } from '../../domain/orgs/covered.js';
import { bearerToken, callerOf } from '../../edge/auth.js';
import { errorResponses } from '../error-schemas.js';
import { sendJsonText } from '../json-text.js';
import { emergencyPath, orgPath, pageQuery } from './params.js';

/** What happened after the 201: the event feed, the organizations a key covers, devices and receipts. */
export const feedRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (app) => {
    const r = app.withTypeProvider<ZodTypeProvider>();
    // Created with the application (src/app.ts), which ends every stream before the server closes.
    const streams = app.services.streams;

    r.get('/orgs', {
      schema: {
        operationId: 'listOrganizations',
        tags: ['organizations'],
        summary: 'List the organizations this key covers, by name (any valid key).',
        querystring: pageQuery,
        response: { 200: coveredOrgPage, ...errorResponses() },
      },
      handler: (req) => listCoveredOrgs(ctx, callerOf(req), req.query),
    });

    r.get('/orgs/:org_id/events', {
      schema: {
        operationId: 'listEvents',
        tags: ['events'],
        summary: "The organization's event stream after an offset, oldest first (permission: read).",
        description:
          'Each item carries the offset devices receive and the event envelope exactly as webhook subscribers receive it. Poll with ' +
          '`after` set to the last offset you processed (or follow `nextCursor` while it is non-null); `lastOffset` is the newest ' +
          'offset now. Events are kept at least 7 days (EVENT_RETENTION_DAYS); an `after` whose successors are gone is a 410 ' +
          '`events_expired` with `oldestOffset`.',
        params: orgPath,
        querystring: listEventsQuery,
        response: { 200: eventPage, ...errorResponses({ 410: 'events_expired: events after this offset are past the retention; body adds oldestOffset.' }) },
      },
      handler: async (req, reply) => sendJsonText(reply, await listEventsJson(ctx, callerOf(req), req.params.org_id, req.query)),
    });

    r.get('/orgs/:org_id/emergencies/:emergency_id/events', {
      schema: {
        operationId: 'listEmergencyEvents',
        tags: ['events'],
        summary: "One emergency's events in sequence order: its timeline (permission: read).",
        params: emergencyPath,
        querystring: emergencyEventsQuery,
        response: { 200: eventPage, ...errorResponses({ 404: 'emergency_not_found' }) },
      },
      handler: async (req, reply) =>
        sendJsonText(reply, await listEmergencyEventsJson(ctx, callerOf(req), req.params.org_id, req.params.emergency_id, req.query)),
    });

    r.get('/orgs/:org_id/devices', {
      schema: {
        operationId: 'listDevices',
        tags: ['devices'],
        summary: "The organization's base stations by name, with presence and acknowledged offset (permission: read).",
        params: orgPath,
        querystring: pageQuery,
        response: { 200: devicePage, ...errorResponses() },
      },
      handler: (req) => listOrgDevices(ctx, callerOf(req), req.params.org_id, req.query),
    });

    r.get('/orgs/:org_id/emergencies/:emergency_id/receipts', {
      schema: {
        operationId: 'getEmergencyReceipts',
        tags: ['devices'],
        summary: 'Which base stations and webhook subscribers have each event of an emergency (permission: read).',
        description:
          '`devices.targeted` counts the active devices that existed when the event was created, `devices.acknowledged` those that ' +
          'acknowledged it; `pending` lists those that have not. `webhooks` counts the subscriptions the event matched by delivery state. ' +
          'Events come in pages of `limit` (follow `nextCursor`); a page also stops early when it reaches 320 KiB, so no answer is ' +
          'larger than 1 MiB. Each event lists at most 10 devices, the pending ones first, then with `?detail=devices` the ' +
          'acknowledged ones, each by name; its `devices.nextCursor`, passed as `deviceCursor`, answers that event alone with its next ' +
          '`limit` devices. The counts always cover every targeted device.',
        params: emergencyPath,
        querystring: receiptsQuery,
        response: { 200: emergencyReceiptsSchema, ...errorResponses({ 404: 'emergency_not_found' }) },
      },
      handler: (req) => emergencyReceipts(ctx, callerOf(req), req.params.org_id, req.params.emergency_id, req.query),
    });

    r.get('/orgs/:org_id/stream', {
      schema: {
        operationId: 'streamEvents',
        tags: ['events'],
        summary: "The organization's events as they commit, as Server-Sent Events (permission: read).",
        description:
          'For browsers and other watchers: authenticate with the Authorization header (e.g. fetch() reading the body as a stream; ' +
          'EventSource cannot send it), so no key sits in a URL. Each event is `id: <offset>`, `event: <eventType>`, `data: <the ' +
          'envelope>`; a `: keep-alive` comment comes every 15 s. Without `after` (or Last-Event-ID) the stream starts with the next ' +
          'event; reconnect with `after=<last id>` to get what was missed, in order, with no gap and no duplicate.\n\n' +
          'A stream lives under the rules of its key: it ends (the body ends) within 2 s of the key being revoked, ' +
          'expiring or no longer covering the organization. A key holds at most `STREAMS_PER_KEY` streams at once per instance ' +
          '(default 20; the next is a 429 `too_many_streams`), and an instance at most `MAX_STREAMS` (the next is a 503 ' +
          '`unavailable`); both carry Retry-After. A client that does not read is disconnected once more than 1 MiB is queued ' +
          'for it, or once queued data has not moved for 30 s; it resumes with `after=<last id>` and loses nothing.',
        params: orgPath,
        querystring: streamQuery,
        response: {
          200: z.string().describe('text/event-stream: `id: <offset>` / `event: <eventType>` / `data: <envelope>` blocks.'),
          ...errorResponses({
            410: 'events_expired: events after this offset are past the retention; body adds oldestOffset.',
            429:
              'too_many_streams: this key already holds STREAMS_PER_KEY streams on this instance; close one before opening another. ' +
              'Also rate_limited when the per-key rate limit is exceeded. Both carry Retry-After.',
            503:
              'unavailable: this instance holds as many streams as it can (MAX_STREAMS, or its open-file limit); retry after the ' +
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
