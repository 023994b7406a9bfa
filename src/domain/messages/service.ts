import type { WriteOptions } from '../../db/unit-of-work.js';
import { createHash } from 'node:crypto';
import type { AppContext } from '../../context.js';
import { isUniqueViolation } from '../../db/connect.js';
import type { Kysely } from 'kysely';
import type { AttachmentTable, Database, MessageDedupeTable, MessageTable } from '../../db/types.js';
import type { Writes } from '../../db/unit-of-work.js';
import { AppError } from '../../errors.js';
import { authorize } from '../access/authorize.js';
import type { Caller } from '../access/principal.js';
import { type PreparedAttachment, type PreparedInline, prepareAttachment } from '../attachments/prepare.js';
import { recordAudit } from '../audit/record.js';
import { emergencyNotFound } from '../emergencies/not-found.js';
import { isUuid, newId, nowIso } from '../shared/ids.js';
import { emergencyExists, ensureConversation, findConversation, findDedupe, loadMessage, toMessageRecord } from './repo.js';
import { DecodedPost } from './decoded-post.js';
import type { MessageRecord, PostMessageInput } from './schema.js';

export interface PostedMessage {
  message: MessageRecord;
  /** False when an identical all-inline message inside the dedupe window was returned instead. */
  created: boolean;
}

/**
 * Posts a message into the emergency's conversation. Attachments are checked, then stored, and only then is the message written
 * with its audit entry in one transaction, so a storage failure leaves no message behind.
 */
export async function postMessage(
  ctx: AppContext,
  caller: Caller,
  orgIdParam: string,
  emergencyIdParam: string,
  post: PostMessageInput | DecodedPost,
  write: WriteOptions = {},
): Promise<PostedMessage> {
  const input = post instanceof DecodedPost ? post.input : post;
  const orgId = (await authorize(ctx, caller, orgIdParam, 'messages:write')).id;
  const emergencyId = emergencyIdParam.toLowerCase();
  if (!isUuid(emergencyId)) throw emergencyNotFound(emergencyIdParam);
  // After the first post the conversation is known (remembered, or one read) and so is the emergency's
  // existence: the write then needs no lookup of its own inside the transaction.
  const knownConversation = await findConversation(ctx.db.db, orgId, emergencyId);
  if (!knownConversation && !(await emergencyExists(ctx.db.db, orgId, emergencyId))) throw emergencyNotFound(emergencyIdParam);

  const prepared = post instanceof DecodedPost ? post.attachments() : await prepareAll(input);

  const dedupeKey = dedupeKeyOf(ctx, emergencyId, input, prepared);
  // Cheap early answer for a repeat: no need to store the bytes again.
  let seen: DedupeState = dedupeKey ? await dedupeState(ctx, ctx.db.db, orgId, dedupeKey) : { replay: null, staleMessageId: null };
  if (seen.replay) return { message: seen.replay, created: false };

  const storageKeys = await storeInline(ctx, prepared);

  const now = nowIso();
  const messageId = newId();
  const newMessage = (conversationId: string) => {
    const message: MessageTable = {
      id: messageId,
      org_id: orgId,
      conversation_id: conversationId,
      emergency_id: emergencyId,
      content: input.content,
      source: input.author?.type ?? null,
      author_name: input.author?.name ?? null,
      created_at: now,
    };
    const attachments = prepared.map((a, position) => attachmentRow(a, position, storageKeys[position] ?? null, orgId, messageId, now));
    const dedupe = dedupeKey ? { org_id: orgId, dedupe_key: dedupeKey, message_id: messageId, created_at: now } : null;
    return { message, attachments, dedupe, posted: { message: toMessageRecord(ctx.config, message, attachments), created: true } };
  };

  // A concurrent identical post can win the dedupe row between our check and our insert: its primary
  // key then fails our write whole, and the winner's message is the answer.
  for (let attempt = 1; ; attempt++) {
    try {
      // The common post (the conversation exists, no expired dedupe row to replace) reads nothing in its
      // transaction: its rows are recorded and written as one unit (one statement on PostgreSQL).
      if (knownConversation && !seen.staleMessageId) {
        const { message, attachments, dedupe, posted } = newMessage(knownConversation);
        await ctx.db.commit((writes) => recordPost(writes, caller, message, attachments, dedupe), posted, write.idempotency);
        return posted;
      }
      return await ctx.db.unitOfWork(async (tx) => {
        if (dedupeKey) {
          const current = await dedupeState(ctx, tx.db, orgId, dedupeKey);
          if (current.replay) return { message: current.replay, created: false };
          if (current.staleMessageId) {
            await tx.db
              .deleteFrom('message_dedupe')
              .where('org_id', '=', orgId)
              .where('dedupe_key', '=', dedupeKey)
              .where('message_id', '=', current.staleMessageId)
              .execute();
          }
        }
        const { message, attachments, dedupe, posted } = newMessage(knownConversation ?? (await ensureConversation(tx, orgId, emergencyId)));
        recordPost(tx, caller, message, attachments, dedupe);
        return posted;
      }, write.idempotency);
    } catch (err) {
      if (!dedupeKey || attempt >= 3 || !isUniqueViolation(err)) throw err;
      seen = await dedupeState(ctx, ctx.db.db, orgId, dedupeKey);
      if (seen.replay) return { message: seen.replay, created: false };
    }
  }
}

