import { hostRefusal } from './public-host.js';

export const MAX_WEBHOOK_URL_LENGTH = 2048;

/**
 * Checks a subscriber URL when it is registered. Names are not resolved here (they may change);
 * the address a name resolves to is checked again on every connection (see the delivery sender).
 */
export function checkWebhookUrl(raw: string, allowPrivateTargets: boolean): { ok: true; url: string } | { ok: false; reason: string } {
  if (raw.length > MAX_WEBHOOK_URL_LENGTH) return { ok: false, reason: `the URL is longer than ${MAX_WEBHOOK_URL_LENGTH} characters` };
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: 'not an absolute URL' };
  }
  const schemeOk = url.protocol === 'https:' || (allowPrivateTargets && url.protocol === 'http:');
  if (!schemeOk) return { ok: false, reason: allowPrivateTargets ? 'the scheme must be https or http' : 'the scheme must be https' };
  if (url.username || url.password) return { ok: false, reason: 'credentials in the URL are not allowed' };
  if (url.hash) return { ok: false, reason: 'a fragment (#...) is not allowed' };
  if (!allowPrivateTargets) {
    const refusal = hostRefusal(url);
    if (refusal) return { ok: false, reason: refusal };
  }
  return { ok: true, url: url.toString() };
}
