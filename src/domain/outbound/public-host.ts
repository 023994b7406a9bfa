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
 * The special-purpose range of an IP address (IPv4, or IPv6 without brackets) as ipaddr.js names it (`loopback`, `private`, ...),
 * or null when it is public: IPv6 outside 2000::/3 and the 6to4 and Teredo prefixes that can embed a private IPv4 address are not;
 * an IPv4-mapped one is judged by its IPv4.
 */
function nonPublicRange(parsed: ipaddr.IPv4 | ipaddr.IPv6): string | null {
  if (parsed.kind() === 'ipv4') return parsed.range() === 'unicast' ? null : parsed.range();
  const v6 = parsed as ipaddr.IPv6;
  if (v6.isIPv4MappedAddress()) return nonPublicRange(v6.toIPv4Address());
  if (!v6.match(GLOBAL_UNICAST_V6) || v6.range() !== 'unicast') return v6.range() === 'unicast' ? 'non-global' : v6.range();
  return null;
}

/** Why an IP address is not public, or null. */
export function addressRefusal(address: string): string | null {
  if (!ipaddr.isValid(address)) return `"${address}" is not an IP address.`;
  const parsed = ipaddr.parse(address);
  const range = nonPublicRange(parsed);
  if (range === null) return null;
  const shown =
    parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress() ? (parsed as ipaddr.IPv6).toIPv4Address().toString() : parsed.toString();
  return `The address ${shown} is a non-public address (${range === 'non-global' ? 'unicast' : range}).`;
}

const RANGE_WORDS: Record<string, string> = {
  linkLocal: 'link-local',
  carrierGradeNat: 'carrier-grade NAT',
  uniqueLocal: 'unique-local',
  ipv4Mapped: 'IPv4-mapped',
  rfc6145: 'IPv4-translated',
  rfc6052: 'NAT64',
  '6to4': '6to4',
  teredo: 'Teredo',
  'non-global': 'non-global',
};

/** A non-public address described in a few words, e.g. `127.0.0.1 is a loopback address` (null when it is public). */
export function nonPublicAddressReason(address: string): string | null {
  if (!ipaddr.isValid(address)) return `${address} is not an IP address`;
  const range = nonPublicRange(ipaddr.parse(address));
  if (range === null) return null;
  const words = RANGE_WORDS[range] ?? range;
  return `${address} is ${/^(unspecified|IPv4|amt|as112|orchid)/.test(words) ? 'an' : 'a'} ${words} address`;
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
