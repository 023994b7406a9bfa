import type { Tx } from '../../db/connect.js';
import { preparedQuery } from '../../db/prepared.js';
import type { Caller, Principal } from '../access/principal.js';
import { newId, nowIso } from '../shared/ids.js';
import { toJson } from '../shared/json.js';

export interface AuditInput {
  orgId: string;
  eventCategory: string;
  eventType: string;
  resource: { type: string; id: string };
  details?: Record<string, unknown>;
  occurredAt?: string;
}

export function principalActor(principal: Principal): { type: string; id: string; name: string } {
  return principal.kind === 'api_key'
    ? { type: 'api_key', id: principal.keyId, name: principal.keyName }
    : { type: 'operator', id: 'cli', name: principal.name };
}

const insertAudit = preparedQuery((db, p) =>
  db.insertInto('audit_logs').values({
    id: p('id'),
    org_id: p('org_id'),
    occurred_at: p('occurred_at'),
    event_category: p('event_category'),
    event_type: p('event_type'),
    actor_type: p('actor_type'),
    actor_id: p('actor_id'),
    actor_name: p('actor_name'),
    resource_type: p('resource_type'),
    resource_id: p('resource_id'),
    request_id: p('request_id'),
    details: p('details'),
  }),
);

/** The audit_logs row of an entry (also written by statements that insert it along with other rows). */
export function auditRow(caller: Caller, entry: AuditInput) {
  const actor = principalActor(caller.principal);
  return {
    id: newId(),
    org_id: entry.orgId,
    occurred_at: entry.occurredAt ?? nowIso(),
    event_category: entry.eventCategory,
    event_type: entry.eventType,
    actor_type: actor.type,
    actor_id: actor.id,
    actor_name: actor.name,
    resource_type: entry.resource.type,
    resource_id: entry.resource.id,
    request_id: caller.requestId ?? null,
    details: toJson(entry.details ?? null),
  };
}

/** Appends an audit entry inside the caller's transaction, so it commits (or not) with the change. */
export async function recordAudit(tx: Tx, caller: Caller, entry: AuditInput): Promise<void> {
  await insertAudit.execute(tx, auditRow(caller, entry));
}
