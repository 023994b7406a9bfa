import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppContext } from '../../context.js';
import { capReader } from '../../domain/cap/cap-schema.js';
import { capFeedDocument, emergencyCapDocument, FEED_MAX_ENTRIES, ingestCapAlert } from '../../domain/cap/service.js';
import { emergencyRecord } from '../../domain/emergencies/schema.js';
import { callerOf } from '../../edge/auth.js';
import { idempotencyHeaders, writeOptionsOf } from '../../edge/idempotency.js';
import { AppError, fieldError } from '../../errors.js';
import { errorResponses } from '../error-schemas.js';
import { API_PREFIX } from '../prefixes.js';
import { CAP_ALERT_EXAMPLE, CAP_FEED_EXAMPLE, CAP_INGEST_EXAMPLE } from './cap-examples.js';
import { emergencyPath, orgPath } from './params.js';

/** The largest CAP alert accepted (extensions §8); a larger body is a 413 before it is read. */
export const CAP_BODY_LIMIT = 256 * 1024;

const CAP_MEDIA_TYPES = ['application/cap+xml', 'application/xml'];

/** A response that is XML, not JSON: the OpenAPI document shows it under its own media type, with an example. */
function xmlResponse(mediaType: string, description: string, example: string) {
  return z
    .string()
    .describe(description)
    .meta({ content: { [mediaType]: { schema: { type: 'string' }, example } } });
}

const capBody = z
  .string()
  .describe(
    `A CAP 1.2 alert (urn:oasis:names:tc:emergency:cap:1.2), UTF-8, at most ${CAP_BODY_LIMIT / 1024} KiB, valid by the official schema, ` +
      'with no DOCTYPE or entity declaration and no element nested deeper than 32 levels.',
  )
  .meta({ examples: [CAP_INGEST_EXAMPLE] });

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The links of the Atom feed: path-absolute references, which a consumer resolves against the feed's own URL, so they stay right
 * behind a proxy or a TLS terminator that the service cannot see.
 */
function linksOf(orgId: string) {
  const base = `${API_PREFIX}/orgs/${orgId.toLowerCase()}`;
  return { feed: `${base}/cap/feed`, emergencies: `${base}/emergencies` };
}

