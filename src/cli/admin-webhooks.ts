import type { AppContext } from '../context.js';
import { operatorCaller } from '../domain/access/principal.js';
import { checkWebhookUrl } from '../domain/outbound/webhook-url.js';
import { type SubscriptionRecord, type SubscriptionSpec, WEBHOOK_EVENT_TYPES, type WebhookEventType } from '../domain/webhooks/schema.js';
import {
  createSubscription,
  type DeliveryView,
  deleteSubscription,
  listDeliveries,
  listSubscriptions,
  replayDeliveries,
  rotateSubscriptionSecret,
  setSubscriptionStatus,
  updateSubscription,
} from '../domain/webhooks/service.js';
import { AppError } from '../errors.js';
import { type AdminApi, AdminApiError, path, secretOf } from './admin-api.js';
import { adminCommand, type CliCommand, type CliPositional, firstItems, listAll, parseIdList, parseSubject, requireOption, UsageError } from './command.js';
import { formatTable } from './output.js';

function parseEventTypes(value: string | boolean | undefined): WebhookEventType[] | null {
  if (typeof value !== 'string') return null;
  const types = value
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean);
  const known = WEBHOOK_EVENT_TYPES as readonly string[];
  if (types.length === 0 || !types.every((t) => known.includes(t))) {
    throw new UsageError(`--events must be a comma-separated list of ${WEBHOOK_EVENT_TYPES.join(', ')}`);
  }
  return types as WebhookEventType[];
}

function parseTime(value: string, flag: string): string {
  if (!/(Z|[+-]\d{2}:\d{2})$/.test(value) || Number.isNaN(Date.parse(value))) {
    throw new UsageError(`--${flag} must be an ISO-8601 timestamp with a zone, e.g. 2026-11-21T00:00:00Z`);
  }
  return new Date(value).toISOString();
}

function parseLimit(value: string | boolean | undefined): number {
  if (value === undefined) return 50;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 1000) throw new UsageError('--limit must be an integer from 1 to 1000');
  return n;
}

const PRIVATE_TARGETS_HINT = 'set WEBHOOK_ALLOW_PRIVATE_TARGETS=true to allow private targets (tests and local development only)';
const SERVER_PRIVATE_TARGETS_HINT = 'the server accepts them only when it runs with WEBHOOK_ALLOW_PRIVATE_TARGETS=true (tests and local development only)';

/** Refused only as private, loopback or plain http: a URL that the setting for tests and local development would allow. */
const privateOnly = (url: string | undefined) => url !== undefined && checkWebhookUrl(url, true).ok;

/** On the database: a URL refused only as private gets an error naming the setting that allows it. */
async function withPrivateTargetHint<T>(ctx: AppContext, url: string | undefined, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    if (err instanceof AppError && err.code === 'invalid_url' && !ctx.config.WEBHOOK_ALLOW_PRIVATE_TARGETS && privateOnly(url)) {
      throw new AppError(err.code, `${err.message.replace(/\.$/, '')}; ${PRIVATE_TARGETS_HINT}`);
    }
    throw err;
  }
}

/** Over the admin API: the same, naming the server's setting. */
async function withServerPrivateTargetHint<T>(url: string | undefined, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    if (err instanceof AdminApiError && err.code === 'invalid_url' && privateOnly(url)) throw err.withHint(SERVER_PRIVATE_TARGETS_HINT);
    throw err;
  }
}

/** A subscription as the commands show it (never its secret). */
interface WebhookView {
  id: string;
  subject: { type: string; id: string };
  url: string;
  allowedOrgIds: string[] | null;
  eventTypes: string[] | null;
  status: 'active' | 'disabled';
  disabledReason: string | null;
  createdAt: string;
  updatedAt: string;
}

/** The admin API's record (`webhookId`), with the secret in a creating answer. */
type WebhookAnswer = Omit<WebhookView, 'id'> & { webhookId: string; secret?: string };

