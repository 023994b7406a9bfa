import type { FastifyInstance, FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppContext } from '../../context.js';
import { MAX_INLINE_BYTES } from '../../domain/attachments/inline-decode.js';
import { ACCEPTED_INLINE_TYPES } from '../../domain/attachments/media-type.js';
import { DecodedPost } from '../../domain/messages/decoded-post.js';
import { messageRecord, postMessageInput } from '../../domain/messages/schema.js';
import { attachmentContent, listMessages } from '../../domain/messages/read.js';
import { postMessage } from '../../domain/messages/service.js';
import { pageOf } from '../../domain/shared/schema.js';
import { AppError } from '../../errors.js';
import { callerOf } from '../../edge/auth.js';
import { idempotencyHeaders, writeOptionsOf } from '../../edge/idempotency.js';
import { errorResponses, validationErrorResponse } from '../error-schemas.js';
import { closeUnreadBodies, largeBodyGate } from '../large-bodies.js';
import { attachmentBytesResponse } from '../media-responses.js';
import { readMessageBody } from '../message-body.js';
import { zodValidatorCompiler } from '../validation.js';
import { emergencyPath, pageQuery } from './params.js';

/** Request bodies of this route carry inline media, so it alone accepts up to 64 MiB. */
export const MESSAGE_BODY_LIMIT = 64 * 1024 * 1024;

const REJECT_CODES: Record<string, string> = {
  invalid_base64: 'the inline bytes (bare or in a ;base64 data URI) are not valid base64',
  invalid_data_uri: 'the data: URI is malformed (no comma, bad header or bad percent-encoding)',
  empty_content: 'the inline bytes decode to nothing',
  too_large: `the inline bytes exceed ${MAX_INLINE_BYTES} bytes (10 MiB) once decoded`,
  unsupported_media_type: `the bytes are not one of ${ACCEPTED_INLINE_TYPES.join(', ')} (decided by magic bytes), or a link's declared type is neither a media type nor a kind`,
  invalid_url: 'the link is not an absolute URL, is longer than 4096 characters, or contains spaces/control characters',
  scheme_not_allowed: 'the link is not https://',
  port_not_allowed: 'the link names a port other than the default',
  host_not_allowed:
    'the link host is an IP address in a private, loopback, link-local, CGNAT, multicast or reserved range (any IPv4 spelling, IPv6, IPv4-mapped IPv6), localhost, a local/internal name, or a single-label name',
  credentials_not_allowed: 'the link carries user:password@',
};

const attachmentRejection = z
  .object({
    detail: z.object({
      error: z.enum(Object.keys(REJECT_CODES) as [string, ...string[]]).describe('AttachmentRejectReason'),
      message: z.string(),
      index: z.number().int().describe('Position of the rejected attachment in `attachments` (0 for a single item).'),
    }),
  })
  .meta({ id: 'AttachmentRejection' });

const description = [
  'Posts a message into the conversation of the emergency; the conversation is created on demand. Posting to a resolved emergency is accepted.',
  'A message needs `content` or at least one attachment. Unknown top-level and `author` fields are rejected (`extra_forbidden`); unknown fields inside an attachment are ignored.',
  '',
  '**Attachments** (`attachments`, alias `attachment`; a list of at most 5, a single item, or a bare string). Item fields `src` (aliases `content`, `url`, `data`; first match wins), `type` (aliases `mimeType`, `kind`), `caption`.',
  `- Inline bytes: a \`data:\` URI or bare base64, at most 10 MiB decoded. The type is decided by the magic bytes (a declared type is ignored); accepted: ${ACCEPTED_INLINE_TYPES.join(', ')}. Width/height come from image headers and the mp4/quicktime \`tkhd\` box. Bytes are stored before the message row is written; \`url\` is ATTACHMENT_PUBLIC_BASE_URL + object key, null when none is configured.`,
  '- Links: `https://` only, default port, no credentials, public host. Never fetched. Kind from `type` (a media type or a bare kind; `file` forces a download), else from the extension (`.m3u8` → `hls_video` with mimeType application/vnd.apple.mpegurl; image/video/audio extensions → their kind), else `link`.',
  '',
  '**Deduplication**: a message whose attachments are all inline bytes, posted again with the same author, content, bytes and captions within the window (default 10 minutes), returns the original message with 201 and creates nothing. Text-only messages and messages with a link are never deduplicated.',
  '',
  '**422** is either a field error (`HTTPValidationError`) or an attachment rejection `{"detail":{"error":CODE,"message":...,"index":N}}` with CODE one of:',
  ...Object.entries(REJECT_CODES).map(([code, text]) => `- \`${code}\`: ${text}`),
  '',
  '**503** `unavailable`: the attachment store failed; no message was created, retrying is safe.',
].join('\n');

/** The framework's JSON parser (prototype-poisoning checks included), called synchronously on a text. */
function parseJsonText(parse: ReturnType<FastifyInstance['getDefaultJsonParser']>, request: FastifyRequest, text: string): unknown {
  let out: { err: Error | null; value?: unknown } = { err: null };
  parse(request, text, (err: Error | null, value?: unknown) => {
    out = { err, value };
  });
  if (out.err) throw out.err;
  return out.value;
}

