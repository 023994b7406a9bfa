import { ATTACHMENT_KINDS, type AttachmentKind } from './media-type.js';

export const HLS_MEDIA_TYPE = 'application/vnd.apple.mpegurl';
const HLS_MEDIA_TYPES = new Set([HLS_MEDIA_TYPE, 'application/x-mpegurl', 'audio/mpegurl', 'audio/x-mpegurl']);
const PAGE_MEDIA_TYPES = new Set(['text/html', 'application/xhtml+xml']);

const EXTENSION_KINDS: Record<string, AttachmentKind> = {
  m3u8: 'hls_video',
  jpg: 'image',
  jpeg: 'image',
  png: 'image',
  gif: 'image',
  webp: 'image',
  heic: 'image',
  heif: 'image',
  avif: 'image',
  bmp: 'image',
  svg: 'image',
  tif: 'image',
  tiff: 'image',
  mp4: 'video',
  m4v: 'video',
  mov: 'video',
  webm: 'video',
  mkv: 'video',
  avi: 'video',
  ogv: 'video',
  mp3: 'audio',
  m4a: 'audio',
  aac: 'audio',
  ogg: 'audio',
  oga: 'audio',
  opus: 'audio',
  wav: 'audio',
  flac: 'audio',
};

/** A full media type (`type/subtype`, optional parameters) as RFC 6838 spells it. */
const MEDIA_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}(\s*;.*)?$/i;

export function isKind(value: string): value is AttachmentKind {
  return (ATTACHMENT_KINDS as readonly string[]).includes(value);
}

export function isMediaType(value: string): boolean {
  return MEDIA_TYPE.test(value);
}

/**
 * Kind and media type of a link, which is never fetched: its declared `type` (a kind or a media type) decides, else the URL's
 * extension, else it is a plain `link`. mimeType is the declared media type, the HLS type for HLS, or null.
 */
export function classifyLink(url: URL, declared: string | null): { kind: AttachmentKind; mimeType: string | null } {
  if (declared !== null) {
    const value = declared.trim();
    const lower = value.toLowerCase();
    if (isKind(lower)) return { kind: lower, mimeType: lower === 'hls_video' ? HLS_MEDIA_TYPE : null };
    const essence = lower.split(';')[0]!.trim();
    if (HLS_MEDIA_TYPES.has(essence)) return { kind: 'hls_video', mimeType: value };
    const top = essence.split('/')[0];
    if (top === 'image' || top === 'video' || top === 'audio') return { kind: top, mimeType: value };
    if (PAGE_MEDIA_TYPES.has(essence)) return { kind: 'link', mimeType: value };
    return { kind: 'file', mimeType: value };
  }
  const extension = /\.([A-Za-z0-9]{1,8})$/.exec(url.pathname)?.[1]?.toLowerCase();
  const kind = extension ? EXTENSION_KINDS[extension] : undefined;
  if (kind === 'hls_video') return { kind, mimeType: HLS_MEDIA_TYPE };
  return { kind: kind ?? 'link', mimeType: null };
}
