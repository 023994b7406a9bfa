import { createHash } from 'node:crypto';
import { attachmentRejection, decodeInline } from './inline-decode.js';
import { classifyLink, isKind, isMediaType } from './link-kind.js';
import { checkLink } from './link-safety.js';
import { type AttachmentKind, verifyMedia } from './media-type.js';

export interface AttachmentSpecInput {
  src: string;
  type: string | null;
  caption: string | null;
}

/** Inline bytes, decoded and verified, not yet stored. */
export interface PreparedInline {
  form: 'inline';
  source: 'data_uri' | 'base64';
  bytes: Buffer;
  sha256: string;
  mimeType: string;
  extension: string;
  kind: AttachmentKind;
  width: number | null;
  height: number | null;
  caption: string | null;
}

/** A link, checked, stored as given and never fetched. */
export interface PreparedLink {
  form: 'link';
  url: string;
  kind: AttachmentKind;
  mimeType: string | null;
  caption: string | null;
}

export type PreparedAttachment = PreparedInline | PreparedLink;

// Base64 never contains ':' or '.', so text with either is meant as a URL (possibly a bad one).
const LOOKS_LIKE_URL = /[:.]/;

/**
 * Turns one attachment into what will be stored, or throws its rejection (422 with `index`).
 * Nothing is stored here: every attachment of a message is checked before any byte is kept.
 */
export async function prepareAttachment(spec: AttachmentSpecInput, index: number): Promise<PreparedAttachment> {
  const src = spec.src;
  if (/^data:/i.test(src) || !LOOKS_LIKE_URL.test(src)) {
    const { bytes, source } = decodeInline(src, index);
    const media = await verifyMedia(bytes, index);
    return {
      form: 'inline',
      source,
      bytes,
      sha256: createHash('sha256').update(bytes).digest('hex'),
      ...media,
      caption: spec.caption,
    };
  }
  const url = checkLink(src, index);
  const declared = spec.type === null || spec.type.trim() === '' ? null : spec.type.trim();
  if (declared !== null && !isKind(declared.toLowerCase()) && !isMediaType(declared)) {
    throw attachmentRejection(
      'unsupported_media_type',
      'The declared type must be a media type such as video/mp4, or one of image, video, hls_video, audio, file, link.',
      index,
    );
  }
  return { form: 'link', url: src, ...classifyLink(url, declared), caption: spec.caption };
}
