import type { Kysely } from 'kysely';
import type { Database, WebhookSubscriptionTable } from '../../db/types.js';
import type { OrgScope } from '../orgs/scope.js';
import { fromJson } from '../shared/json.js';

type Db = Kysely<Database>;

/** The organizations a subject reaches today (narrowed by allowedOrgIds). */
export async function coveredOrgIds(db: Db, subjectType: string, subjectId: string, allowed: string[] | null): Promise<string[]> {
  const column = subjectType === 'org' ? 'id' : subjectType === 'enterprise' ? 'enterprise_id' : 'partner_id';
  const rows = await db.selectFrom('orgs').select('id').where(column, '=', subjectId).orderBy('id').execute();
  return rows.map((r) => r.id).filter((id) => allowed === null || allowed.includes(id));
}

/** Active subscriptions whose subject is the org, its enterprise or its partner (allowedOrgIds checked by the caller). */
export async function activeSubscriptionsInTree(db: Db, org: OrgScope): Promise<WebhookSubscriptionTable[]> {
  return db
    .selectFrom('webhook_subscriptions')
    .selectAll()
    .where('status', '=', 'active')
    .where((eb) =>
      eb.or([
        eb.and([eb('subject_type', '=', 'org'), eb('subject_id', '=', org.id)]),
        eb.and([eb('subject_type', '=', 'enterprise'), eb('subject_id', '=', org.enterpriseId)]),
        eb.and([eb('subject_type', '=', 'partner'), eb('subject_id', '=', org.partnerId)]),
      ]),
    )
    .execute();
}

/**
 * Whether a subscription receives one event of an org in its tree: allowedOrgIds and the event-type
 * filter apply, and events written before the subscription existed are not sent (use replay for those).
 */
export function subscriptionWants(sub: WebhookSubscriptionTable, orgId: string, eventType: string, eventCreatedAt: string): boolean {
  const allowed = fromJson<string[]>(sub.allowed_org_ids);
  if (allowed !== null && !allowed.includes(orgId)) return false;
  const types = fromJson<string[]>(sub.event_types);
  if (types !== null && !types.includes(eventType)) return false;
  return sub.created_at <= eventCreatedAt;
}

export async function findSubscription(db: Db, id: string): Promise<WebhookSubscriptionTable | undefined> {
  return db.selectFrom('webhook_subscriptions').selectAll().where('id', '=', id.toLowerCase()).executeTakeFirst();
}
