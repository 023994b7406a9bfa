import ipaddr from 'ipaddr.js';

/**
 * Whether a host name or address (IPv6 with or without brackets) always means this machine: `localhost` and its
 * subdomains (RFC 6761), 127.0.0.0/8, ::1 and their IPv4-mapped form. Anything else may be reached over a network.
 */
export function isLoopbackHost(host: string): boolean {
  const name = host
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '')
    .toLowerCase();
  if (name === 'localhost' || name.endsWith('.localhost')) return true;
  if (!ipaddr.isValid(name)) return false;
  const parsed = ipaddr.parse(name);
  const address = parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress() ? (parsed as ipaddr.IPv6).toIPv4Address() : parsed;
  return address.range() === 'loopback';
}
