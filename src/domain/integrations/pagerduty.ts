import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { AppContext } from '../../context.js';
import { inTransaction } from '../../db/connect.js';
import type { WriteOptions } from '../../db/unit-of-work.js';
import { AppError } from '../../errors.js';
import { authorize } from '../access/authorize.js';
import type { Caller } from '../access/principal.js';
import type { DeclareInput } from '../emergencies/schema.js';
import { declareEmergency, resolveEmergency } from '../emergencies/service.js';
import { postMessageInput } from '../messages/schema.js';
import { postMessage } from '../messages/service.js';
import { isoTimestampInput } from '../shared/schema.js';
import { sha256 } from '../shared/secrets.js';
import { categoryForAlert } from './category-mapping.js';

/** PagerDuty's own limit on an event's size. */
export const PAGERDUTY_BODY_BYTES = 512 * 1024;
/** The part of an emergency's metadata the event's details may take (the whole is at most 16 KiB). */
const METADATA_BUDGET_BYTES = 12 * 1024;

const text = (max: number) => z.string().max(max, `must be at most ${max} characters`);
const required = (max: number) => text(max).trim().min(1, 'is missing or blank');

const pagerDutyPayload = z.object({
  summary: required(1024).describe('Becomes the emergency’s description.'),
  source: required(1024).describe('The affected system; kept as the emergency’s source (first 128 characters).'),
  severity: z.enum(['critical', 'error', 'warning', 'info'], { message: 'is invalid (must be one of: critical, error, warning, info)' }),
  timestamp: text(64).optional().describe('ISO 8601, e.g. 2015-07-17T08:42:58.315+0000: becomes occurredAt (default: now).'),
  component: text(1024).optional(),
  group: text(1024).optional(),
  class: text(1024).optional(),
  custom_details: z.unknown().optional().describe('Kept in metadata.pagerduty.custom_details.'),
});

/** PagerDuty Events API v2 (extensions §12): fields PagerDuty adds later are ignored, as PagerDuty does. */
export const pagerDutyEvent = z
  .object({
    routing_key: z.string().min(1, 'is missing or blank').max(256).describe('An integration key of the organization: enk_int_ and 32 hex digits.'),
    event_action: z.enum(['trigger', 'acknowledge', 'resolve'], { message: 'is invalid (must be one of: trigger, acknowledge, resolve)' }),
    dedup_key: text(255)
      .optional()
      .describe('Correlates a trigger with later events: the emergency’s externalId is pd:<dedup_key>. Generated for a trigger without one.'),
    payload: pagerDutyPayload.optional().describe('Required for trigger.'),
    images: z
      .array(z.object({ src: text(2048), href: text(2048).optional(), alt: text(1024).optional() }))
      .max(50)
      .optional(),
    links: z
      .array(z.object({ href: text(2048), text: text(1024).optional() }))
      .max(50)
      .optional(),
    client: text(1024).optional(),
    client_url: text(2048).optional(),
  })
  .superRefine((event, ctx) => {
    if (event.event_action === 'trigger' && event.payload === undefined) ctx.addIssue({ code: 'custom', path: ['payload'], message: 'is missing or blank' });
    if (event.event_action !== 'trigger' && !event.dedup_key?.trim()) ctx.addIssue({ code: 'custom', path: ['dedup_key'], message: 'is missing or blank' });
  })
  .meta({ id: 'PagerDutyEvent' });
export type PagerDutyEvent = z.output<typeof pagerDutyEvent>;

export const pagerDutyAccepted = z
  .object({
    status: z.literal('success'),
    message: z.literal('Event processed'),
    dedup_key: z.string().describe('The key to send acknowledge and resolve events with.'),
  })
  .meta({ id: 'PagerDutyAccepted' });
export type PagerDutyAccepted = z.infer<typeof pagerDutyAccepted>;

export const pagerDutyInvalid = z
  .object({
    status: z.literal('invalid event'),
    message: z.string().meta({ example: 'Event object is invalid' }),
    errors: z.array(z.string()).meta({ example: ["'payload.severity' is invalid (must be one of: critical, error, warning, info)"] }),
  })
  .meta({ id: 'PagerDutyInvalidEvent' });
export const pagerDutyThrottled = z
  .object({
    status: z.literal('throttle exceeded'),
    message: z.string().meta({ example: 'Requests for this service are arriving too quickly. Please retry later.' }),
  })
  .meta({ id: 'PagerDutyThrottled' });

const clip = (value: string, max: number) => (value.length > max ? `${value.slice(0, max - 1)}…` : value);

/** PagerDuty's timestamps may write the offset without a colon (+0000); anything unreadable is refused like a bad field. */
function occurredAtOf(timestamp: string | undefined): string | undefined {
  if (timestamp === undefined) return undefined;
  const parsed = isoTimestampInput.safeParse(timestamp.trim().replace(/([+-]\d{2})(\d{2})$/, '$1:$2'));
  if (!parsed.success) throw new PagerDutyRefusal(["'payload.timestamp' is invalid (must be an ISO 8601 timestamp with a zone, years 1970 to 9999)"]);
  return parsed.data;
}

/** An event PagerDuty would refuse: answered 400 `invalid event` with these errors. */
export class PagerDutyRefusal extends Error {
  constructor(readonly errors: string[]) {
    super('Event object is invalid');
  }
}

