import { eventEnvelope } from '../domain/events/schema.js';
import { PING_EVENT_TYPE } from '../domain/webhooks/schema.js';
import {
  DELIVERY_COMPLETED,
  DELIVERY_OVERDUE,
  DRILL_COMPLETED,
  EMERGENCY_CATEGORIZED,
  EMERGENCY_DECLARED,
  EMERGENCY_RESOLVED,
  EVENT_TYPES,
  type EventType,
} from '../log/event-types.js';

/**
 * What the service sends rather than answers: webhook deliveries (OpenAPI 3.1 `webhooks`) and the
 * device stream's frames, for the public document. The envelope is the EventEnvelope component, the
 * same one the event feed returns.
 */

// biome-ignore lint/suspicious/noExplicitAny: OpenAPI fragments are walked generically (checked by the lint test)
type Json = Record<string, any>;

/** The envelope's schema, registered (and so listed among the components) by the event feed's schemas. */
const ENVELOPE = { $ref: `#/components/schemas/${eventEnvelope.meta()?.id}` };

const WEBHOOK_HEADERS: Json = {
  'webhook-id': { description: 'The eventId: the same for every attempt of one event (deduplicate on it).', required: true, schema: { type: 'string' } },
  'webhook-timestamp': { description: 'Unix seconds when this attempt was signed.', required: true, schema: { type: 'string' } },
  'webhook-signature': {
    description: 'Standard Webhooks signature(s), `v1,<base64 HMAC-SHA256>` space-separated (two during a secret rotation).',
    required: true,
    schema: { type: 'string' },
  },
};

/** What an event of each type tells; a type added to the list without a description here is a type error. */
const WHAT: Record<EventType, string> = {
  [EMERGENCY_DECLARED]: 'An emergency was declared.',
  [EMERGENCY_CATEGORIZED]: 'An emergency was moved to another category.',
  [EMERGENCY_RESOLVED]: 'An emergency was resolved.',
  [DELIVERY_OVERDUE]: 'Base stations have not acknowledged an emergency event by its acknowledgement deadline.',
  [DELIVERY_COMPLETED]: 'Every base station an overdue event targets has now acknowledged it.',
  [DRILL_COMPLETED]: "A drill's run ended: its exercise emergency was resolved and its report taken.",
};

const EMERGENCY_ID = '0195f3a8-0000-7000-8000-000000000002';

/** What `data` holds, by event type. */
const DATA: Partial<Record<EventType | 'change', { text: string; example: (type: string) => Json }>> = {
  change: {
    text: '`data.emergency` is the Emergency after the change; `data.exercise` is true for an exercise (a drill).',
    example: (type) => ({ emergency: { emergencyId: EMERGENCY_ID, status: type.split('.')[1], exercise: false }, exercise: false }),
  },
  [DELIVERY_OVERDUE]: {
    text:
      "Appended once per watched event (declared, categorized or resolved) when its deadline (the organization's or the " +
      "category's `ackDeadlineSeconds`) passes with a targeted base station silent. `data` (DeliveryOverdueData) names the " +
      'watched event by `eventOffset` and `eventType` and lists the silent stations (at most 100, `silentDevicesTotal` counts ' +
      'all): escalate from it (page someone, call the site). Only subscriptions without an event-type filter, or that list it, get it.',
    example: () => ({
      emergencyId: EMERGENCY_ID,
      eventOffset: 41,
      eventType: 'emergency.declared',
      deadlineSeconds: 30,
      targeted: 3,
      acknowledged: 2,
      silentDevices: [{ deviceId: '0195f3a8-0000-7000-8000-000000000003', name: 'Gym base station', online: false, lastSeenAt: '2026-11-21T16:02:11.000Z' }],
      silentDevicesTotal: 1,
      exercise: false,
    }),
  },
  [DELIVERY_COMPLETED]: {
    text:
      'Appended once after an emergency.delivery_overdue, when every station the watched event targets has acknowledged it: ' +
      'stop escalating. `data` (DeliveryCompletedData) carries `completedAfterMs`, from the overdue event to the last acknowledgement.',
    example: () => ({ emergencyId: EMERGENCY_ID, eventOffset: 41, eventType: 'emergency.declared', targeted: 3, completedAfterMs: 48210, exercise: false }),
  },
  [DRILL_COMPLETED]: {
    text:
      "Appended to a drill's exercise emergency after its emergency.resolved, once per run. `data` (DrillCompletedData) is the run's " +
      'report, as GET /api/admin/v1/orgs/{org_id}/drills/{drill_id}/runs lists it: targeted and acknowledging base stations, ' +
      'acknowledgement times (p50, p95, max in ms), the silent stations (at most 100) and the webhook deliveries of the alert; ' +
      '`passed` is true when every targeted station acknowledged. `exercise` is always true. Only subscriptions without an ' +
      'event-type filter, or that list it, get it.',
    example: () => ({
      runId: '0195f3a8-0000-7000-8000-000000000005',
      drillId: '0195f3a8-0000-7000-8000-000000000004',
      emergencyId: EMERGENCY_ID,
      scheduledFor: '2026-11-02T09:00:00.000Z',
      startedAt: '2026-11-02T09:00:00.412Z',
      completedAt: '2026-11-02T09:01:30.420Z',
      status: 'completed',
      targeted: 3,
      acknowledged: 2,
      ackMs: { p50: 180, p95: 2410, max: 2410 },
      silentDevices: [{ deviceId: '0195f3a8-0000-7000-8000-000000000003', name: 'Gym base station', online: false, lastSeenAt: '2026-11-01T16:02:11.000Z' }],
      silentDevicesTotal: 1,
      webhooks: { delivered: 1, failed: 0, pending: 0 },
      passed: false,
      exercise: true,
    }),
  },
};

