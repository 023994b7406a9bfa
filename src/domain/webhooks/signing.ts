import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';

export const SECRET_PATTERN = /^whsec_[A-Za-z0-9+/]{43}=$/;

/** `whsec_` + base64 of 32 random bytes, the Standard Webhooks secret format. */
export function mintWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

const signers = new Map<string, Webhook>();

function signerFor(secret: string): Webhook {
  let signer = signers.get(secret);
  if (!signer) {
    if (signers.size > 10_000) signers.clear();
    signer = new Webhook(secret);
    signers.set(secret, signer);
  }
  return signer;
}

/**
 * The `webhook-signature` header value. During a rotation grace period both the new and the previous
 * secret sign, space-separated, so a receiver verifying with either one accepts the delivery.
 */
export function signatureHeader(secrets: string[], msgId: string, timestamp: Date, body: string): string {
  return secrets.map((s) => signerFor(s).sign(msgId, timestamp, body)).join(' ');
}
