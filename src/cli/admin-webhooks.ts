import { operatorCaller } from '../domain/access/principal.js';
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from '../domain/webhooks/schema.js';
import {
  createSubscription,
  deleteSubscription,
  listDeliveryAttempts,
  listSubscriptions,
  replayDeliveries,
  rotateSubscriptionSecret,
  setSubscriptionStatus,
} from '../domain/webhooks/service.js';
import type { AppContext } from '../context.js';
import type { PingResult } from '../domain/webhooks/test-ping.js';
import { checkWebhookUrl } from '../domain/outbound/webhook-url.js';
import { AppError } from '../errors.js';
import { type CliCommand, type CliPositional, listAll, parseIdList, parseSubject, requireOption, UsageError } from './command.js';

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

function parseSince(value: string): string {
  if (!/(Z|[+-]\d{2}:\d{2})$/.test(value) || Number.isNaN(Date.parse(value))) {
    throw new UsageError('--since must be an ISO-8601 timestamp with a zone, e.g. 2026-11-21T00:00:00Z');
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

/** A URL refused only as private, loopback or plain http gets an error naming the setting that allows it, for tests and local development. */
async function withPrivateTargetHint<T>(ctx: AppContext, url: string, create: () => Promise<T>): Promise<T> {
  try {
    return await create();
  } catch (err) {
    if (err instanceof AppError && err.code === 'invalid_url' && !ctx.config.WEBHOOK_ALLOW_PRIVATE_TARGETS && checkWebhookUrl(url, true).ok) {
      throw new AppError(err.code, `${err.message.replace(/\.$/, '')}; ${PRIVATE_TARGETS_HINT}`);
    }
    throw err;
  }
}

const ID: CliPositional[] = [{ name: 'ID', description: 'the subscription id' }];

export const webhookCommands: Record<string, CliCommand> = {
  'admin webhook create': {
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
    run: async ({ ctx, values }) => {
      const url = requireOption(values, 'url');
      const { id, secret } = await withPrivateTargetHint(ctx, url, () =>
        createSubscription(ctx, operatorCaller(), {
          ...parseSubject(requireOption(values, 'subject')),
          url,
          allowedOrgIds: parseIdList(values['allowed-orgs'], 'allowed-orgs'),
          eventTypes: parseEventTypes(values.events),
        }),
      );
      return { id, secret };
    },
  },
  'admin webhook list': {
    summary: 'list webhook subscriptions (never their secrets)',
    columns: ['id', 'subject', 'url', 'eventTypes', 'status', 'failingSince'],
    run: async ({ ctx }) => ({ items: await listAll((page) => listSubscriptions(ctx, operatorCaller(), page)) }),
  },
  'admin webhook disable': {
    summary: 'stop deliveries to a subscription (they queue until it is enabled)',
    positionals: ID,
    run: ({ ctx, positionals }) => setSubscriptionStatus(ctx, operatorCaller(), positionals[0]!, 'disabled', 'disabled by an operator'),
  },
  'admin webhook enable': {
    summary: 'resume deliveries; use replay for events of the disabled period',
    positionals: ID,
    run: ({ ctx, positionals }) => setSubscriptionStatus(ctx, operatorCaller(), positionals[0]!, 'active'),
  },
  'admin webhook rotate-secret': {
    summary: 'mint a new signing secret and print it once; the previous one also signs for 24 h',
    positionals: ID,
    run: ({ ctx, positionals }) => rotateSubscriptionSecret(ctx, operatorCaller(), positionals[0]!),
  },
  'admin webhook delete': {
    summary: 'remove a subscription, its queue and its delivery log',
    positionals: ID,
    run: ({ ctx, positionals }) => deleteSubscription(ctx, operatorCaller(), positionals[0]!),
  },
  'admin webhook deliveries': {
    summary: 'recent delivery attempts, newest first: outcome, latency, response code',
    positionals: ID,
    options: { limit: { type: 'string', value: 'N', description: 'how many attempts, 1 to 1000 (default 50)' } },
    columns: ['startedAt', 'eventType', 'eventId', 'attempt', 'outcome', 'responseCode', 'latencyMs', 'error'],
    run: ({ ctx, positionals, values }) => listDeliveryAttempts(ctx, operatorCaller(), positionals[0]!, parseLimit(values.limit)),
  },
  'admin webhook replay': {
    summary: 'queue again every covered event since a time (receivers dedupe on eventId)',
    positionals: ID,
    options: { since: { type: 'string', value: 'ISO', required: true, description: 'an ISO-8601 timestamp with a zone, e.g. 2026-11-21T00:00:00Z' } },
    run: ({ ctx, positionals, values }) => replayDeliveries(ctx, operatorCaller(), positionals[0]!, parseSince(requireOption(values, 'since'))),
  },
  'admin webhook test': {
    summary: 'send a signed webhook.ping now and print the outcome (exit code 1 when it failed)',
    positionals: ID,
    // The HTTP client is loaded by this command only.
    run: async ({ ctx, positionals }) => (await import('../domain/webhooks/test-ping.js')).sendTestPing(ctx, operatorCaller(), positionals[0]!),
    failure: (result: PingResult) =>
      result.outcome === 'succeeded'
        ? null
        : `the test ping failed: ${result.error ?? (result.responseCode === null ? 'no response' : `HTTP ${result.responseCode}`)}`,
  },
};
