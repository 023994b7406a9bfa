import type { Kysely } from 'kysely';
import { z } from 'zod';
import type { AppContext } from '../../context.js';
import { inTransaction } from '../../db/connect.js';
import type { Database } from '../../db/types.js';
import type { WriteOptions } from '../../db/unit-of-work.js';
import { fieldError } from '../../errors.js';
import { requireReach } from '../access/admin-scope.js';
import type { Caller } from '../access/principal.js';
import { recordAudit } from '../audit/record.js';
import { findCategory } from '../categories/repo.js';
import { isUuid, nowIso } from '../shared/ids.js';
import { fromJson, toJson } from '../shared/json.js';
import { timestamp, uuid } from '../shared/schema.js';
import { placeOfOrg } from '../tenancy/places.js';

/**
 * How the alerts of one monitoring integration pick their category in one org (extensions §12): a field of the alert (an
 * Alertmanager label, a PagerDuty payload field) whose value is looked up in the org's map, else matched to a category's name
 * case-insensitively, else Uncategorized.
 */

export const MAPPED_INTEGRATIONS = ['alertmanager', 'pagerduty'] as const;
export type MappedIntegration = (typeof MAPPED_INTEGRATIONS)[number];

/** The PagerDuty payload fields that may pick the category (the free-text ones, summary and custom_details, may not). */
export const PAGERDUTY_CATEGORY_FIELDS = ['severity', 'class', 'component', 'group', 'source'] as const;
const DEFAULT_FIELD = 'severity';
const MAX_ENTRIES = 200;

/** A map's key: the value trimmed, lower case, so that `Critical` and `critical ` are one entry. */
const valueKey = (value: string) => value.trim().toLowerCase();

export const categoryMappingInput = z
  .strictObject({
    categoryField: z
      .string()
      .trim()
      .min(1)
      .max(128)
      .optional()
      .describe(
        `The field whose value picks the category: an Alertmanager label name, or one of ${PAGERDUTY_CATEGORY_FIELDS.join(', ')} ` +
          `of a PagerDuty event's payload. Default ${DEFAULT_FIELD}.`,
      ),
    categoryMap: z
      .record(z.string().trim().min(1).max(256), z.string().trim().min(1).max(256).nullable())
      .optional()
      .describe(
        "Entries to set: a field value (case-insensitive) → a category of the organization, by id or name; null removes the value's " +
          `entry. Entries not named stay. At most ${MAX_ENTRIES} entries.`,
      ),
  })
  .refine((v) => v.categoryField !== undefined || v.categoryMap !== undefined, 'name at least one of categoryField, categoryMap');

export const categoryMappingRecord = z
  .object({
    orgId: uuid,
    integration: z.enum(MAPPED_INTEGRATIONS),
    categoryField: z.string(),
    categoryMap: z
      .array(z.object({ value: z.string().describe('Lower case.'), categoryId: uuid, categoryName: z.string() }))
      .describe('Values without an entry land in the category of that name, else in Uncategorized.'),
    updatedAt: timestamp.nullable().describe('null: never set (the defaults).'),
  })
  .meta({ id: 'IntegrationCategoryMapping' });
export type CategoryMappingRecord = z.infer<typeof categoryMappingRecord>;

interface Stored {
  field: string;
  map: Record<string, string>;
  updatedAt: string | null;
}

async function storedMapping(db: Kysely<Database>, orgId: string, integration: MappedIntegration): Promise<Stored> {
  const row = await db
    .selectFrom('integration_settings')
    .select(['category_field', 'category_map', 'updated_at'])
    .where('org_id', '=', orgId)
    .where('kind', '=', integration)
    .executeTakeFirst();
  return row
    ? { field: row.category_field, map: fromJson<Record<string, string>>(row.category_map) ?? {}, updatedAt: row.updated_at }
    : { field: DEFAULT_FIELD, map: {}, updatedAt: null };
}