const webhookView = (r: SubscriptionRecord): WebhookView => ({
  id: r.id,
  subject: r.subject,
  url: r.url,
  allowedOrgIds: r.allowedOrgIds,
  eventTypes: r.eventTypes,
  status: r.status === 'active' ? 'active' : 'disabled',
  disabledReason: r.disabledReason,
  createdAt: r.createdAt,
  updatedAt: r.updatedAt,
});

const webhookViewOf = (r: WebhookAnswer): WebhookView => ({
  id: r.webhookId,
  subject: r.subject,
  url: r.url,
  allowedOrgIds: r.allowedOrgIds,
  eventTypes: r.eventTypes,
  status: r.status,
  disabledReason: r.disabledReason,
  createdAt: r.createdAt,
  updatedAt: r.updatedAt,
});

/** The outcome of a test ping. */
interface PingView {
  id: string;
  outcome: 'succeeded' | 'failed';
  responseCode: number | null;
  latencyMs: number;
  error: string | null;
}

interface Deliveries {
  subscriptionId: string;
  items: DeliveryView[];
}

/** One line per delivery, newest first, with its latest attempt. */
function deliveriesTable({ items }: Deliveries): string {
  if (items.length === 0) return '(none)';
  const rows = items.map((d) => {
    const last = d.attempts.at(-1);
    return {
      eventType: d.eventType,
      eventId: d.eventId,
      status: d.status,
      attempts: d.attempts.length,
      lastAttemptAt: last?.at ?? null,
      responseStatus: last?.responseStatus ?? null,
      latencyMs: last?.latencyMs ?? null,
      error: last?.error ?? null,
    };
  });
  return formatTable(rows, Object.keys(rows[0]!));
}

type Changes = { url?: string; allowedOrgIds?: string[] | null; eventTypes?: WebhookEventType[] | null };

const ID: CliPositional[] = [{ name: 'ID', description: 'the subscription id' }];
const idOf = ({ positionals }: { positionals: string[] }) => positionals[0]!;

const STATUS_CHANGE = (status: 'active' | 'disabled') => ({
  positionals: ID,
  input: idOf,
  local: async (ctx: AppContext, id: string) =>
    webhookView(await setSubscriptionStatus(ctx, operatorCaller(), id, status, status === 'disabled' ? 'disabled by an operator' : null)),
  remote: async (api: AdminApi, id: string) =>
    webhookViewOf(await api.post<WebhookAnswer>(path`/webhooks/${id}/${status === 'active' ? 'enable' : 'disable'}`)),
});

