import ipaddr from 'ipaddr.js';

/**
 * The one policy for every URL the service hands out or calls: link attachments (shown to people and
 * devices) and webhook targets (called by the dispatcher). A host passes only when it is a public DNS
 * name or a globally routable unicast address.
 */

// The only IPv6 space allocated for global unicast; everything outside it is special-purpose, among
// them the IPv4-compatible form (::127.0.0.1, i.e. ::7f00:1) that would smuggle an IPv4 address in.
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');

/**
 * Names that never denote a public host: `localhost` (RFC 6761), mDNS `.local`, the private-use
 * `.internal` (cloud metadata services live there), `.home.arpa` (RFC 8375), common LAN suffixes and
 * the reverse-lookup zones.
 */
const PRIVATE_SUFFIXES = ['localhost', 'local', 'internal', 'home.arpa', 'localdomain', 'lan', 'intranet', 'in-addr.arpa', 'ip6.arpa'];

/**
 * Why an IP address (IPv4, or IPv6 without brackets) is not public, or null when it is. Loopback,
 * private, link-local, carrier-grade NAT, multicast, reserved and documentation ranges are refused;
 * in IPv6 everything outside 2000::/3 and the tunnelling prefixes inside it that can embed a private
 * IPv4 address (6to4, Teredo); an IPv4-mapped address is judged by the IPv4 address it carries.
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
 * Why the host of a parsed URL is not public, or null when it is. The WHATWG parser has already
 * normalised IPv4 in decimal, octal or hex forms (`2130706433`, `0177.0.0.1`, `0x7f.1`) to dotted quads.
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
