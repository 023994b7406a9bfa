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
import { sendTestPing } from '../delivery/ping.js';
import { type CliCommand, listAll, parseIdList, parseSubject, requireOption, UsageError } from './command.js';

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

export const webhookCommands: Record<string, CliCommand> = {
  'admin webhook create': {
    usage: '--subject org:ID|enterprise:ID|partner:ID --url URL [--allowed-orgs ID,ID] [--events emergency.declared,...]   (prints the secret once)',
    options: { subject: { type: 'string' }, url: { type: 'string' }, 'allowed-orgs': { type: 'string' }, events: { type: 'string' } },
    run: async ({ ctx, values }) => {
      const { id, secret } = await createSubscription(ctx, operatorCaller(), {
        ...parseSubject(requireOption(values, 'subject')),
        url: requireOption(values, 'url'),
        allowedOrgIds: parseIdList(values['allowed-orgs'], 'allowed-orgs'),
        eventTypes: parseEventTypes(values.events),
      });
      return { id, secret };
    },
  },
  'admin webhook list': {
    usage: '(never shows secrets)',
    run: async ({ ctx }) => ({ items: await listAll((page) => listSubscriptions(ctx, operatorCaller(), page)) }),
  },
  'admin webhook disable': {
    usage: 'ID',
    positionals: ['ID'],
    run: ({ ctx, positionals }) => setSubscriptionStatus(ctx, operatorCaller(), positionals[0]!, 'disabled', 'disabled by an operator'),
  },
  'admin webhook enable': {
    usage: 'ID   (queued deliveries resume; use replay for events of the disabled period)',
    positionals: ['ID'],
    run: ({ ctx, positionals }) => setSubscriptionStatus(ctx, operatorCaller(), positionals[0]!, 'active'),
  },
  'admin webhook rotate-secret': {
    usage: 'ID   (prints the new secret once; the previous one also signs for 24 h)',
    positionals: ['ID'],
    run: ({ ctx, positionals }) => rotateSubscriptionSecret(ctx, operatorCaller(), positionals[0]!),
  },
  'admin webhook delete': {
    usage: 'ID   (removes the subscription, its queue and its delivery log)',
    positionals: ['ID'],
    run: ({ ctx, positionals }) => deleteSubscription(ctx, operatorCaller(), positionals[0]!),
  },
  'admin webhook deliveries': {
    usage: 'ID [--limit N]   recent attempts, newest first, with status, latency and response code',
    positionals: ['ID'],
    options: { limit: { type: 'string' } },
    run: ({ ctx, positionals, values }) => listDeliveryAttempts(ctx, operatorCaller(), positionals[0]!, parseLimit(values.limit)),
  },
  'admin webhook replay': {
    usage: 'ID --since ISO   re-queue every covered event since the time (receivers dedupe on eventId)',
    positionals: ['ID'],
    options: { since: { type: 'string' } },
    run: ({ ctx, positionals, values }) => replayDeliveries(ctx, operatorCaller(), positionals[0]!, parseSince(requireOption(values, 'since'))),
  },
  'admin webhook test': {
    usage: 'ID   send a signed webhook.ping now and print the outcome',
    positionals: ['ID'],
    run: ({ ctx, positionals }) => sendTestPing(ctx, operatorCaller(), positionals[0]!),
  },
};