export const webhookCommands: Record<string, CliCommand> = {
  'admin webhook create': adminCommand<SubscriptionSpec, { id: string; secret: string }>({
    summary: 'register a webhook subscription; prints its signing secret once',
    options: {
      subject: { type: 'string', value: 'SUBJECT', required: true, description: 'org:ID, enterprise:ID or partner:ID (covers every org beneath it)' },
      url: {
        type: 'string',
        value: 'URL',
        required: true,
        description: 'the receiver: a public https URL (http and private hosts need WEBHOOK_ALLOW_PRIVATE_TARGETS=true)',
      },
      'allowed-orgs': { type: 'string', value: 'ID,ID', description: 'narrow the subscription to these orgs of its subject' },
      events: { type: 'string', value: 'TYPES', description: `only these event types, comma-separated: ${WEBHOOK_EVENT_TYPES.join(', ')}` },
    },
    input: ({ values }) => ({
      ...parseSubject(requireOption(values, 'subject')),
      url: requireOption(values, 'url'),
      allowedOrgIds: parseIdList(values['allowed-orgs'], 'allowed-orgs'),
      eventTypes: parseEventTypes(values.events),
    }),
    local: async (ctx, spec) => {
      const { id, secret } = await withPrivateTargetHint(ctx, spec.url, () => createSubscription(ctx, operatorCaller(), spec));
      return { id, secret };
    },
    remote: async (api, spec) => {
      const body = { url: spec.url, subject: { type: spec.subjectType, id: spec.subjectId }, allowedOrgIds: spec.allowedOrgIds, eventTypes: spec.eventTypes };
      const created = await withServerPrivateTargetHint(spec.url, () => api.post<WebhookAnswer>('/webhooks', body));
      return { id: created.webhookId, secret: secretOf(created.secret, `subscription ${created.webhookId}`, 'rotate its secret to get one') };
    },
  }),
  'admin webhook list': adminCommand<void, { items: WebhookView[] }>({
    summary: 'list webhook subscriptions (never their secrets)',
    columns: ['id', 'subject', 'url', 'eventTypes', 'status', 'disabledReason'],
    input: () => undefined,
    local: async (ctx) => ({ items: (await listAll((page) => listSubscriptions(ctx, operatorCaller(), page))).map(webhookView) }),
    remote: async (api) => ({ items: (await listAll((page) => api.page<WebhookAnswer>('/webhooks', page))).map(webhookViewOf) }),
  }),
  'admin webhook update': adminCommand<{ id: string; changes: Changes }, WebhookView>({
    summary: "change a subscription's URL, allowed orgs or event types",
    positionals: ID,
    options: {
      url: { type: 'string', value: 'URL', description: 'the new receiver URL' },
      'allowed-orgs': { type: 'string', value: 'ID,ID', description: 'narrow the subscription to these orgs of its subject' },
      'all-orgs': { type: 'boolean', description: 'every org of its subject again' },
      events: { type: 'string', value: 'TYPES', description: `only these event types, comma-separated: ${WEBHOOK_EVENT_TYPES.join(', ')}` },
      'all-events': { type: 'boolean', description: 'every event type again' },
    },
    input: ({ positionals, values }) => {
      const changes: Changes = {};
      if (typeof values.url === 'string') changes.url = values.url;
      if (values['allowed-orgs'] !== undefined && values['all-orgs']) throw new UsageError('give --allowed-orgs or --all-orgs, not both');
      if (values['allowed-orgs'] !== undefined) changes.allowedOrgIds = parseIdList(values['allowed-orgs'], 'allowed-orgs');
      if (values['all-orgs']) changes.allowedOrgIds = null;
      if (values.events !== undefined && values['all-events']) throw new UsageError('give --events or --all-events, not both');
      if (values.events !== undefined) changes.eventTypes = parseEventTypes(values.events);
      if (values['all-events']) changes.eventTypes = null;
      if (Object.keys(changes).length === 0) throw new UsageError('name at least one change: --url, --allowed-orgs, --all-orgs, --events or --all-events');
      return { id: positionals[0]!, changes };
    },
    local: async (ctx, { id, changes }) =>
      webhookView(await withPrivateTargetHint(ctx, changes.url, () => updateSubscription(ctx, operatorCaller(), id, changes))),
    remote: async (api, { id, changes }) =>
      webhookViewOf(await withServerPrivateTargetHint(changes.url, () => api.patch<WebhookAnswer>(path`/webhooks/${id}`, changes))),
  }),
  'admin webhook disable': adminCommand<string, WebhookView>({
    summary: 'stop deliveries to a subscription (they queue until it is enabled)',
    ...STATUS_CHANGE('disabled'),
  }),
  'admin webhook enable': adminCommand<string, WebhookView>({
    summary: 'resume deliveries; use replay for events of the disabled period',
    ...STATUS_CHANGE('active'),
  }),
  'admin webhook rotate-secret': adminCommand<string, { id: string; secret: string; previousSecretExpiresAt: string }>({
    summary: 'mint a new signing secret and print it once; the previous one also signs for 24 h',
    positionals: ID,
    input: idOf,
    local: async (ctx, id) => {
      const rotated = await rotateSubscriptionSecret(ctx, operatorCaller(), id);
      return { id: rotated.id, secret: rotated.secret, previousSecretExpiresAt: rotated.previousSecretExpiresAt };
    },
    remote: async (api, id) => {
      const rotated = await api.post<{ webhookId: string; secret?: string; previousSecretExpiresAt: string }>(path`/webhooks/${id}/rotate-secret`);
      return {
        id: rotated.webhookId,
        secret: secretOf(rotated.secret, `secret rotation of subscription ${id}`, 'rotate it again'),
        previousSecretExpiresAt: rotated.previousSecretExpiresAt,
      };
    },
  }),
  'admin webhook delete': adminCommand<string, { id: string; deleted: true }>({
    summary: 'remove a subscription, its queue and its delivery log',
    positionals: ID,
    input: idOf,
    local: (ctx, id) => deleteSubscription(ctx, operatorCaller(), id),
    remote: async (api, id) => ({ id: (await api.delete<{ webhookId: string }>(path`/webhooks/${id}`)).webhookId, deleted: true }),
  }),
  'admin webhook deliveries': adminCommand<{ id: string; limit: number }, Deliveries>({
    summary: 'recent deliveries, newest first: event, status, attempts and the latest one (response code, latency, error)',
    positionals: ID,
    options: { limit: { type: 'string', value: 'N', description: 'how many deliveries, 1 to 1000 (default 50)' } },
    json: 'print {"subscriptionId","items":[deliveries, each with its attempts]} instead of text',
    human: deliveriesTable,
    input: ({ positionals, values }) => ({ id: positionals[0]!, limit: parseLimit(values.limit) }),
    local: async (ctx, { id, limit }) => ({
      subscriptionId: id.toLowerCase(),
      items: await firstItems(limit, (page) => listDeliveries(ctx, operatorCaller(), id, page)),
    }),
    remote: async (api, { id, limit }) => ({
      subscriptionId: id.toLowerCase(),
      items: await firstItems(limit, (page) => api.page<DeliveryView>(path`/webhooks/${id}/deliveries`, page)),
    }),
  }),
  'admin webhook replay': adminCommand<{ id: string; since: string; until?: string }, { id: string; replayed: number }>({
    summary: 'queue again every covered event since a time (receivers dedupe on eventId)',
    positionals: ID,
    options: {
      since: { type: 'string', value: 'ISO', required: true, description: 'an ISO-8601 timestamp with a zone, e.g. 2026-11-21T00:00:00Z' },
      until: { type: 'string', value: 'ISO', description: 'only events before this time (default: up to now)' },
    },
    input: ({ positionals, values }) => ({
      id: positionals[0]!,
      since: parseTime(requireOption(values, 'since'), 'since'),
      until: typeof values.until === 'string' ? parseTime(values.until, 'until') : undefined,
    }),
    local: async (ctx, { id, since, until }) => {
      const replay = await replayDeliveries(ctx, operatorCaller(), id, since, until);
      return { id: replay.id, replayed: replay.requeued };
    },
    remote: async (api, { id, since, until }) => {
      const replay = await api.post<{ replayed: number }>(path`/webhooks/${id}/replay`, { since, until });
      return { id: id.toLowerCase(), replayed: replay.replayed };
    },
  }),
  'admin webhook test': adminCommand<string, PingView>({
    summary: 'send a signed webhook.ping now and print the outcome (exit code 1 when it failed)',
    positionals: ID,
    input: idOf,
    local: async (ctx, id) => {
      // The HTTP client is loaded by this command only.
      const ping = await (await import('../domain/webhooks/test-ping.js')).sendTestPing(ctx, operatorCaller(), id);
      return { id: ping.id, outcome: ping.outcome, responseCode: ping.responseCode, latencyMs: ping.latencyMs, error: ping.error };
    },
    remote: async (api, id) => {
      const ping = await api.post<{ outcome: 'succeeded' | 'failed'; status: number | null; latencyMs: number; error: string | null }>(
        path`/webhooks/${id}/test`,
      );
      return { id: id.toLowerCase(), outcome: ping.outcome, responseCode: ping.status, latencyMs: ping.latencyMs, error: ping.error };
    },
    failure: (result) =>
      result.outcome === 'succeeded'
        ? null
        : `the test ping failed: ${result.error ?? (result.responseCode === null ? 'no response' : `HTTP ${result.responseCode}`)}`,
  }),
};
