import { z } from 'zod';
import { ATTACHMENT_KINDS } from '../attachments/media-type.js';
import { timestamp, uuid } from '../shared/schema.js';

export const MAX_ATTACHMENTS = 5;
const ATTACHMENT_SOURCE_KEYS = ['src', 'content', 'url', 'data'] as const;
const ATTACHMENT_TYPE_KEYS = ['type', 'mimeType', 'kind'] as const;

/** One attachment as the caller gave it, after aliases are resolved. */
export interface AttachmentSpec {
  src: string;
  type: string | null;
  caption: string | null;
}

function issue(ctx: z.RefinementCtx, path: (string | number)[], message: string, type: string): void {
  ctx.addIssue({ code: 'custom', path, message, params: { type } });
}

/** The first alias present (not undefined or null) wins, in the spec's order. */
function firstPresent(item: Record<string, unknown>, keys: readonly string[]): [string, unknown] | undefined {
  for (const key of keys) if (item[key] !== undefined && item[key] !== null) return [key, item[key]];
  return undefined;
}

function optionalText(ctx: z.RefinementCtx, path: (string | number)[], value: unknown, max: number): string | null | undefined {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') return void issue(ctx, path, 'Input should be a valid string', 'string_type');
  if (value.length > max) return void issue(ctx, path, `String should have at most ${max} characters`, 'too_long');
  return value;
}

function parseItem(ctx: z.RefinementCtx, value: unknown, path: (string | number)[]): AttachmentSpec | undefined {
  if (typeof value === 'string') {
    if (value.length === 0) return void issue(ctx, path, 'String should have at least 1 character', 'too_short');
    return { src: value, type: null, caption: null };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return void issue(ctx, path, 'Input should be an object with src, or a string', 'model_type');
  }
  const item = value as Record<string, unknown>;
  const source = firstPresent(item, ATTACHMENT_SOURCE_KEYS);
  let src: string | undefined;
  if (!source) issue(ctx, [...path, 'src'], 'Field required', 'missing');
  else if (typeof source[1] !== 'string') issue(ctx, [...path, source[0]], 'Input should be a valid string', 'string_type');
  else if (source[1].length === 0) issue(ctx, [...path, source[0]], 'String should have at least 1 character', 'too_short');
  else src = source[1];
  const typeEntry = firstPresent(item, ATTACHMENT_TYPE_KEYS);
  const type = optionalText(ctx, [...path, typeEntry?.[0] ?? 'type'], typeEntry?.[1], 255);
  const caption = optionalText(ctx, [...path, 'caption'], item.caption, 512);
  if (src === undefined || type === undefined || caption === undefined) return undefined;
  return { src, type, caption };
}

/**
 * `attachments` (or its alias `attachment`): a list, a single item, or a bare string outside a
 * list. Unknown keys inside an item are ignored. Issues point at the alias actually used.
 */
const attachmentsField = (description: string) =>
  z
    .unknown()
    .transform((value, ctx): AttachmentSpec[] => {
      if (value === undefined || value === null) return [];
      const items = Array.isArray(value) ? value : [value];
      if (items.length > MAX_ATTACHMENTS) {
        issue(ctx, [], `List should have at most ${MAX_ATTACHMENTS} items, not ${items.length}`, 'too_long');
        return z.NEVER;
      }
      const out: AttachmentSpec[] = [];
      items.forEach((item, index) => {
        const parsed = parseItem(ctx, item, Array.isArray(value) ? [index] : []);
        if (parsed) out.push(parsed);
      });
      return out.length === items.length ? out : z.NEVER;
    })
    .optional()
    .meta({
      description,
      oneOf: [
        {
          type: 'array',
          maxItems: MAX_ATTACHMENTS,
          items: { oneOf: [{ $ref: '#/components/schemas/AttachmentItemInput' }, { type: 'string', minLength: 1 }] },
        },
        { $ref: '#/components/schemas/AttachmentItemInput' },
        { type: 'string', minLength: 1 },
        { type: 'null' },
      ],
    });