/** A webhook as OpenAPI 3.1 describes one: a POST the service sends, signed per Standard Webhooks, with its body. */
function webhookPost(op: { operationId: string; summary: string; description: string; schema: Json; example: Json; responses: Json }): Json {
  return {
    post: {
      operationId: op.operationId,
      summary: op.summary,
      description: op.description,
      tags: ['webhooks'],
      security: [],
      parameters: Object.entries(WEBHOOK_HEADERS).map(([name, h]) => ({ in: 'header', name, ...h })),
      requestBody: { required: true, content: { 'application/json': { schema: op.schema, example: op.example } } },
      responses: op.responses,
    },
  };
}

export function describeWebhooks(components: Json): Json {
  components.schemas ??= {};
  const webhooks: Json = {};
  for (const type of EVENT_TYPES) {
    const data = DATA[type] ?? DATA.change!;
    webhooks[type] = webhookPost({
      operationId: `webhook_${type.replace('.', '_')}`,
      summary: `${type}: ${WHAT[type]}`,
      description:
        `${WHAT[type]} POSTed to every subscription that matches, signed per Standard Webhooks with the subscription's secret; ` +
        `${data.text} Answer 2xx within the timeout; anything else is retried on the retry schedule.`,
      schema: ENVELOPE,
      example: {
        eventId: '0195f3a8-7c2e-7a41-9d3b-5e8f1c2a4b6d',
        eventType: type,
        apiVersion: '1.0.0',
        createdAt: '2026-11-21T17:44:29.123Z',
        orgId: '0195f3a8-0000-7000-8000-000000000001',
        emergencyId: EMERGENCY_ID,
        sequence: type === DRILL_COMPLETED ? 4 : type === DELIVERY_COMPLETED ? 3 : type === DELIVERY_OVERDUE ? 2 : 1,
        data: data.example(type),
      },
      responses: {
        '200': { description: 'Received (any 2xx).' },
        '410': { description: 'Gone: the subscription is disabled at once.' },
        '500': { description: 'Any other answer, or none within the timeout: retried.' },
      },
    });
  }
  webhooks[PING_EVENT_TYPE] = describePing(components);
  return webhooks;
}

