import { createRequire } from 'node:module';
import type * as S3 from '@aws-sdk/client-s3';
import { type AttachmentStore, contentAddressedKey, type StoredObjectInput } from './store.js';

export interface S3StoreOptions {
  bucket: string;
  /** Key prefix without leading/trailing slashes; may be empty. */
  prefix: string;
  region: string;
  endpoint?: string;
  forcePathStyle: boolean;
}

/**
 * Keeps attachments in an S3-compatible bucket, content-addressed by SHA-256 under `prefix`.
 * Credentials come from the SDK's standard provider chain (environment, profile, instance role).
 */
export class S3AttachmentStore implements AttachmentStore {
  readonly description: string;
  private readonly client: S3.S3Client;
  /** Loaded only when an S3 store is configured: the SDK costs tens of MB of memory in every process. */
  private readonly sdk = createRequire(import.meta.url)('@aws-sdk/client-s3') as typeof S3;

  constructor(private readonly options: S3StoreOptions) {
    this.description = `s3://${options.bucket}/${options.prefix}${options.endpoint ? ` at ${new URL(options.endpoint).host}` : ''}`;
    this.client = new this.sdk.S3Client({
      region: options.region,
      endpoint: options.endpoint,
      forcePathStyle: options.forcePathStyle,
      // S3-compatible servers do not all accept the SDK's default trailing CRC checksums (aws-chunked
      // uploads); send checksums only where the API demands them. The key itself is the SHA-256 of the
      // bytes, so anyone reading an object can verify it.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      maxAttempts: 3,
    });
  }

  async put(object: StoredObjectInput): Promise<string> {
    const key = this.keyOf(contentAddressedKey(object.sha256, object.extension));
    await this.client.send(
      new this.sdk.PutObjectCommand({
        Bucket: this.options.bucket,
        Key: key,
        Body: object.bytes,
        ContentType: object.mimeType,
        ContentLength: object.bytes.length,
        // Content-addressed objects never change, so they can be cached forever.
        CacheControl: 'public, max-age=31536000, immutable',
      }),
      { abortSignal: AbortSignal.timeout(30_000) },
    );
    return key;
  }

  async get(key: string): Promise<Buffer | null> {
    try {
      const result = await this.client.send(new this.sdk.GetObjectCommand({ Bucket: this.options.bucket, Key: key }), {
        abortSignal: AbortSignal.timeout(30_000),
      });
      if (!result.Body) return null;
      return Buffer.from(await result.Body.transformToByteArray());
    } catch (err) {
      if (err instanceof this.sdk.NoSuchKey || (err as { name?: string }).name === 'NoSuchKey') return null;
      throw err;
    }
  }

  private keyOf(relative: string): string {
    return this.options.prefix ? `${this.options.prefix}/${relative}` : relative;
  }
}
