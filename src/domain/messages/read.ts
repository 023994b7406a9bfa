import type { AppContext } from '../../context.js';
import { AppError } from '../../errors.js';
import { authorize } from '../access/authorize.js';
import type { Caller } from '../access/principal.js';
import { existingEmergencyId } from '../emergencies/not-found.js';
import { BY_CREATION, encodeCursor, keysetPage } from '../shared/cursor.js';
import { isUuid } from '../shared/ids.js';
import { itemsThatFit } from '../shared/page-bytes.js';
import type { Page } from '../shared/schema.js';
import { toMessageRecord } from './repo.js';
import type { MessageRecord } from './schema.js';

/** `GET .../messages`: the emergency's conversation, oldest first, each message with its attachments. */
export async function listMessages(
  ctx: AppContext,
  caller: Caller,
  orgId: string,
  emergencyId: string,
  params: { cursor?: string; limit: number },
): Promise<Page<MessageRecord>> {
  const org = await authorize(ctx, caller, orgId, 'emergencies:read');
  const id = await existingEmergencyId(ctx.db.db, org.id, emergencyId);
  const page = await keysetPage(
    ctx.db.db.selectFrom('messages').selectAll().where('org_id', '=', org.id).where('emergency_id', '=', id),
    BY_CREATION,
    params,
    (m) => m,
  );
  const attachments =
    page.items.length === 0
      ? []
      : await ctx.db.db
          .selectFrom('attachments')
          .selectAll()
          .where('org_id', '=', org.id)
          .where(
            'message_id',
            'in',
            page.items.map((m) => m.id),
          )
          .orderBy('position')
          .execute();
  const items = page.items.map((m) =>
    toMessageRecord(
      ctx.config,
      m,
      attachments.filter((a) => a.message_id === m.id),
    ),
  );
  // Attachments count toward the page's size budget too (extensions.md §9): cut again once they are in.
  const kept = itemsThatFit(items);
  if (kept === items.length) return { items, nextCursor: page.nextCursor };
  return { items: items.slice(0, kept), nextCursor: encodeCursor(BY_CREATION.keyOf(page.items[kept - 1]!)) };
}

/**
 * `GET .../attachments/{attachment_id}/content`: an inline attachment's bytes, for clients without a public media URL (e.g. the
 * console's thumbnails). A link attachment has none: 404, its `url` is where it lives.
 */
export async function attachmentContent(
  ctx: AppContext,
  caller: Caller,
  orgId: string,
  emergencyId: string,
  attachmentId: string,
): Promise<{ bytes: Buffer; mimeType: string }> {
  const org = await authorize(ctx, caller, orgId, 'emergencies:read');
  const id = await existingEmergencyId(ctx.db.db, org.id, emergencyId);
  const row = isUuid(attachmentId)
    ? await ctx.db.db
        .selectFrom('attachments as a')
        .innerJoin('messages as m', (j) => j.onRef('m.id', '=', 'a.message_id').onRef('m.org_id', '=', 'a.org_id'))
        .select(['a.storage_key', 'a.mime_type'])
        .where('a.org_id', '=', org.id)
        .where('m.emergency_id', '=', id)
        .where('a.id', '=', attachmentId.toLowerCase())
        .executeTakeFirst()
    : undefined;
  if (!row?.storage_key) throw new AppError('not_found', `No stored attachment ${attachmentId} in this emergency.`);
  const bytes = await ctx.attachments.get(row.storage_key);
  if (!bytes) throw new AppError('not_found', `The bytes of attachment ${attachmentId} are not in the attachment store.`);
  return { bytes, mimeType: row.mime_type ?? 'application/octet-stream' };
}
