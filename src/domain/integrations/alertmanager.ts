import { z } from 'zod';
import type { AppContext } from '../../context.js';
import { inTransaction } from '../../db/connect.js';
import type { WriteOptions } from '../../db/unit-of-work.js';
import { authorize } from '../access/authorize.js';
import type { Caller } from '../access/principal.js';
import { asIntegration } from './actor.js';
import type { DeclareInput } from '../emergencies/schema.js';
import { declareEmergency, resolveEmergency } from '../emergencies/service.js';
import { isoTimestampInput } from '../shared/schema.js';
import { AppError } from '../../errors.js';
import { categoryForAlert } from './category-mapping.js';

/** Alerts one notification may carry; Alertmanager groups stay far below it. */
export const ALERTMANAGER_MAX_ALERTS = 1_000;
/** The part of an emergency's metadata the alert's labels and annotations may take (the whole is at most 16 KiB). */
const METADATA_BUDGET_BYTES = 12 * 1024;

const labelSet = z.record(z.string().max(1024), z.string().max(16 * 1024));

const alertmanagerAlert = z.object({
  status: z.enum(['firing', 'resolved']),
  labels: labelSet,
  annotations: labelSet.default({}),
  startsAt: isoTimestampInput,
  endsAt: z.string().max(64).optional().describe('0001-01-01T00:00:00Z while the alert fires.'),
  generatorURL: z.string().max(4096).optional(),
  fingerprint: z
    .string()
    .regex(/^[0-9A-Za-z]{1,64}$/, 'must be Alertmanager’s fingerprint: 1 to 64 letters and digits')
    .describe('Alertmanager’s id of the alert (a hash of its labels): the emergency’s externalId is am:<fingerprint>.'),
});

/** Alertmanager's webhook notification, payload version 4 (fields Alertmanager adds later are ignored). */
export const alertmanagerPayload = z
  .object({
    version: z.literal('4'),
    groupKey: z
      .string()
      .max(16 * 1024)
      .optional(),
    truncatedAlerts: z.number().int().min(0).optional(),
    status: z.enum(['firing', 'resolved']),
    receiver: z.string().max(1024),
    groupLabels: labelSet.optional(),
    commonLabels: labelSet.optional(),
    commonAnnotations: labelSet.optional(),
    externalURL: z.string().max(4096).optional(),
    alerts: z.array(alertmanagerAlert).max(ALERTMANAGER_MAX_ALERTS),
  })
  .meta({ id: 'AlertmanagerWebhook' });

export type AlertmanagerPayload = z.output<typeof alertmanagerPayload>;
type AlertmanagerAlert = AlertmanagerPayload['alerts'][number];

export const alertmanagerResult = z
  .object({
    declared: z.number().int().describe('Firing alerts that declared an emergency.'),
    resolved: z.number().int().describe('Resolved alerts that resolved their emergency.'),
    unchanged: z.number().int().describe('Alerts that changed nothing: a repeat, or a resolved alert without an open emergency.'),
  })
  .meta({ id: 'AlertmanagerResult' });
export type AlertmanagerResult = z.infer<typeof alertmanagerResult>;

const clip = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

/** The emergencies an alert's fingerprint names in the org: the first incident is am:<fp>, a later one am:<fp>@<startsAt>. */
async function emergenciesOf(ctx: AppContext, orgId: string, fingerprint: string) {
  const base = `am:${fingerprint}`;
  return ctx.db.db
    .selectFrom('emergencies')
    .select(['id', 'status', 'external_id', 'occurred_at'])
    .where('org_id', '=', orgId)
    .where((eb) => eb.or([eb('external_id', '=', base), eb('external_id', 'like', `${base}@%`)]))
    .execute();
}

