import { z } from 'zod';
import { ACCEPTED_INLINE_TYPES } from '../domain/attachments/media-type.js';

/**
 * Answers that are not JSON, declared under their own media types in the OpenAPI document (the framework puts
 * a response schema's `content` as it is), so that a generated client neither parses them as JSON nor waits
 * for the end of a stream that does not end.
 */

/** Stored attachment bytes: served as the type they were stored as, one of the accepted inline types. */
export function attachmentBytesResponse(description: string) {
  const media = { schema: { type: 'string', format: 'binary' } };
  return z
    .string()
    .describe(description)
    .meta({ content: Object.fromEntries(ACCEPTED_INLINE_TYPES.map((type) => [type, media])) });
}

/** Server-Sent Events: `text/event-stream`, open until the client, the key or the server ends it. */
export function eventStreamResponse(description: string) {
  return z
    .string()
    .describe(description)
    .meta({
      content: {
        'text/event-stream': { schema: { type: 'string', description }, example: ': after 41\n\nid: 42\nevent: emergency.declared\ndata: {"eventId":"…"}\n\n' },
      },
    });
}