async function prepareAll(input: PostMessageInput): Promise<PreparedAttachment[]> {
  const prepared: PreparedAttachment[] = [];
  for (const [index, spec] of input.attachments.entries()) {
    prepared.push(await prepareAttachment(spec, index));
    // The text of inline media (megabytes of base64) is not needed once decoded: let it go now
    // rather than when the request ends, so a large post never holds its text and its bytes at once.
    spec.src = '';
  }
  return prepared;
}

/** The rows of a post: the message, its attachments, its dedupe row (all-inline posts) and its audit entry. */
function recordPost(
  writes: Pick<Writes, 'messages' | 'audit'>,
  caller: Caller,
  message: MessageTable,
  attachments: AttachmentTable[],
  dedupe: MessageDedupeTable | null,
): void {
  writes.messages.insert(message, attachments, dedupe);
  recordAudit(writes, caller, {
    orgId: message.org_id,
    eventCategory: 'message',
    eventType: 'message.posted',
    occurredAt: message.created_at,
    resource: { type: 'message', id: message.id },
    details: {
      emergencyId: message.emergency_id,
      conversationId: message.conversation_id,
      source: message.source,
      attachments: attachments.map((a) => ({ kind: a.kind, mimeType: a.mime_type, source: a.source, sizeBytes: a.size_bytes })),
    },
  });
}

/**
 * Only messages whose attachments are all inline bytes are deduplicated (decisions.md): the key covers
 * the emergency, the author, the content, each attachment's SHA-256 in order and the captions.
 */
function dedupeKeyOf(ctx: AppContext, emergencyId: string, input: PostMessageInput, prepared: PreparedAttachment[]): string | null {
  if (ctx.config.MESSAGE_DEDUPE_WINDOW_SECONDS === 0) return null;
  if (prepared.length === 0 || !prepared.every((a): a is PreparedInline => a.form === 'inline')) return null;
  const material = JSON.stringify([
    emergencyId,
    input.author?.type ?? null,
    input.author?.name ?? null,
    input.content,
    prepared.map((a) => [(a as PreparedInline).sha256, a.caption]),
  ]);
  return createHash('sha256').update(material).digest('hex');
}

function isFresh(ctx: AppContext, createdAt: string): boolean {
  return Date.now() - Date.parse(createdAt) < ctx.config.MESSAGE_DEDUPE_WINDOW_SECONDS * 1000;
}

/** What the dedupe window holds for a key: the message to answer with when fresh, else the row in the way (expired, or its message gone). */
interface DedupeState {
  replay: MessageRecord | null;
  staleMessageId: string | null;
}

async function dedupeState(ctx: AppContext, db: Kysely<Database>, orgId: string, dedupeKey: string): Promise<DedupeState> {
  const existing = await findDedupe(db, orgId, dedupeKey);
  if (!existing) return { replay: null, staleMessageId: null };
  const replay = isFresh(ctx, existing.createdAt) ? await loadMessage(db, ctx.config, orgId, existing.messageId) : null;
  return { replay, staleMessageId: replay ? null : existing.messageId };
}

/** Stores every inline attachment; returns the object key per position (null for links). */
async function storeInline(ctx: AppContext, prepared: PreparedAttachment[]): Promise<(string | null)[]> {
  try {
    return await Promise.all(
      prepared.map((a) =>
        a.form === 'inline' ? ctx.attachments.put({ sha256: a.sha256, bytes: a.bytes, mimeType: a.mimeType, extension: a.extension }) : null,
      ),
    );
  } catch (err) {
    throw new AppError('unavailable', 'Attachment storage is unavailable; no message was created. Retry later.', {}, { cause: err });
  }
}

function attachmentRow(a: PreparedAttachment, position: number, storageKey: string | null, orgId: string, messageId: string, now: string): AttachmentTable {
  const common = { id: newId(), org_id: orgId, message_id: messageId, position, kind: a.kind, mime_type: a.mimeType, caption: a.caption, created_at: now };
  if (a.form === 'link') {
    return { ...common, source: 'url', link_url: a.url, storage_key: null, sha256: null, size_bytes: null, width: null, height: null };
  }
  return {
    ...common,
    source: a.source,
    link_url: null,
    storage_key: storageKey,
    sha256: a.sha256,
    size_bytes: a.bytes.length,
    width: a.width,
    height: a.height,
  };
}
