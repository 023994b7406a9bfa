import type { AppContext } from '../../context.js';
import { authorize } from '../access/authorize.js';
import type { Caller } from '../access/principal.js';
import { CURSOR_SHAPES, decodeCursor, paginate } from '../shared/cursor.js';
import { fromJson } from '../shared/json.js';
import type { Page } from '../shared/schema.js';
import type { AuditLogEntry, ListAuditLogsQuery } from './schema.js';

/** Newest first. */
export async function listAuditLogs(ctx: AppContext, caller: Caller, orgId: string, params: ListAuditLogsQuery): Promise<Page<AuditLogEntry>> {
  await authorize(ctx, caller, orgId, 'audit:read');
  let query = ctx.db.db.selectFrom('audit_logs').selectAll().where('org_id', '=', orgId);
  if (params.eventCategory) query = query.where('event_category', '=', params.eventCategory);
  if (params.eventType) query = query.where('event_type', '=', params.eventType);
  if (params.actorId) query = query.where('actor_id', '=', params.actorId);
  if (params.since) query = query.where('occurred_at', '>=', params.since);
  if (params.until) query = query.where('occurred_at', '<', params.until);
  if (params.cursor) {
    const [at, id] = decodeCursor(params.cursor, CURSOR_SHAPES.byOccurrence);
    query = query.where((eb) => eb.or([eb('occurred_at', '<', at!), eb.and([eb('occurred_at', '=', at!), eb('id', '<', id!)])]));
  }
  const rows = await query
    .orderBy('occurred_at', 'desc')
    .orderBy('id', 'desc')
    .limit(params.limit + 1)
    .execute();
  return paginate(
    rows,
    params.limit,
    (r) => ({
      auditLogId: r.id,
      orgId: r.org_id,
      occurredAt: r.occurred_at,
      eventCategory: r.event_category,
      eventType: r.event_type,
      actor:
        r.actor_key_id === null
          ? { type: r.actor_type, id: r.actor_id, name: r.actor_name }
          : r.actor_type === 'oauth_client'
            ? { type: r.actor_type, id: r.actor_id, name: r.actor_name, clientId: r.actor_id, keyId: r.actor_key_id }
            : { type: r.actor_type, id: r.actor_id, name: r.actor_name, keyId: r.actor_key_id },
      resource: { type: r.resource_type, id: r.resource_id },
      requestId: r.request_id,
      details: fromJson<Record<string, unknown>>(r.details),
    }),
    (r) => [r.occurred_at, r.id],
  );
}