/** CAP 1.2 (extensions §8): each emergency as a CAP alert, the org's Atom feed of them, and alerts of other systems ingested. */
export const capRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (app) => {
    // libxml2 and the schema load now, so an installation without them fails at start rather than on the first alert.
    await capReader();
    // These routes take XML alone (this plugin's parsers only): the body arrives as text, checked to be UTF-8.
    app.removeAllContentTypeParsers();
    app.addContentTypeParser(CAP_MEDIA_TYPES, { parseAs: 'buffer', bodyLimit: CAP_BODY_LIMIT }, (_req, body, done) => {
      let text: string;
      try {
        text = utf8.decode(body as Buffer);
      } catch {
        done(fieldError(['body'], 'The body is not UTF-8 text.', 'xml_invalid'));
        return;
      }
      done(null, text);
    });
    app.addContentTypeParser('*', (_req, _payload, done) => {
      done(new AppError('unsupported_media_type', 'Send the CAP alert as Content-Type: application/cap+xml (or application/xml).'));
    });
    const r = app.withTypeProvider<ZodTypeProvider>();

    r.get('/orgs/:org_id/emergencies/:emergency_id/cap', {
      schema: {
        operationId: 'getEmergencyCap',
        tags: ['cap'],
        summary: "The emergency's latest state as one CAP 1.2 alert (permission: emergencies:read).",
        description:
          'msgType Alert (declared), Update (re-categorized) or Cancel (resolved), status Actual, scope Private. Each transition is one ' +
          'message: identifier `<emergencyId>.<sequence>` (the declare is `.1`), sender `urn:uuid:<orgId>`, `references` naming the ' +
          "earlier messages. The info's category, severity and area follow the mapping of docs/cap.md. An emergency that came from " +
          'an ingested CAP alert is relayed instead: its latest ingested message as it was sent (every alert element and info block), ' +
          'with only identifier, sender and sent re-issued and `references` naming the original, what it referenced and every ' +
          'ingested message. Valid by the official CAP 1.2 schema.',
        params: emergencyPath,
        response: {
          200: xmlResponse('application/cap+xml', 'The CAP alert.', CAP_ALERT_EXAMPLE),
          ...errorResponses({ 404: 'emergency_not_found' }),
        },
      },
      handler: async (req, reply) => {
        const xml = await emergencyCapDocument(ctx, callerOf(req), req.params.org_id, req.params.emergency_id);
        return reply.type('application/cap+xml; charset=utf-8').send(xml);
      },
    });

    r.get('/orgs/:org_id/cap/feed', {
      schema: {
        operationId: 'getCapFeed',
        tags: ['cap'],
        summary: "The organization's CAP alerts as an Atom 1.0 feed (permission: emergencies:read).",
        description:
          `One entry per open emergency and per emergency resolved in the last 24 h, newest occurredAt first, at most ${FEED_MAX_ENTRIES} ` +
          "entries (the newest). Each entry's id is `urn:uuid:<emergencyId>`, its `updated` when its latest alert was sent; it links " +
          'to the alert (rel alternate, application/cap+xml; links are path-absolute, resolved against the feed URL) and carries it ' +
          'as its content. Point a CAP aggregator at this URL with the key in the Authorization header.',
        params: orgPath,
        response: {
          200: xmlResponse('application/atom+xml', 'The Atom feed.', CAP_FEED_EXAMPLE),
          ...errorResponses(),
        },
      },
      handler: async (req, reply) => {
        const xml = await capFeedDocument(ctx, callerOf(req), req.params.org_id, linksOf(req.params.org_id));
        // The feed is kept encoded (see capFeedDocument): its bytes go out as they are.
        return reply.type('application/atom+xml; charset=utf-8').send(xml as never);
      },
    });

    r.post('/orgs/:org_id/cap', {
      bodyLimit: CAP_BODY_LIMIT,
      config: {
        // Declared (201) and re-categorized (200) answer the emergency; a resolve answers 201, or nothing to store when it was
        // already resolved (as for REST).
        idempotentAnswer: (value) => {
          if (value !== null && typeof value === 'object' && 'created' in value) {
            const { emergency, created } = value as { emergency: unknown; created: boolean };
            return created ? { status: 201, body: emergency } : null;
          }
          return { status: (value as { status?: string }).status === 'declared' ? 201 : 200, body: value };
        },
      },
      schema: {
        headers: idempotencyHeaders,
        operationId: 'ingestCapAlert',
        tags: ['cap'],
        summary: "Ingest another system's CAP 1.2 alert (permission: emergencies:write).",
        description:
          'Alert → declares an emergency (201) with externalId `sender,identifier` (a repeat is a 409 external_id_conflict with ' +
          "emergencyId), source `cap`, occurredAt the alert's `sent`, description from the info, location from the first area " +
          "(a circle's center, else a polygon's centroid), declaredBy from senderName. Update → re-categorizes (200) and Cancel → " +
          'resolves (201, or 200 when already resolved) the emergency its `references` name (an ingested Alert by sender,identifier, ' +
          "or an alert of this service). The category is the organization's mapping of the info's `event` (admin API " +
          '`/orgs/{org_id}/cap-mappings`, case-insensitive), else Uncategorized.\n\n' +
          'Refused with 422 (loc ["body"], the reason in msg): a DOCTYPE or entity declaration (`xml_doctype_forbidden`, never ' +
          'parsed), nesting deeper than 32 (`too_deep`), not well-formed or not UTF-8 (`xml_invalid`), not valid by the CAP 1.2 ' +
          'schema (`cap_invalid`), status System or Draft (`cap_status_unsupported`; Exercise and Test declare an exercise), msgType Ack or Error ' +
          '(`cap_msgtype_unsupported`), an Update or Cancel without references (`cap_references_missing`).',
        consumes: CAP_MEDIA_TYPES,
        params: orgPath,
        body: capBody,
        response: {
          201: emergencyRecord.describe('Declared (Alert) or resolved (Cancel).'),
          200: emergencyRecord.describe('Re-categorized (Update), or already resolved (Cancel).'),
          ...errorResponses({
            404: 'emergency_not_found: no emergency of the organization is named by the references of an Update or Cancel.',
            409:
              'external_id_conflict: an Alert with this sender and identifier was ingested already; body adds emergencyId. ' +
              'emergency_resolved: an Update of a resolved emergency. idempotency_key_in_use: a request with this Idempotency-Key is still running.',
            413: `payload_too_large: the body exceeds ${CAP_BODY_LIMIT / 1024} KiB.`,
            415: 'unsupported_media_type: the body is not application/cap+xml or application/xml.',
          }),
        },
      },
      handler: async (req, reply) => {
        const { emergency, status } = await ingestCapAlert(ctx, callerOf(req), req.params.org_id, req.body, writeOptionsOf(req));
        return reply.code(status).send(emergency);
      },
    });
  };