export const messageRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (app) => {
    // This plugin's scope only: large bodies are parsed without holding them several times over.
    const parseSmall = app.getDefaultJsonParser('error', 'error');
    app.removeContentTypeParser('application/json');
    app.addContentTypeParser('application/json', (request, payload, done) => {
      readMessageBody(ctx, request, payload, MESSAGE_BODY_LIMIT, (text) => parseJsonText(parseSmall, request, text)).then(
        (body) => done(null, body),
        (err: Error) => done(err, undefined),
      );
    });
    app.addHook('onSend', (request, reply, payload, done) => {
      closeUnreadBodies(request, reply);
      done(null, payload);
    });
    const r = app.withTypeProvider<ZodTypeProvider>();
    r.post('/orgs/:org_id/emergencies/:emergency_id/messages', {
      bodyLimit: MESSAGE_BODY_LIMIT,
      onRequest: largeBodyGate(ctx.config.MAX_CONCURRENT_LARGE_BODIES, ctx.offload),
      // A large body arrives validated and decoded (a DecodedPost, see readMessageBody); any other goes through the schema.
      validatorCompiler: (route) => {
        const validate = zodValidatorCompiler(route as unknown as Parameters<typeof zodValidatorCompiler>[0]);
        return (data) => (data instanceof DecodedPost ? { value: data } : validate(data));
      },
      // A deduplicated post (the original message answered again) made no write: nothing is stored.
      config: {
        idempotentAnswer: (value) => {
          const { message, created } = value as { message: unknown; created: boolean };
          return created ? { status: 201, body: message } : null;
        },
      },
      schema: {
        headers: idempotencyHeaders,
        operationId: 'postMessage',
        tags: ['messages'],
        summary: 'Post a message, with optional attachments, to an emergency (permission: messages:write).',
        description,
        params: emergencyPath,
        body: postMessageInput,
        response: {
          201: messageRecord,
          ...errorResponses({
            404: 'emergency_not_found',
            413: 'payload_too_large: the body exceeds 64 MiB.',
            415: 'unsupported_media_type: the body is not application/json.',
          }),
          422: z
            .union([validationErrorResponse, attachmentRejection])
            .describe(`Field validation failure (HTTPValidationError) or attachment rejection (AttachmentRejection): ${Object.keys(REJECT_CODES).join(', ')}.`),
          503: z
            .object({ detail: z.object({ error: z.literal('unavailable'), message: z.string() }) })
            .describe('unavailable: attachment storage (or the database) failed; no message was created.'),
        },
      },
      handler: async (req, reply) => {
        try {
          const { message } = await postMessage(ctx, callerOf(req), req.params.org_id, req.params.emergency_id, req.body, writeOptionsOf(req));
          return reply.code(201).send(message);
        } catch (err) {
          if (err instanceof AppError && err.code === 'unavailable' && err.cause) {
            req.log.error({ err: err.cause, store: ctx.attachments.description }, 'attachment store failed');
          }
          throw err;
        }
      },
    });

    r.get('/orgs/:org_id/emergencies/:emergency_id/messages', {
      schema: {
        operationId: 'listMessages',
        tags: ['messages'],
        summary: "An emergency's messages, oldest first, with their attachments (permission: emergencies:read).",
        params: emergencyPath,
        querystring: pageQuery,
        response: { 200: pageOf(messageRecord), ...errorResponses({ 404: 'emergency_not_found' }) },
      },
      handler: (req) => listMessages(ctx, callerOf(req), req.params.org_id, req.params.emergency_id, req.query),
    });

    r.get('/orgs/:org_id/emergencies/:emergency_id/attachments/:attachment_id/content', {
      schema: {
        operationId: 'getAttachmentContent',
        tags: ['messages'],
        summary: 'The stored bytes of an inline attachment, with its media type (permission: emergencies:read).',
        description:
          'For clients without a public media URL (ATTACHMENT_PUBLIC_BASE_URL unset). A link attachment has no stored bytes (404): its `url` is where it lives.',
        params: emergencyPath.extend({ attachment_id: z.string().min(1).max(256) }),
        response: {
          200: attachmentBytesResponse('The bytes, served with the media type they were stored as (image/png, image/jpeg, video/mp4, ...).'),
          ...errorResponses({ 404: 'emergency_not_found, or not_found: no stored attachment with this id in the emergency.' }),
        },
      },
      handler: async (req, reply) => {
        const { bytes, mimeType } = await attachmentContent(ctx, callerOf(req), req.params.org_id, req.params.emergency_id, req.params.attachment_id);
        // Stored objects are content-addressed: the bytes of an id never change.
        return reply
          .type(mimeType)
          .header('cache-control', 'private, max-age=86400, immutable')
          .header('x-content-type-options', 'nosniff')
          .send(bytes as never);
      },
    });
  };
