import type { Tx } from '../../db/connect.js';
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

export function principalActor(principal: Principal): { type: string; id: string; name: string | null; keyId: string | null } {
  if (principal.kind === 'operator') return { type: 'operator', id: 'cli', name: principal.name, keyId: null };
  // An OAuth client is named with the key its grant was approved with.
  if (principal.kind === 'api_key' && principal.oauth) {
    return { type: 'oauth_client', id: principal.oauth.clientId, name: principal.oauth.clientName, keyId: principal.keyId };
  }
  // A monitoring integration is named as itself; through an API key (Alertmanager), with that key.
  if (principal.integration) {
    const { kind, id, name } = principal.integration;
    return { type: 'integration', id: `${kind}:${id}`, name, keyId: kind === 'pagerduty' ? null : principal.keyId };
  }
  return { type: principal.kind, id: principal.keyId, name: principal.keyName, keyId: null };
}

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
    actor_key_id: actor.keyId,
    resource_type: entry.resource.type,
    resource_id: entry.resource.id,
    request_id: caller.requestId ?? null,
    details: toJson(entry.details ?? null),
  };
}

/** Records an audit entry in the caller's unit of work, so it commits (or not) with the change. */
export function recordAudit(tx: Pick<Tx, 'audit'>, caller: Caller, entry: AuditInput): void {
  tx.audit.record(auditRow(caller, entry));
}