/**
 * Documentation of one attachment item (OpenAPI component `AttachmentItemInput`, referenced above);
 * registering the id is enough to publish it. Parsing is done by `attachmentsField` to honour the aliases.
 */
export const attachmentInputDoc = z
  .object({
    src: z.string().min(1).describe('Inline bytes (a data: URI or bare base64) or an https:// link. Aliases, first match wins: src, content, url, data.'),
    type: z
      .string()
      .max(255)
      .nullable()
      .optional()
      .describe(`A media type or a bare kind (${ATTACHMENT_KINDS.join(', ')}). Aliases: mimeType, kind. Ignored for inline bytes (the bytes decide).`),
    caption: z.string().max(512).nullable().optional().describe('Shown under the media.'),
  })
  .catchall(z.unknown())
  .meta({ id: 'AttachmentItem', description: 'AttachmentInput. Unknown fields are ignored.' });

export const authorInput = z
  .strictObject({
    type: z.enum(['agent', 'system', 'user']).describe('Becomes the message `source`.'),
    name: z.string().max(128).nullable().optional(),
  })
  .meta({ id: 'MessageAuthor' });

export const postMessageInput = z
  .strictObject({
    content: z.string().max(4000).nullable().optional().describe('Message text, at most 4000 characters.'),
    author: authorInput.optional(),
    attachments: attachmentsField(
      `At most ${MAX_ATTACHMENTS} AttachmentInput items. A single item, or a bare string (taken as src), outside a list is also accepted.`,
    ),
    attachment: attachmentsField('Singular alias of `attachments`, in the same forms.'),
  })
  .superRefine((body, ctx) => {
    if (body.attachments !== undefined && body.attachment !== undefined && body.attachments.length > 0 && body.attachment.length > 0) {
      issue(ctx, ['attachment'], 'Give attachments or its alias attachment, not both', 'value_error');
    }
  })
  .transform((body, ctx) => {
    const attachments = body.attachments?.length ? body.attachments : (body.attachment ?? []);
    const content = body.content ?? '';
    if (content.length === 0 && attachments.length === 0) {
      issue(ctx, ['content'], 'A message needs content or at least one attachment', 'value_error');
      return z.NEVER;
    }
    return {
      content,
      author: body.author ? { type: body.author.type, name: body.author.name ?? null } : null,
      attachments,
      /** Which field named the attachments, so rejections can say where `index` counts. */
      attachmentsField: body.attachments?.length ? 'attachments' : 'attachment',
    };
  })
  .meta({ id: 'PostMessageRequest' });

export type PostMessageInput = z.output<typeof postMessageInput>;

export const attachmentRecord = z
  .object({
    attachmentId: uuid,
    kind: z.enum(ATTACHMENT_KINDS as [string, ...string[]]),
    mimeType: z.string().nullable().describe('Verified from the bytes for stored media; the declared type for links (HLS: application/vnd.apple.mpegurl).'),
    url: z.string().nullable().describe('CDN URL of stored media (null when ATTACHMENT_PUBLIC_BASE_URL is unset), or the link as given.'),
    source: z.enum(['data_uri', 'base64', 'url']).nullable(),
    sizeBytes: z.number().int().nullable(),
    caption: z.string().nullable(),
    width: z.number().int().nullable(),
    height: z.number().int().nullable(),
  })
  .meta({ id: 'Attachment' });

export const messageRecord = z
  .object({
    messageId: uuid,
    conversationId: uuid,
    content: z.string(),
    source: z.enum(['agent', 'system', 'user']).nullable().describe('The author type given on input.'),
    createdAt: timestamp.nullable(),
    attachments: z.array(attachmentRecord),
  })
  .meta({ id: 'Message' });

export type AttachmentRecord = z.infer<typeof attachmentRecord>;
export type MessageRecord = z.infer<typeof messageRecord>;