/** What the event says beyond its summary, in metadata.pagerduty, cut to the budget (custom_details go first). */
function metadataOf(event: PagerDutyEvent): Record<string, unknown> {
  const p = event.payload!;
  const kept = {
    source: p.source,
    severity: p.severity,
    ...(p.component !== undefined ? { component: p.component } : {}),
    ...(p.group !== undefined ? { group: p.group } : {}),
    ...(p.class !== undefined ? { class: p.class } : {}),
    ...(event.client !== undefined ? { client: event.client } : {}),
    ...(event.client_url !== undefined ? { client_url: event.client_url } : {}),
    ...(event.links?.length ? { links: event.links } : {}),
    ...(event.images?.length ? { images: event.images } : {}),
    ...(p.custom_details !== undefined ? { custom_details: p.custom_details } : {}),
  };
  if (Buffer.byteLength(JSON.stringify(kept)) <= METADATA_BUDGET_BYTES) return { pagerduty: kept };
  const short = Object.entries(kept).filter(([, v]) => typeof v === 'string');
  return { pagerduty: { ...Object.fromEntries(short.map(([k, v]) => [k, clip(v as string, 256)])), truncated: true } };
}

/** Dedup keys longer than this are named by their SHA-256, so that an externalId with its incident suffix fits in 256 characters. */
const LONGEST_NAMED_KEY = 200;
const LATER_INCIDENT = /^@\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** The externalId of a dedup_key's first incident; a later one (after a resolve) adds @<when it was declared>. */
const externalIdOf = (dedupKey: string) => (dedupKey.length <= LONGEST_NAMED_KEY ? `pd:${dedupKey}` : `pd:#${sha256(dedupKey).toString('hex').slice(0, 40)}`);

/** The emergencies a dedup_key names in the org, its first incident and the later ones. */
async function emergenciesOf(ctx: AppContext, orgId: string, base: string) {
  const rows = await ctx.db.db
    .selectFrom('emergencies')
    .select(['id', 'status', 'external_id'])
    .where('org_id', '=', orgId)
    .where((eb) => eb(eb.fn('substr', ['external_id', eb.val(1), eb.val(base.length)]), '=', base))
    .execute();
  // Another key may begin with this one: only this key's own incidents count.
  return rows.filter((e) => e.external_id === base || LATER_INCIDENT.test(e.external_id!.slice(base.length)));
}

/** The sender as it names itself (client), else the integration key's name. */
function senderOf(caller: Caller, event: PagerDutyEvent): { id: string; name: string } {
  const p = caller.principal;
  const keyName = p.kind === 'operator' ? p.name : p.keyName;
  return { id: 'pagerduty', name: clip(event.client?.trim() || keyName, 256) };
}

async function note(ctx: AppContext, caller: Caller, orgId: string, emergencyId: string, content: string, sender: { name: string }) {
  await postMessage(
    ctx,
    caller,
    orgId,
    emergencyId,
    postMessageInput.parse({ content: clip(content, 4000), author: { type: 'system', name: clip(sender.name, 128) } }),
  );
}

/**
 * One Events API v2 event (extensions §12): trigger declares an emergency for its dedup_key unless one is open (then the
 * repeat is posted to it as a message), acknowledge is posted as a message, resolve resolves; acknowledge and resolve of a
 * dedup_key without an open emergency are dropped, as PagerDuty drops them.
 */
export async function enqueuePagerDutyEvent(ctx: AppContext, caller: Caller, event: PagerDutyEvent, write: WriteOptions = {}): Promise<PagerDutyAccepted> {
  const principal = caller.principal;
  if (principal.kind !== 'api_key') throw new AppError('unauthenticated', 'An integration key is required as routing_key.');
  const org = await authorize(ctx, caller, principal.subjectId, 'emergencies:write');
  const dedupKey = event.dedup_key?.trim() || randomUUID().replaceAll('-', '');
  const occurredAt = occurredAtOf(event.payload?.timestamp);
  const sender = senderOf(caller, event);
  const base = externalIdOf(dedupKey);
  const known = await emergenciesOf(ctx, org.id, base);
  const open = known.find((e) => e.status !== 'resolved');
  if (event.event_action === 'trigger') {
    const p = event.payload!;
    if (open) {
      await note(ctx, caller, org.id, open.id, `Triggered again (${p.severity}): ${p.summary}`, sender);
    } else {
      const categoryId = await categoryForAlert(ctx.db.db, org.id, 'pagerduty', (field) => p[field as 'severity' | 'class' | 'component' | 'group' | 'source']);
      const input: DeclareInput = {
        externalId: known.length === 0 ? base : `${base}@${new Date().toISOString()}`,
        ...(categoryId ? { categoryId } : {}),
        source: clip(p.source, 128),
        description: clip(p.summary, 4000),
        ...(occurredAt ? { occurredAt } : {}),
        metadata: metadataOf(event),
        declaredBy: sender,
      };
      try {
        await declareEmergency(ctx, caller, org.id, input);
      } catch (err) {
        // A concurrent trigger with the same dedup_key declared it first: this one is a repeat.
        if (!(err instanceof AppError && err.code === 'external_id_conflict')) throw err;
      }
    }
  } else if (open && event.event_action === 'acknowledge') {
    await note(ctx, caller, org.id, open.id, `Acknowledged in ${sender.name}.`, sender);
  } else if (open) {
    await resolveEmergency(ctx, caller, org.id, open.id, { resolutionNote: `Resolved in ${sender.name}.`, resolvedBy: sender });
  }
  const answer: PagerDutyAccepted = { status: 'success', message: 'Event processed', dedup_key: dedupKey };
  // Each step above is a unit of work of its own, and a repeat changes nothing: the answer is stored last, in a unit of its own.
  return write.idempotency ? inTransaction(ctx.db, async () => answer, write.idempotency) : answer;
}
