/**
 * A program outside the repository that uses the installed package @emergency-api/client, as a customer
 * would: it is copied into an empty project, type-checked there with `strict`, and run against a live
 * server (test/client/package.test.ts). It imports nothing but the package and Node's built-ins, and
 * prints what it saw as one JSON line for the test to check.
 *
 * Environment: EMERGENCY_API_URL (the service's origin), EMERGENCY_API_KEY (an org key),
 * EMERGENCY_ADMIN_KEY (an instance admin key), ORG_ID.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  connectDevice,
  createAdminClient,
  createClient,
  type Emergency,
  type EmergencyEvent,
  errorCode,
  type HTTPValidationError,
  isValidationError,
  type PublicClient,
  verifyWebhook,
  WebhookVerificationError,
} from '@emergency-api/client';

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

const baseUrl = required('EMERGENCY_API_URL');
const orgId = required('ORG_ID');
const api: PublicClient = createClient({ baseUrl, apiKey: required('EMERGENCY_API_KEY') });
const admin = createAdminClient({ baseUrl, adminKey: required('EMERGENCY_ADMIN_KEY') });

/** Polls `check` until it returns a value; the deadline only keeps a broken run from hanging. */
async function waitFor<T>(what: string, check: () => T | undefined): Promise<T> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const value = check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

async function declare(client: PublicClient, description: string): Promise<Emergency> {
  const { data, error, response } = await client.POST('/orgs/{org_id}/emergencies', {
    params: { path: { org_id: orgId }, header: { 'idempotency-key': crypto.randomUUID() } },
    body: { categoryName: 'Fire', description },
  });
  if (!data) throw new Error(`declare answered ${response.status} ${errorCode(error)}`);
  return data;
}

// A webhook receiver: keeps each request's raw body and headers, as a real endpoint must for verification.
const received: { body: string; headers: IncomingHttpHeaders }[] = [];
const receiver = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    received.push({ body: Buffer.concat(chunks).toString('utf8'), headers: req.headers });
    res.writeHead(204).end();
  });
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;

const webhook = await admin.POST('/webhooks', { body: { url: receiverUrl, subject: { type: 'org', id: orgId }, eventTypes: ['emergency.declared'] } });
const secret = webhook.data?.secret;
if (!secret) throw new Error(`creating the webhook answered ${webhook.response.status} ${errorCode(webhook.error)}`);
const device = await admin.POST('/orgs/{org_id}/devices', { params: { path: { org_id: orgId } }, body: { name: 'Lobby station' } });
// One device in the body gives one device back (a `devices` list gives `items`).
const token = device.data && !('items' in device.data) ? device.data.token : undefined;
if (!token) throw new Error(`creating the device answered ${device.response.status} ${errorCode(device.error)}`);

// The base station: without `after` it receives the events committed from its connection on.
const streamed: { offset: number; event: EmergencyEvent }[] = [];
let connected = false;
const stream = connectDevice({
  baseUrl,
  token,
  onEvent: (event, { offset }) => {
    streamed.push({ offset, event });
  },
  onStatus: (status) => {
    if (status.type === 'connected') connected = true;
  },
});
await waitFor('the device stream to connect', () => (connected ? true : undefined));

const declared = await declare(api, 'Smoke on floor 2');
const got = await api.GET('/orgs/{org_id}/emergencies/{emergency_id}', { params: { path: { org_id: orgId, emergency_id: declared.emergencyId } } });
if (!got.data) throw new Error(`reading the emergency back answered ${got.response.status}`);
const readBack: Emergency = got.data;

const invalid = await api.POST('/orgs/{org_id}/emergencies', { params: { path: { org_id: orgId } }, body: { categoryName: 'No such category' } });
if (!isValidationError(invalid.error)) throw new Error(`expected a validation error, got ${invalid.response.status} ${JSON.stringify(invalid.error)}`);
const problem = invalid.error.detail[0];
const where: (string | number)[] | undefined = problem?.loc;
// Never called: each line must fail to type-check, which holds only while the package's types are real (not `any`).
const compileTimeOnly = (client: PublicClient, validationError: HTTPValidationError, anyEvent: EmergencyEvent) => {
  // @ts-expect-error no such path
  void client.GET('/orgs/{org_id}/emergency');
  // @ts-expect-error `loc` is a list of path segments, not a string
  const wrong: string = validationError.detail[0]!.loc;
  // @ts-expect-error a validation error has no `detail.error`
  void validationError.detail.error;
  // @ts-expect-error an event is narrowed on eventType before its data is read (a delivery_overdue has no emergency)
  void anyEvent.data.emergency;
  return wrong;
};
void compileTimeOnly;
const validation = {
  status: invalid.response.status,
  data: invalid.data ?? null,
  code: errorCode(invalid.error),
  loc: where ?? [],
  type: problem?.type,
  msg: problem?.msg,
};

const delivery = await waitFor('a webhook delivery', () => received[0]);
const event = verifyWebhook(delivery.body, delivery.headers, secret);
let tamperedRejected = false;
try {
  verifyWebhook(delivery.body.replace('Smoke on floor 2', 'Nothing to see'), delivery.headers, secret);
} catch (err) {
  tamperedRejected = err instanceof WebhookVerificationError;
}
const webhookResult = {
  eventType: event.eventType,
  eventId: event.eventId,
  webhookIdHeader: delivery.headers['webhook-id'],
  emergencyId: event.eventType === 'webhook.ping' ? null : event.emergencyId,
  // Only transitions carry the emergency; delivery_overdue and delivery_completed carry deadline data.
  description: event.eventType === 'emergency.declared' ? event.data.emergency.description : null,
  tamperedRejected,
};

const first = await waitFor('the device event', () => streamed[0]);
await stream.close();
const firstEnd = await stream.done;
const lastOffset = stream.lastOffset;

// Declared while the base station is away: the next connection resumes after the last handled offset.
const missed = await declare(api, 'Declared while the station was offline');
const resumedEvents: { offset: number; event: EmergencyEvent }[] = [];
const resumed = connectDevice({
  baseUrl,
  token,
  after: lastOffset,
  onEvent: (e, { offset }) => {
    resumedEvents.push({ offset, event: e });
  },
});
const caughtUp = await waitFor('the missed event', () => resumedEvents[0]);
await resumed.close();

receiver.closeAllConnections();
await new Promise<void>((resolve) => receiver.close(() => resolve()));

const summary = (e: { offset: number; event: EmergencyEvent }) => ({ offset: e.offset, eventType: e.event.eventType, emergencyId: e.event.emergencyId });
console.log(
  JSON.stringify({
    declared: { emergencyId: declared.emergencyId, status: declared.status, category: declared.category.name },
    readBack: { emergencyId: readBack.emergencyId, status: readBack.status, description: readBack.description },
    validation,
    webhook: webhookResult,
    device: {
      first: summary(first),
      firstEnd,
      lastOffset,
      missedEmergencyId: missed.emergencyId,
      resumed: summary(caughtUp),
      resumedCount: resumedEvents.length,
      resumedEnd: await resumed.done,
    },
  }),
);
