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

/** Attachments in an S3-compatible bucket, content-addressed by SHA-256 under `prefix`; credentials from the SDK's standard chain. */
export class S3AttachmentStore implements AttachmentStore {
  readonly description: string;
  private readonly client: S3.S3Client;
  /** Loaded only when an S3 store is configured: the SDK's memory is not worth carrying in every process. */
  private readonly sdk = createRequire(import.meta.url)('@aws-sdk/client-s3') as typeof S3;

  constructor(private readonly options: S3StoreOptions) {
    this.description = `s3://${options.bucket}/${options.prefix}${options.endpoint ? ` at ${new URL(options.endpoint).host}` : ''}`;
    this.client = new this.sdk.S3Client({
      region: options.region,
      endpoint: options.endpoint,
      forcePathStyle: options.forcePathStyle,
      // Some S3-compatible servers refuse the SDK's default trailing checksums (aws-chunked uploads); the key is the bytes'
      // SHA-256 anyway, so anyone reading an object can verify it.
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
