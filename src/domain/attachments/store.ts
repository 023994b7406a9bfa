import type { Config } from '../../config.js';
import { FileAttachmentStore } from './file-store.js';
import { S3AttachmentStore } from './s3-store.js';

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

/** Builds the store ATTACHMENT_STORE names: `file:PATH` or `s3://bucket/prefix`. */
export function attachmentStoreFromConfig(config: Config): AttachmentStore {
  const spec = config.ATTACHMENT_STORE;
  if (spec.startsWith('file:')) return new FileAttachmentStore(spec.slice('file:'.length));
  const url = new URL(spec);
  const bucket = url.hostname;
  const prefix = decodeURIComponent(url.pathname).replace(/^\/+|\/+$/g, '');
  return new S3AttachmentStore({
    bucket,
    prefix,
    region: config.ATTACHMENT_S3_REGION,
    endpoint: config.ATTACHMENT_S3_ENDPOINT,
    forcePathStyle: config.ATTACHMENT_S3_FORCE_PATH_STYLE ?? config.ATTACHMENT_S3_ENDPOINT !== undefined,
  });
}

/** Public URL of a stored object, or null when no delivery base URL is configured. */
export function publicUrlOf(config: Config, key: string): string | null {
  const base = config.ATTACHMENT_PUBLIC_BASE_URL;
  if (!base) return null;
  return `${base.endsWith('/') ? base : `${base}/`}${key.split('/').map(encodeURIComponent).join('/')}`;
}
