import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppContext } from '../../context.js';
import { devicePage, emergencyReceiptsSchema, receiptsQuery } from '../../domain/devices/receipt-schema.js';
import { emergencyReceipts, listOrgDevices } from '../../domain/devices/receipts.js';
import { listEmergencyEventsJson, listEventsJson } from '../../domain/events/feed.js';
import { emergencyEventsQuery, eventPage, listEventsQuery } from '../../domain/events/schema.js';
import { coveredOrgPage, listCoveredOrgs } from '../../domain/orgs/covered.js';
import { callerOf } from '../../edge/auth.js';
import { errorResponses } from '../error-schemas.js';
import { sendJsonText } from '../json-text.js';
import { emergencyPath, orgPath, pageQuery } from './params.js';

/** What happened after the 201: the event feed, the organizations a key covers, devices and receipts. */
export const feedRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (app) => {
    const r = app.withTypeProvider<ZodTypeProvider>();

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
        summary: "The organization's event stream after an offset, oldest first (permission: events:read).",
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
        summary: "One emergency's events in sequence order: its timeline (permission: events:read).",
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
        summary: "The organization's base stations by name, with presence and acknowledged offset (permission: events:read).",
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
        summary: 'Which base stations and webhook subscribers have each event of an emergency (permission: events:read).',
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
  };