async function recordOf(db: Kysely<Database>, orgId: string, integration: MappedIntegration, stored: Stored): Promise<CategoryMappingRecord> {
  const ids = [...new Set(Object.values(stored.map))];
  const names = ids.length
    ? new Map(
        (await db.selectFrom('categories').select(['id', 'name']).where('org_id', '=', orgId).where('id', 'in', ids).execute()).map((c) => [c.id, c.name]),
      )
    : new Map<string, string>();
  return {
    orgId,
    integration,
    categoryField: stored.field,
    // An entry whose category was deleted since is left out: its value falls back to the name match.
    categoryMap: Object.entries(stored.map)
      .filter(([, id]) => names.has(id))
      .map(([value, categoryId]) => ({ value, categoryId, categoryName: names.get(categoryId)! }))
      .sort((a, b) => a.value.localeCompare(b.value)),
    updatedAt: stored.updatedAt,
  };
}

export async function getCategoryMapping(ctx: AppContext, caller: Caller, orgId: string, integration: MappedIntegration): Promise<CategoryMappingRecord> {
  const place = await placeOfOrg(ctx.db.db, orgId);
  requireReach(caller, place);
  return recordOf(ctx.db.db, place.orgId, integration, await storedMapping(ctx.db.db, place.orgId, integration));
}

/** Sets the field and entries of the map (null removes an entry), with an audit entry in the org's log. */
export async function updateCategoryMapping(
  ctx: AppContext,
  caller: Caller,
  orgId: string,
  integration: MappedIntegration,
  raw: unknown,
  write: WriteOptions = {},
): Promise<CategoryMappingRecord> {
  const input = categoryMappingInput.parse(raw);
  if (integration === 'pagerduty' && input.categoryField !== undefined && !(PAGERDUTY_CATEGORY_FIELDS as readonly string[]).includes(input.categoryField)) {
    throw fieldError(['body', 'categoryField'], `must be one of ${PAGERDUTY_CATEGORY_FIELDS.join(', ')} for PagerDuty events`);
  }
  return inTransaction(
    ctx.db,
    async (tx) => {
      const place = await placeOfOrg(tx.db, orgId);
      requireReach(caller, place);
      const before = await storedMapping(tx.db, place.orgId, integration);
      const map = { ...before.map };
      for (const [value, category] of Object.entries(input.categoryMap ?? {})) {
        if (category === null) {
          delete map[valueKey(value)];
          continue;
        }
        const found = await findCategory(tx.db, place.orgId, isUuid(category) ? { categoryId: category } : { categoryName: category });
        if (!found) throw fieldError(['body', 'categoryMap', value], `names no category of this organization: ${category}`);
        map[valueKey(value)] = found.id;
      }
      if (Object.keys(map).length > MAX_ENTRIES) throw fieldError(['body', 'categoryMap'], `at most ${MAX_ENTRIES} entries`);
      const next: Stored = { field: input.categoryField ?? before.field, map, updatedAt: nowIso() };
      const values = { category_field: next.field, category_map: toJson(next.map)!, updated_at: next.updatedAt! };
      await tx.db
        .insertInto('integration_settings')
        .values({ org_id: place.orgId, kind: integration, ...values })
        .onConflict((oc) => oc.columns(['org_id', 'kind']).doUpdateSet(values))
        .execute();
      const record = await recordOf(tx.db, place.orgId, integration, next);
      recordAudit(tx, caller, {
        orgId: place.orgId,
        eventCategory: 'integration',
        eventType: 'integration_mapping.updated',
        resource: { type: 'integration', id: integration },
        details: { categoryField: record.categoryField, categoryMap: Object.fromEntries(record.categoryMap.map((e) => [e.value, e.categoryName])) },
      });
      return record;
    },
    write.idempotency,
  );
}

/**
 * The category an alert lands in: its field's value by the org's map, else the category of that name, else none (the declare
 * then puts it in Uncategorized). `fieldOf` reads the mapped field from the alert.
 */
export async function categoryForAlert(
  db: Kysely<Database>,
  orgId: string,
  integration: MappedIntegration,
  fieldOf: (field: string) => string | undefined,
): Promise<string | undefined> {
  const stored = await storedMapping(db, orgId, integration);
  const value = fieldOf(stored.field)?.trim();
  if (!value) return undefined;
  const mapped = stored.map[valueKey(value)];
  const category = await findCategory(db, orgId, mapped ? { categoryId: mapped } : { categoryName: value.slice(0, 256) });
  if (category) return category.id;
  // A mapped category deleted since: the value's name match, as if it had no entry.
  return mapped ? (await findCategory(db, orgId, { categoryName: value.slice(0, 256) }))?.id : undefined;
}
