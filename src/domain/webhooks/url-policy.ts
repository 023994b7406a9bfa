import ipaddr from 'ipaddr.js';

export const MAX_WEBHOOK_URL_LENGTH = 2048;

/**
 * True only for globally routable unicast addresses. Loopback, private (RFC 1918, unique-local),
 * link-local, carrier-grade NAT, multicast, reserved, and the tunnelling/translation prefixes that can
 * embed a private IPv4 address (6to4, Teredo, NAT64) are all refused. An IPv4-mapped IPv6 address is
 * judged by the IPv4 address it carries.
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) {
    parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  }
  return parsed.range() === 'unicast';
}

/** The URL's host without IPv6 brackets, and whether it is an IP literal. */
export function hostOf(url: URL): { host: string; isIp: boolean } {
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return { host, isIp: ipaddr.isValid(host) };
}

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
    const { host, isIp } = hostOf(url);
    if (isIp) {
      if (!isPublicAddress(host)) return { ok: false, reason: 'the host is a non-public IP address' };
    } else {
      const name = host.toLowerCase().replace(/\.$/, '');
      if (name === 'localhost' || name.endsWith('.localhost')) return { ok: false, reason: 'the host is localhost' };
      if (!name.includes('.')) return { ok: false, reason: 'the host must be a fully qualified public name' };
      if (/\.(local|internal|lan|home\.arpa)$/.test(name)) return { ok: false, reason: 'the host is a local network name' };
    }
  }
  return { ok: true, url: url.toString() };
}
