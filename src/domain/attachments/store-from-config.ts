import type { Config } from '../../config.js';
import { FileAttachmentStore } from './file-store.js';
import { S3AttachmentStore } from './s3-store.js';
import type { AttachmentStore } from './store.js';

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
