import type { Config } from '../../config.js';

/** One verified inline attachment, ready to be kept. */
export interface StoredObjectInput {
  /** Lowercase hex SHA-256 of `bytes`: objects are content-addressed, so storing twice is harmless. */
  sha256: string;
  bytes: Buffer;
  /** The media type verified from the bytes. */
  mimeType: string;
  /** File extension matching the verified type (no dot), so a CDN or static server serves it right. */
  extension: string;
}

/**
 * Where inline attachment bytes live. `put` must only resolve once the bytes are durable: the message
 * row is written after it, and a message must never point at bytes that were not kept.
 */
export interface AttachmentStore {
  /** Safe to log: names the kind and place, never a secret. */
  readonly description: string;
  /** Stores the bytes and returns the object key; the public URL is ATTACHMENT_PUBLIC_BASE_URL + key. */
  put(object: StoredObjectInput): Promise<string>;
  /** The bytes under `key`, or null when there is no such object. */
  get(key: string): Promise<Buffer | null>;
}

/** `ab/abcdef….png`: the first byte of the hash fans objects out over 256 directories/prefixes. */
export function contentAddressedKey(sha256: string, extension: string): string {
  return `${sha256.slice(0, 2)}/${sha256}.${extension}`;
}

/** Public URL of a stored object, or null when no delivery base URL is configured. */
export function publicUrlOf(config: Config, key: string): string | null {
  const base = config.ATTACHMENT_PUBLIC_BASE_URL;
  if (!base) return null;
  return `${base.endsWith('/') ? base : `${base}/`}${key.split('/').map(encodeURIComponent).join('/')}`;
}
