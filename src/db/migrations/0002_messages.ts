import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // One conversation per emergency, created on the first message.
  await db.schema
    .createTable('conversations')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('emergency_id', 'text', (c) => c.notNull().references('emergencies.id'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('conversations_org_emergency_uq').on('conversations').columns(['org_id', 'emergency_id']).unique().execute();

  await db.schema
    .createTable('messages')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('conversation_id', 'text', (c) => c.notNull().references('conversations.id'))
    .addColumn('emergency_id', 'text', (c) => c.notNull())
    .addColumn('content', 'text', (c) => c.notNull())
    .addColumn('source', 'text')
    .addColumn('author_name', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('messages_org_conversation_idx').on('messages').columns(['org_id', 'conversation_id', 'created_at']).execute();

  await db.schema
    .createTable('attachments')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('message_id', 'text', (c) => c.notNull().references('messages.id'))
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('mime_type', 'text')
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('link_url', 'text')
    .addColumn('storage_key', 'text')
    .addColumn('sha256', 'text')
    .addColumn('size_bytes', 'integer')
    .addColumn('caption', 'text')
    .addColumn('width', 'integer')
    .addColumn('height', 'integer')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('attachments_org_message_idx').on('attachments').columns(['org_id', 'message_id', 'position']).execute();

  // Deduplication of all-inline messages. The primary key makes two concurrent identical posts
  // collide in the database itself, on every instance: exactly one inserts, the other finds it.
  await db.schema
    .createTable('message_dedupe')
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('dedupe_key', 'text', (c) => c.notNull())
    .addColumn('message_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('message_dedupe_pk', ['org_id', 'dedupe_key'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['message_dedupe', 'attachments', 'messages', 'conversations']) {
    await db.schema.dropTable(table).ifExists().execute();
  }
}