/** `webhook.ping`: sent only by the admin API's test of a subscription, so it is not an event of the org's log and has no envelope. */
function describePing(components: Json): Json {
  components.schemas.WebhookPing = {
    type: 'object',
    description: 'The test delivery of a subscription: not an event of any organization (no orgId, emergencyId or sequence).',
    required: ['eventId', 'eventType', 'apiVersion', 'createdAt', 'data'],
    additionalProperties: false,
    properties: {
      eventId: { type: 'string', format: 'uuid', description: 'Unique to this ping; also the webhook-id header.' },
      eventType: { const: PING_EVENT_TYPE },
      apiVersion: { type: 'string' },
      createdAt: { type: 'string', format: 'date-time' },
      sandbox: { const: true, description: 'Present on a sandbox instance.' },
      data: {
        type: 'object',
        required: ['subscriptionId'],
        additionalProperties: false,
        properties: { subscriptionId: { type: 'string', format: 'uuid', description: 'The subscription tested.' } },
      },
    },
  };
  return webhookPost({
    operationId: 'webhook_webhook_ping',
    summary: `${PING_EVENT_TYPE}: a test delivery, sent when an admin tests the subscription (POST /webhooks/{id}/test of the admin API).`,
    description:
      "POSTed once to the subscription's URL, whatever its status and event-type filter, signed per Standard Webhooks with its " +
      'secret like any delivery. Not retried: the answer (status, latency, error) is what the test reports, and it is kept in ' +
      "the subscription's delivery log.",
    schema: { $ref: '#/components/schemas/WebhookPing' },
    example: {
      eventId: '0195f3a8-7c2e-7a41-9d3b-5e8f1c2a4b6e',
      eventType: PING_EVENT_TYPE,
      apiVersion: '1.0.0',
      createdAt: '2026-11-21T17:44:29.123Z',
      data: { subscriptionId: '0195f3a8-0000-7000-8000-000000000004' },
    },
    responses: {
      '200': { description: 'Received (any 2xx): the test reports succeeded.' },
      default: { description: 'Any other answer, or none within the timeout: the test reports failed; nothing is retried.' },
    },
  });
}

/** The WebSocket upgrade of base stations, with its frames as schemas. */
export function describeDeviceStream(components: Json): Json {
  components.schemas ??= {};
  components.securitySchemes = {
    ...components.securitySchemes,
    device: { type: 'http', scheme: 'bearer', description: 'A device token: enk_dev_ + 8 hex + 64 hex' },
  };
  components.schemas.DeviceEventFrame = {
    type: 'object',
    description:
      'Server → device: one event, in offset order, no gap. With an acknowledgement deadline, an event the device has not ' +
      'acknowledged half-way to it is sent again (same offset, same bytes): ignore an offset already handled, but ack it again.',
    required: ['type', 'offset', 'event'],
    properties: { type: { const: 'event' }, offset: { type: 'integer', description: "The org's stream offset: ack it." }, event: ENVELOPE },
  };
  components.schemas.DevicePingFrame = {
    type: 'object',
    description: 'Server → device, every 25 s.',
    required: ['type'],
    properties: { type: { const: 'ping' } },
  };
  components.schemas.DeviceAckFrame = {
    type: 'object',
    description: 'Device → server: it has every event up to `offset`.',
    required: ['type', 'offset'],
    properties: { type: { const: 'ack' }, offset: { type: 'integer' } },
  };
  return {
    'device-stream-frame': {
      post: {
        operationId: 'deviceStreamFrame',
        tags: ['devices'],
        summary: "A frame of a base station's WebSocket (GET /devices/v1/stream): every event of its organization, live, after a replay.",
        description:
          'Not an HTTP request: each message the service writes to a base station connected to `GET /devices/v1/stream` (a WebSocket ' +
          'upgrade with `Authorization: Bearer enk_dev_...`, optional `?after=<offset>` to replay what was missed, kept at least 7 days). ' +
          'Frames are JSON text: DeviceEventFrame (in offset order, no gap; an event not acknowledged half-way to its acknowledgement ' +
          'deadline is sent again) and DevicePingFrame (every 25 s). The device ' +
          'answers with DeviceAckFrame when it has every event up to an offset. Close codes: 4401 revoked (do not reconnect), 4408 silent, ' +
          '4429 too slow (reconnect with after), 4409 replaced by a newer connection, 1001 going away, 1007 invalid frame.',
        security: [{ device: [] }],
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: { oneOf: [{ $ref: '#/components/schemas/DeviceEventFrame' }, { $ref: '#/components/schemas/DevicePingFrame' }] },
              example: { type: 'ping' },
            },
          },
        },
        responses: {
          '200': {
            description: 'The device acknowledges (optional, cumulative): it has every event up to `offset`.',
            content: { 'application/json': { schema: { $ref: '#/components/schemas/DeviceAckFrame' }, example: { type: 'ack', offset: 42 } } },
          },
        },
      },
    },
  };
}
