import ipaddr from 'ipaddr.js';
import { attachmentRejection } from './inline-decode.js';

/** Longest link accepted; browsers and CDNs commonly cap URLs around here. */
export const MAX_LINK_LENGTH = 4096;

// The only IPv6 space allocated for global unicast; everything outside it is special-purpose.
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');

/**
 * Names that never denote a public host: `localhost` (RFC 6761), mDNS `.local`, the private-use
 * `.internal` (cloud metadata services live there), `.home.arpa` (RFC 8375) and common LAN suffixes.
 */
const PRIVATE_SUFFIXES = ['localhost', 'local', 'internal', 'home.arpa', 'localdomain', 'lan', 'intranet', 'in-addr.arpa', 'ip6.arpa'];

/**
 * Checks a link attachment: https only, default port, no credentials, and a host that is a public
 * DNS name or a public unicast address. The link is never fetched; these rules keep devices and
 * people from being pointed at internal services. IPv4 in decimal, octal or hex forms
 * (`2130706433`, `0177.0.0.1`, `0x7f.1`) is normalized by the WHATWG URL parser before the check.
 */
export function checkLink(src: string, index: number): URL {
  if (src.length > MAX_LINK_LENGTH) throw attachmentRejection('invalid_url', `Links may be at most ${MAX_LINK_LENGTH} characters.`, index);
  // The URL parser silently drops tabs/newlines and trims controls; the stored link is the text as
  // given, so such characters would make what is shown differ from what was checked.
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u0020\u007f-\u009f]/.test(src)) throw attachmentRejection('invalid_url', 'Links may not contain spaces or control characters.', index);
  let url: URL;
  try {
    url = new URL(src);
  } catch {
    throw attachmentRejection('invalid_url', 'The link is not an absolute URL; links look like https://host/path.', index);
  }
  if (url.protocol !== 'https:') throw attachmentRejection('scheme_not_allowed', `Links must use https://, not ${url.protocol}//.`, index);
  if (url.username !== '' || url.password !== '' || /^https:\/\/[^/?#]*@/i.test(src)) {
    throw attachmentRejection('credentials_not_allowed', 'Links may not carry user names or passwords (user:pass@host).', index);
  }
  if (url.port !== '') throw attachmentRejection('port_not_allowed', 'Links must use the default https port (443).', index);
  const refusal = hostRefusal(url.hostname);
  if (refusal) throw attachmentRejection('host_not_allowed', refusal, index);
  return url;
}

/** Why a host is not public, or null when it is. */
export function hostRefusal(hostname: string): string | null {
  if (hostname.startsWith('[') && hostname.endsWith(']')) {
    const address = ipaddr.IPv6.parse(hostname.slice(1, -1));
    if (address.isIPv4MappedAddress()) return v4Refusal(address.toIPv4Address());
    if (!address.match(GLOBAL_UNICAST_V6) || address.range() !== 'unicast') {
      return `The address ${hostname} is in a non-public range (${address.range()}).`;
    }
    return null;
  }
  if (ipaddr.IPv4.isValidFourPartDecimal(hostname)) return v4Refusal(ipaddr.IPv4.parse(hostname));
  const name = hostname.replace(/\.$/, '').toLowerCase();
  if (!name.includes('.')) return `The host "${hostname}" is a single-label name; links need a public domain name.`;
  for (const suffix of PRIVATE_SUFFIXES) {
    if (name === suffix || name.endsWith(`.${suffix}`)) return `The host "${hostname}" is a local or private name.`;
  }
  return null;
}

function v4Refusal(address: ipaddr.IPv4): string | null {
  const range = address.range();
  return range === 'unicast' ? null : `The address ${address.toString()} is in a non-public range (${range}).`;
}