/** Labels and annotations as kept in metadata.alertmanager, cut to the budget (annotations go first, then long values). */
function metadataOf(payload: AlertmanagerPayload, alert: AlertmanagerAlert): Record<string, unknown> {
  const kept = {
    fingerprint: alert.fingerprint,
    receiver: clip(payload.receiver, 256),
    labels: alert.labels,
    annotations: alert.annotations,
    ...(alert.generatorURL ? { generatorURL: clip(alert.generatorURL, 2048) } : {}),
  };
  if (Buffer.byteLength(JSON.stringify(kept)) <= METADATA_BUDGET_BYTES) return { alertmanager: kept };
  const shortened = (set: Record<string, string>) =>
    Object.fromEntries(
      Object.entries(set)
        .slice(0, 64)
        .map(([k, v]) => [clip(k, 128), clip(v, 128)]),
    );
  return { alertmanager: { ...kept, labels: shortened(alert.labels), annotations: {}, truncated: true } };
}

async function declareOf(ctx: AppContext, orgId: string, payload: AlertmanagerPayload, alert: AlertmanagerAlert, externalId: string): Promise<DeclareInput> {
  const description = alert.annotations.summary || alert.annotations.description || alert.labels.alertname || 'Alertmanager alert';
  const categoryId = await categoryForAlert(ctx.db.db, orgId, 'alertmanager', (label) => alert.labels[label]);
  return {
    externalId,
    ...(categoryId ? { categoryId } : {}),
    source: 'alertmanager',
    description: clip(description, 4000),
    occurredAt: alert.startsAt,
    metadata: metadataOf(payload, alert),
    declaredBy: { id: 'alertmanager', name: clip(payload.receiver || 'Alertmanager', 256) },
  };
}

/**
 * Alertmanager's webhook (extensions §12): each firing alert declares an emergency unless one is open for its fingerprint or
 * this very firing (its startsAt) was declared before; each resolved alert resolves its open emergency. Repeats of a
 * notification change nothing.
 */
export async function receiveAlertmanager(
  ctx: AppContext,
  caller: Caller,
  orgId: string,
  payload: AlertmanagerPayload,
  write: WriteOptions = {},
): Promise<AlertmanagerResult> {
  const org = await authorize(ctx, caller, orgId, 'emergencies:write');
  caller = asIntegration(caller, { kind: 'alertmanager', id: clip(payload.receiver, 256), name: clip(payload.receiver || 'Alertmanager', 256) });
  const result: AlertmanagerResult = { declared: 0, resolved: 0, unchanged: 0 };
  for (const alert of payload.alerts) {
    const known = await emergenciesOf(ctx, org.id, alert.fingerprint);
    const open = known.find((e) => e.status !== 'resolved');
    if (alert.status === 'firing') {
      if (open || known.some((e) => e.occurred_at === alert.startsAt)) {
        result.unchanged++;
        continue;
      }
      const base = `am:${alert.fingerprint}`;
      const externalId = known.some((e) => e.external_id === base) ? `${base}@${alert.startsAt}` : base;
      try {
        await declareEmergency(ctx, caller, org.id, await declareOf(ctx, org.id, payload, alert, externalId));
        result.declared++;
      } catch (err) {
        // A concurrent delivery of the same notification declared it first.
        if (!(err instanceof AppError && err.code === 'external_id_conflict')) throw err;
        result.unchanged++;
      }
      continue;
    }
    if (!open) {
      result.unchanged++;
      continue;
    }
    const ended = isoTimestampInput.safeParse(alert.endsAt);
    const note = alert.annotations.summary || alert.annotations.description || alert.labels.alertname;
    const { created } = await resolveEmergency(ctx, caller, org.id, open.id, {
      ...(ended.success && ended.data > alert.startsAt ? { resolvedAt: ended.data } : {}),
      resolutionNote: clip(`Resolved in Alertmanager${note ? `: ${note}` : ''}`, 4000),
      resolvedBy: { id: 'alertmanager', name: clip(payload.receiver || 'Alertmanager', 256) },
    });
    if (created) result.resolved++;
    else result.unchanged++;
  }
  // Each alert is a unit of work of its own, and a repeat changes nothing: the answer is stored last, in a unit of its own.
  return write.idempotency ? inTransaction(ctx.db, async () => result, write.idempotency) : result;
}
