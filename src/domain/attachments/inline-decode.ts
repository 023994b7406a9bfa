import { AppError, type ErrorCode } from '../../errors.js';

/** Largest accepted attachment after decoding (decisions.md). */
export const MAX_INLINE_BYTES = 10 * 1024 * 1024;

/** An attachment rejection: 422 `{detail:{error, message, index}}` (the codes of AttachmentRejectReason). */
export function attachmentRejection(code: ErrorCode, message: string, index: number): AppError {
  return new AppError(code, message, { index }, { status: 422 });
}

export interface DecodedInline {
  bytes: Buffer;
  source: 'data_uri' | 'base64';
}

const BASE64_BODY = /^[A-Za-z0-9+/]*={0,2}$/;
const BASE64URL_BODY = /^[A-Za-z0-9_-]*={0,2}$/;
const WHITESPACE = /[\t\n\r ]/g;

/** The text without line breaks and spaces; the same string (no copy) when it has none. */
const withoutWhitespace = (text: string): string => (/[\t\n\r ]/.test(text) ? text.replace(WHITESPACE, '') : text);

/** Rough decoded size of a base64 text, to refuse oversized input before allocating for it. */
function decodedSizeOf(text: string): number {
  return Math.floor((text.length * 3) / 4);
}

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const URL_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/**
 * Strict base64: one alphabet (standard or URL-safe), optional line breaks, exact or absent padding, no stray bits. Checked by
 * scanning, without copying a text that may be megabytes long, since Node's decoder silently skips invalid characters.
 */
export function decodeBase64Strict(raw: string): Buffer | null {
  const text = withoutWhitespace(raw);
  const urlSafe = /[-_]/.test(text);
  if (!(urlSafe ? BASE64URL_BODY : BASE64_BODY).test(text)) return null;
  let end = text.length;
  while (end > 0 && text.charCodeAt(end - 1) === 0x3d) end--;
  const padding = text.length - end;
  if (end % 4 === 1) return null;
  if (padding > 0 && text.length % 4 !== 0) return null;
  // The last character of a partial group carries bits past the data; they must be zero.
  if (end % 4 !== 0) {
    const strayBits = end % 4 === 2 ? 4 : 2;
    const last = (urlSafe ? URL_ALPHABET : ALPHABET).indexOf(text[end - 1]!);
    if (last & ((1 << strayBits) - 1)) return null;
  }
  return Buffer.from(text, urlSafe ? 'base64url' : 'base64');
}

// RFC 2397: data:[<mediatype>][;base64],<data>; the media type may carry parameters.
const TOKEN = "[A-Za-z0-9!#$%&'*+.^_`|~-]+";
const DATA_URI_HEAD = new RegExp(`^data:(?:${TOKEN}/${TOKEN})?(?:;${TOKEN}=(?:${TOKEN}|"[^"]*"))*(;base64)?$`, 'i');

/** Decodes a `data:` URI or bare base64 text; throws the matching attachment rejection. */
export function decodeInline(src: string, index: number): DecodedInline {
  if (/^data:/i.test(src)) {
    const comma = src.indexOf(',');
    if (comma < 0) throw attachmentRejection('invalid_data_uri', 'A data URI needs a comma before its data: data:image/png;base64,....', index);
    const head = src.slice(0, comma);
    const match = DATA_URI_HEAD.exec(head);
    if (!match) throw attachmentRejection('invalid_data_uri', 'The data URI header is malformed; expected data:<type>[;base64],<data>.', index);
    const body = src.slice(comma + 1);
    if (match[1]) {
      if (decodedSizeOf(withoutWhitespace(body)) > MAX_INLINE_BYTES + 3) throw tooLarge(index);
      const bytes = decodeBase64Strict(body);
      if (!bytes) throw attachmentRejection('invalid_base64', 'The data URI carries invalid base64.', index);
      return { bytes: checked(bytes, index), source: 'data_uri' };
    }
    if (Buffer.byteLength(body) > MAX_INLINE_BYTES * 3) throw tooLarge(index);
    const bytes = percentDecode(body);
    if (!bytes) throw attachmentRejection('invalid_data_uri', 'The data URI carries malformed percent-encoding.', index);
    return { bytes: checked(bytes, index), source: 'data_uri' };
  }
  if (decodedSizeOf(withoutWhitespace(src)) > MAX_INLINE_BYTES + 3) throw tooLarge(index);
  const bytes = decodeBase64Strict(src);
  if (!bytes) throw attachmentRejection('invalid_base64', 'The attachment is neither an https:// link, a data: URI nor valid base64.', index);
  return { bytes: checked(bytes, index), source: 'base64' };
}

/** Percent-decoding to bytes (not to text: the payload may be binary); null on a broken escape. */
function percentDecode(text: string): Buffer | null {
  const source = Buffer.from(text, 'utf8');
  const out = Buffer.allocUnsafe(source.length);
  let length = 0;
  for (let i = 0; i < source.length; i++) {
    const byte = source[i]!;
    if (byte !== 0x25) {
      out[length++] = byte;
      continue;
    }
    const hex = source.subarray(i + 1, i + 3).toString('latin1');
    if (!/^[0-9A-Fa-f]{2}$/.test(hex)) return null;
    out[length++] = Number.parseInt(hex, 16);
    i += 2;
  }
  return out.subarray(0, length);
}

function tooLarge(index: number): AppError {
  return attachmentRejection('too_large', `Inline attachments may be at most ${MAX_INLINE_BYTES} bytes (10 MiB) once decoded.`, index);
}

function checked(bytes: Buffer, index: number): Buffer {
  if (bytes.length === 0) throw attachmentRejection('empty_content', 'The attachment decodes to zero bytes.', index);
  if (bytes.length > MAX_INLINE_BYTES) throw tooLarge(index);
  return bytes;
}
