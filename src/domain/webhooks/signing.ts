import { createHmac, randomBytes } from 'node:crypto';

export const SECRET_PATTERN = /^whsec_[A-Za-z0-9+/]{43}=$/;

/** `whsec_` + base64 of 32 random bytes, the Standard Webhooks secret format. */
export function mintWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

const keys = new Map<string, Buffer>();

/** The HMAC key of a `whsec_` secret: the base64 after the prefix (as the standardwebhooks package decodes it). */
function keyFor(secret: string): Buffer {
  let key = keys.get(secret);
  if (!key) {
    if (keys.size > 10_000) keys.clear();
    key = Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
    keys.set(secret, key);
  }
  return key;
}

/**
 * The `webhook-signature` header value: `v1,` + base64 HMAC-SHA256 of `{id}.{unix seconds}.{body}`
 * (Standard Webhooks), computed with node:crypto. During a rotation grace period both the new and
 * the previous secret sign, space-separated, so a receiver verifying with either one accepts the delivery.
 */
export function signatureHeader(secrets: string[], msgId: string, timestamp: Date, body: string): string {
  const signed = `${msgId}.${Math.floor(timestamp.getTime() / 1000)}.${body}`;
  return secrets.map((s) => `v1,${createHmac('sha256', keyFor(s)).update(signed).digest('base64')}`).join(' ');
}
