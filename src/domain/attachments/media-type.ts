import { fileTypeFromBuffer } from 'file-type';
import { imageSize } from 'image-size';
import { attachmentRejection } from './inline-decode.js';
import { mp4Dimensions } from './mp4-dimensions.js';

export type AttachmentKind = 'image' | 'video' | 'hls_video' | 'audio' | 'file' | 'link';
export const ATTACHMENT_KINDS: readonly AttachmentKind[] = ['image', 'video', 'hls_video', 'audio', 'file', 'link'];

/**
 * The inline types accepted (decisions.md), keyed by what `file-type` reports, with the media type we
 * record and the extension the stored object gets. `file-type` names a few formats differently.
 */
const ACCEPTED: Record<string, { mimeType: string; extension: string }> = {
  'image/jpeg': { mimeType: 'image/jpeg', extension: 'jpg' },
  'image/png': { mimeType: 'image/png', extension: 'png' },
  'image/gif': { mimeType: 'image/gif', extension: 'gif' },
  'image/webp': { mimeType: 'image/webp', extension: 'webp' },
  'image/heic': { mimeType: 'image/heic', extension: 'heic' },
  'video/mp4': { mimeType: 'video/mp4', extension: 'mp4' },
  'video/quicktime': { mimeType: 'video/quicktime', extension: 'mov' },
  'video/webm': { mimeType: 'video/webm', extension: 'webm' },
  'audio/mpeg': { mimeType: 'audio/mpeg', extension: 'mp3' },
  'audio/mp4': { mimeType: 'audio/mp4', extension: 'm4a' },
  'audio/x-m4a': { mimeType: 'audio/mp4', extension: 'm4a' },
  'audio/ogg': { mimeType: 'audio/ogg', extension: 'ogg' },
  'audio/ogg; codecs=opus': { mimeType: 'audio/ogg', extension: 'ogg' },
  'audio/wav': { mimeType: 'audio/wav', extension: 'wav' },
  'application/pdf': { mimeType: 'application/pdf', extension: 'pdf' },
};

export const ACCEPTED_INLINE_TYPES = [...new Set(Object.values(ACCEPTED).map((a) => a.mimeType))];

export function kindOfMediaType(mimeType: string): AttachmentKind {
  const top = mimeType.split('/')[0];
  if (top === 'image' || top === 'video' || top === 'audio') return top;
  return 'file';
}

export interface VerifiedMedia {
  mimeType: string;
  extension: string;
  kind: AttachmentKind;
  width: number | null;
  height: number | null;
}

/** Decides the type from the bytes alone (a declared type is ignored) and reads the picture size. */
export async function verifyMedia(bytes: Buffer, index: number): Promise<VerifiedMedia> {
  const detected = await fileTypeFromBuffer(bytes).catch(() => undefined);
  const accepted = detected ? ACCEPTED[detected.mime] : undefined;
  if (!accepted) {
    const what = detected ? `${detected.mime}` : 'an unrecognized format';
    throw attachmentRejection('unsupported_media_type', `The bytes are ${what}; accepted types are ${ACCEPTED_INLINE_TYPES.join(', ')}.`, index);
  }
  const kind = kindOfMediaType(accepted.mimeType);
  const size = dimensionsOf(bytes, accepted.mimeType, kind);
  return { ...accepted, kind, width: size?.width ?? null, height: size?.height ?? null };
}

function dimensionsOf(bytes: Buffer, mimeType: string, kind: AttachmentKind): { width: number; height: number } | null {
  try {
    if (kind === 'image') {
      // image-size reads the whole underlying ArrayBuffer and small Buffers share Node's pool, so a truncated header could be
      // completed with foreign bytes: a copy owns exactly these.
      const size = imageSize(new Uint8Array(bytes));
      if (size.width === undefined || size.height === undefined) return null;
      return { width: size.width, height: size.height };
    }
    if (mimeType === 'video/mp4' || mimeType === 'video/quicktime') return mp4Dimensions(bytes);
  } catch {
    // A header that cannot be parsed (e.g. a truncated file) leaves the size unknown, not the upload refused.
  }
  return null;
}
