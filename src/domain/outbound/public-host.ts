import ipaddr from 'ipaddr.js';

/**
 * The one policy for every URL the service hands out or calls (link attachments, webhook targets): a host passes only when it
 * is a public DNS name or a globally routable unicast address.
 */

// The only IPv6 space allocated for global unicast; everything outside it is special-purpose, among
// them the IPv4-compatible form (::127.0.0.1, i.e. ::7f00:1) that would smuggle an IPv4 address in.
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');

/**
 * Names that never denote a public host: `localhost`, mDNS `.local`, the private-use `.internal` (where cloud metadata
 * services live), `.home.arpa`, common LAN suffixes and the reverse-lookup zones.
 */
const PRIVATE_SUFFIXES = ['localhost', 'local', 'internal', 'home.arpa', 'localdomain', 'lan', 'intranet', 'in-addr.arpa', 'ip6.arpa'];

/**
 * Why an IP address (IPv4, or IPv6 without brackets) is not public, or null: special-purpose ranges are refused, among them IPv6
 * outside 2000::/3 and the 6to4 and Teredo prefixes that can embed a private IPv4 address; an IPv4-mapped one is judged by its IPv4.
 */
export function addressRefusal(address: string): string | null {
  if (!ipaddr.isValid(address)) return `"${address}" is not an IP address.`;
  const parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv4') return v4Refusal(parsed as ipaddr.IPv4);
  const v6 = parsed as ipaddr.IPv6;
  if (v6.isIPv4MappedAddress()) return v4Refusal(v6.toIPv4Address());
  if (!v6.match(GLOBAL_UNICAST_V6) || v6.range() !== 'unicast') {
    return `The address ${v6.toString()} is a non-public address (${v6.range()}).`;
  }
  return null;
}

function v4Refusal(address: ipaddr.IPv4): string | null {
  const range = address.range();
  return range === 'unicast' ? null : `The address ${address.toString()} is a non-public address (${range}).`;
}

export const isPublicAddress = (address: string): boolean => addressRefusal(address) === null;

/** The URL's host without IPv6 brackets, and whether it is an IP literal. */
export function hostOf(url: URL): { host: string; isIp: boolean } {
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return { host, isIp: ipaddr.isValid(host) };
}

/**
 * Why the host of a parsed URL is not public, or null; the URL parser has already normalised decimal, octal or hex IPv4 forms.
 * Names are not resolved here (they may change): callers that connect check the resolved address too.
 */
export function hostRefusal(url: URL): string | null {
  const { host, isIp } = hostOf(url);
  if (isIp) return addressRefusal(host);
  const name = host.replace(/\.$/, '').toLowerCase();
  if (name === 'localhost' || name.endsWith('.localhost')) return `The host "${host}" is localhost.`;
  if (!name.includes('.')) return `The host "${host}" is a single-label name; a fully qualified public name is needed.`;
  for (const suffix of PRIVATE_SUFFIXES) {
    if (name === suffix || name.endsWith(`.${suffix}`)) return `The host "${host}" is a local network name.`;
  }
  return null;
}
