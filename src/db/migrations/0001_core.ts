import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('partners')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('enterprises')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('partner_id', 'text', (c) => c.notNull().references('partners.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('orgs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('enterprise_id', 'text', (c) => c.notNull().references('enterprises.id'))
    .addColumn('partner_id', 'text', (c) => c.notNull().references('partners.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('event_offset', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.createIndex('orgs_enterprise_idx').on('orgs').column('enterprise_id').execute();
  await db.schema.createIndex('orgs_partner_idx').on('orgs').column('partner_id').execute();

  await db.schema
    .createTable('categories')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('orgs.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('color', 'text', (c) => c.notNull())
    .addColumn('response_level', 'text', (c) => c.notNull())
    .addColumn('severity', 'integer', (c) => c.notNull())
    .addColumn('is_system', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  // Category names are unique per org regardless of case, because declare accepts a name.
  await sql`create unique index categories_org_name_uq on categories (org_id, lower(name))`.execute(db);
  await db.schema.createIndex('categories_org_order_idx').on('categories').columns(['org_id', 'severity', 'name', 'id']).execute();

  await db.schema
    .createTable('users')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('orgs.id'))
    .addColumn('first_name', 'text', (c) => c.notNull())
    .addColumn('last_name', 'text', (c) => c.notNull())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('phone_number', 'text')
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('access_level', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('profile_photo_url', 'text')
    .addColumn('owned_device_id', 'text')
    .addColumn('owned_device_name', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('last_login_at', 'text')
    .execute();
  await db.schema.createIndex('users_org_order_idx').on('users').columns(['org_id', 'last_name', 'first_name', 'id']).execute();

  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('key_prefix', 'text', (c) => c.notNull().unique())
    .addColumn('secret_hash', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('subject_type', 'text', (c) => c.notNull())
    .addColumn('subject_id', 'text', (c) => c.notNull())
    .addColumn('allowed_org_ids', 'text')
    .addColumn('permissions', 'text', (c) => c.notNull())
    .addColumn('active_until', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('last_used_at', 'text')
    .addColumn('rotated_to', 'text')
    .execute();

  await db.schema
    .createTable('emergencies')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('orgs.id'))
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('external_id', 'text')
    .addColumn('category_id', 'text', (c) => c.notNull().references('categories.id'))
    .addColumn('source', 'text')
    .addColumn('description', 'text')
    .addColumn('occurred_at', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('declared_by', 'text', (c) => c.notNull())
    .addColumn('location', 'text')
    .addColumn('metadata', 'text')
    .addColumn('sequence', 'integer', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('emergencies_org_external_uq').on('emergencies').columns(['org_id', 'external_id']).unique().execute();
  await db.schema.createIndex('emergencies_org_occurred_idx').on('emergencies').columns(['org_id', 'occurred_at', 'id']).execute();

  await db.schema
    .createTable('emergency_resolutions')
    .addColumn('emergency_id', 'text', (c) => c.primaryKey().references('emergencies.id'))
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('resolved_at', 'text', (c) => c.notNull())
    .addColumn('resolved_by', 'text', (c) => c.notNull())
    .addColumn('resolution_note', 'text')
    .addColumn('metadata', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('stream_offset', 'integer', (c) => c.notNull())
    .addColumn('emergency_id', 'text', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('sequence', 'integer', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('events_org_offset_uq').on('events').columns(['org_id', 'stream_offset']).unique().execute();
  await db.schema.createIndex('events_emergency_seq_uq').on('events').columns(['emergency_id', 'sequence']).unique().execute();
  await db.schema.createIndex('events_created_idx').on('events').columns(['created_at']).execute();

  await db.schema
    .createTable('audit_logs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('occurred_at', 'text', (c) => c.notNull())
    .addColumn('event_category', 'text', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('actor_type', 'text', (c) => c.notNull())
    .addColumn('actor_id', 'text', (c) => c.notNull())
    .addColumn('actor_name', 'text')
    .addColumn('resource_type', 'text', (c) => c.notNull())
    .addColumn('resource_id', 'text', (c) => c.notNull())
    .addColumn('request_id', 'text')
    .addColumn('details', 'text')
    .execute();
  await db.schema.createIndex('audit_logs_org_time_idx').on('audit_logs').columns(['org_id', 'occurred_at', 'id']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['audit_logs', 'events', 'emergency_resolutions', 'emergencies', 'api_keys', 'users', 'categories', 'orgs', 'enterprises', 'partners']) {
    await db.schema.dropTable(table).ifExists().execute();
  }
}
