import type { z } from 'zod';
import { presentWebhook, type webhookRecord } from '../domain/presenters/admin-records.js';
import type { AppContext } from '../context.js';
import { operatorCaller } from '../domain/access/principal.js';
import { checkWebhookUrl } from '../domain/outbound/webhook-url.js';
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from '../domain/webhooks/schema.js';
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
import { type AdminApiError, path, secretOf } from './admin-api.js';
import { type AdminList, adminCommand, itemsOf, pageOf } from './admin-command.js';
import { type CliCommand, type CliPositional, parseIdList, parseSubject, requireOption, UsageError } from './command.js';
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
const serverPrivateTargetHint = (refusal: AdminApiError, url: string | undefined) =>
  refusal.code === 'invalid_url' && privateOnly(url) ? refusal.withHint(SERVER_PRIVATE_TARGETS_HINT) : refusal;

/** A subscription as the admin API answers it (`webhookId`), with the secret in a creating answer. */
export type WebhookRecord = z.infer<typeof webhookRecord>;

/** A subscription as the commands print it (never its secret). */
const webhookRow = (r: WebhookRecord) => ({
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

const WEBHOOKS: AdminList<void, WebhookRecord> = {
  page: (ctx, _, page) => pageOf(listSubscriptions(ctx, operatorCaller(), page), presentWebhook),
  route: () => '/webhooks',
};
const DELIVERIES: AdminList<string, DeliveryView> = {
  page: (ctx, id, page) => listDeliveries(ctx, operatorCaller(), id, page),
  route: (id) => path`/webhooks/${id}/deliveries`,
};

/** The outcome of a test ping as the admin API answers it (`status`: the receiver's HTTP status). */
interface PingAnswer {
  outcome: 'succeeded' | 'failed';
  status: number | null;
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

const statusChange = (status: 'active' | 'disabled', summary: string) =>
  adminCommand({
    summary,
    positionals: ID,
    input: idOf,
    local: async (ctx, id) =>
      presentWebhook(await setSubscriptionStatus(ctx, operatorCaller(), id, status, status === 'disabled' ? 'disabled by an operator' : null)),
    route: (id) => ({ post: path`/webhooks/${id}/${status === 'active' ? 'enable' : 'disable'}` }),
    present: webhookRow,
  });

export const webhookCommands: Record<string, CliCommand> = {
  'admin webhook create': adminCommand({
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
    local: async (ctx, spec): Promise<WebhookRecord> => {
      const { secret, record } = await withPrivateTargetHint(ctx, spec.url, () => createSubscription(ctx, operatorCaller(), spec));
      return { ...presentWebhook(record), secret };
    },
    route: (spec) => ({
      post: '/webhooks',
      body: { url: spec.url, subject: { type: spec.subjectType, id: spec.subjectId }, allowedOrgIds: spec.allowedOrgIds, eventTypes: spec.eventTypes },
    }),
    explain: (refusal, spec) => serverPrivateTargetHint(refusal, spec.url),
    present: (created) => ({
      id: created.webhookId,
      secret: secretOf(created.secret, `subscription ${created.webhookId}`, 'rotate its secret to get one'),
    }),
  }),
  'admin webhook list': adminCommand({
    summary: 'list webhook subscriptions (never their secrets)',
    columns: ['id', 'subject', 'url', 'eventTypes', 'status', 'disabledReason'],
    input: () => undefined,
    read: (read) => read(WEBHOOKS, undefined),
    present: itemsOf(webhookRow),
  }),
  'admin webhook update': adminCommand({
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
      presentWebhook(await withPrivateTargetHint(ctx, changes.url, () => updateSubscription(ctx, operatorCaller(), id, changes))),
    route: ({ id, changes }) => ({ patch: path`/webhooks/${id}`, body: changes }),
    explain: (refusal, { changes }) => serverPrivateTargetHint(refusal, changes.url),
    present: webhookRow,
  }),
  'admin webhook disable': statusChange('disabled', 'stop deliveries to a subscription (they queue until it is enabled)'),
  'admin webhook enable': statusChange('active', 'resume deliveries; use replay for events of the disabled period'),
  'admin webhook rotate-secret': adminCommand({
    summary: 'mint a new signing secret and print it once; the previous one also signs for 24 h',
    positionals: ID,
    input: idOf,
    local: async (ctx, id): Promise<{ webhookId: string; secret?: string; previousSecretExpiresAt: string }> => {
      const rotated = await rotateSubscriptionSecret(ctx, operatorCaller(), id);
      return { webhookId: rotated.id, secret: rotated.secret, previousSecretExpiresAt: rotated.previousSecretExpiresAt };
    },
    route: (id) => ({ post: path`/webhooks/${id}/rotate-secret` }),
    present: (rotated, id) => ({
      id: rotated.webhookId,
      secret: secretOf(rotated.secret, `secret rotation of subscription ${id}`, 'rotate it again'),
      previousSecretExpiresAt: rotated.previousSecretExpiresAt,
    }),
  }),
  'admin webhook delete': adminCommand({
    summary: 'remove a subscription, its queue and its delivery log',
    positionals: ID,
    input: idOf,
    local: async (ctx, id) => ({ webhookId: (await deleteSubscription(ctx, operatorCaller(), id)).id }),
    route: (id) => ({ delete: path`/webhooks/${id}` }),
    present: (deleted) => ({ id: deleted.webhookId, deleted: true as const }),
  }),
  'admin webhook deliveries': adminCommand({
    summary: 'recent deliveries, newest first: event, status, attempts and the latest one (response code, latency, error)',
    positionals: ID,
    options: { limit: { type: 'string', value: 'N', description: 'how many deliveries, 1 to 1000 (default 50)' } },
    json: 'print {"subscriptionId","items":[deliveries, each with its attempts]} instead of text',
    human: deliveriesTable,
    input: ({ positionals, values }) => ({ id: positionals[0]!, limit: parseLimit(values.limit) }),
    read: (read, { id, limit }) => read(DELIVERIES, id, limit),
    present: (items, { id }): Deliveries => ({ subscriptionId: id.toLowerCase(), items }),
  }),
  'admin webhook replay': adminCommand({
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
    local: async (ctx, { id, since, until }) => ({ replayed: (await replayDeliveries(ctx, operatorCaller(), id, since, until)).requeued }),
    route: ({ id, since, until }) => ({ post: path`/webhooks/${id}/replay`, body: { since, until } }),
    present: (replay, { id }) => ({ id: id.toLowerCase(), replayed: replay.replayed }),
  }),
  'admin webhook test': adminCommand({
    summary: 'send a signed webhook.ping now and print the outcome (exit code 1 when it failed)',
    positionals: ID,
    input: idOf,
    local: async (ctx, id): Promise<PingAnswer> => {
      // The HTTP client is loaded by this command only.
      const ping = await (await import('../domain/webhooks/test-ping.js')).sendTestPing(ctx, operatorCaller(), id);
      return { outcome: ping.outcome, status: ping.responseCode, latencyMs: ping.latencyMs, error: ping.error };
    },
    route: (id) => ({ post: path`/webhooks/${id}/test` }),
    present: (ping, id) => ({ id: id.toLowerCase(), outcome: ping.outcome, responseCode: ping.status, latencyMs: ping.latencyMs, error: ping.error }),
    failure: (result) =>
      result.outcome === 'succeeded'
        ? null
        : `the test ping failed: ${result.error ?? (result.responseCode === null ? 'no response' : `HTTP ${result.responseCode}`)}`,
  }),
};
