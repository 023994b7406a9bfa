import type { Kysely } from 'kysely';
import { LRUCache } from 'lru-cache';
import type { Config } from '../../config.js';
import type { Tx } from '../../db/connect.js';
import type { AttachmentTable, Database, MessageTable } from '../../db/types.js';
import { publicUrlOf } from '../attachments/store.js';
import { newId, nowIso } from '../shared/ids.js';
import type { AttachmentRecord, MessageRecord } from './schema.js';

export async function emergencyExists(db: Kysely<Database>, orgId: string, emergencyId: string): Promise<boolean> {
  const row = await db.selectFrom('emergencies').select('id').where('org_id', '=', orgId).where('id', '=', emergencyId).executeTakeFirst();
  return row !== undefined;
}

/** Conversation ids by org and emergency: a committed conversation never changes, so a hit answers without a read (see rememberConversation). */
const conversations = new LRUCache<string, string>({ max: 50_000 });

/** The emergency's conversation id, when a message was posted before; finding it also proves the emergency exists. */
export async function findConversation(db: Kysely<Database>, orgId: string, emergencyId: string): Promise<string | undefined> {
  const cached = conversations.get(`${orgId}/${emergencyId}`);
  if (cached) return cached;
  const row = await db.selectFrom('conversations').select('id').where('org_id', '=', orgId).where('emergency_id', '=', emergencyId).executeTakeFirst();
  if (row) rememberConversation(orgId, emergencyId, row.id);
  return row?.id;
}

/** Call once the conversation's row has committed (a rolled-back one must never be remembered). */
function rememberConversation(orgId: string, emergencyId: string, conversationId: string): void {
  conversations.set(`${orgId}/${emergencyId}`, conversationId);
}

/** The emergency's conversation, created on first use; concurrent first posts end up sharing one. */
export async function ensureConversation(tx: Tx, orgId: string, emergencyId: string): Promise<string> {
  await tx.db
    .insertInto('conversations')
    .values({ id: newId(), org_id: orgId, emergency_id: emergencyId, created_at: nowIso() })
    .onConflict((oc) => oc.columns(['org_id', 'emergency_id']).doNothing())
    .execute();
  // Read from the table, not the cache: the row may be this transaction's own, not yet committed.
  const row = await tx.db
    .selectFrom('conversations')
    .select('id')
    .where('org_id', '=', orgId)
    .where('emergency_id', '=', emergencyId)
    .executeTakeFirstOrThrow();
  tx.afterCommit(() => rememberConversation(orgId, emergencyId, row.id));
  return row.id;
}

export async function loadMessage(db: Kysely<Database>, config: Config, orgId: string, messageId: string): Promise<MessageRecord | null> {
  const message = await db.selectFrom('messages').selectAll().where('org_id', '=', orgId).where('id', '=', messageId).executeTakeFirst();
  if (!message) return null;
  const attachments = await db
    .selectFrom('attachments')
    .selectAll()
    .where('org_id', '=', orgId)
    .where('message_id', '=', messageId)
    .orderBy('position')
    .execute();
  return toMessageRecord(config, message, attachments);
}

/** The one place rows become the public Message, for new posts and deduplicated replays alike. */
export function toMessageRecord(config: Config, message: MessageTable, attachments: AttachmentTable[]): MessageRecord {
  return {
    messageId: message.id,
    conversationId: message.conversation_id,
    content: message.content,
    source: message.source as MessageRecord['source'],
    createdAt: message.created_at,
    attachments: attachments.map((a) => toAttachmentRecord(config, a)),
  };
}

function toAttachmentRecord(config: Config, row: AttachmentTable): AttachmentRecord {
  return {
    attachmentId: row.id,
    kind: row.kind,
    mimeType: row.mime_type,
    // Stored media: the URL is assembled when read, so a change of CDN applies to every message.
    url: row.link_url ?? (row.storage_key ? publicUrlOf(config, row.storage_key) : null),
    source: row.source as AttachmentRecord['source'],
    sizeBytes: row.size_bytes,
    caption: row.caption,
    width: row.width,
    height: row.height,
  };
}

export type DedupeLookup = { messageId: string; createdAt: string } | undefined;

export async function findDedupe(db: Kysely<Database>, orgId: string, key: string): Promise<DedupeLookup> {
  const row = await db
    .selectFrom('message_dedupe')
    .select(['message_id', 'created_at'])
    .where('org_id', '=', orgId)
    .where('dedupe_key', '=', key)
    .executeTakeFirst();
  return row && { messageId: row.message_id, createdAt: row.created_at };
}
