import type { IncomingHttpHeaders } from 'node:http';

/** The address in one `for=` value: quotes, the brackets of IPv6 and a port removed (`"[2001:db8::1]:4711"` is `2001:db8::1`). */
function nodeAddress(value: string): string {
  const unquoted = value.startsWith('"') && value.endsWith('"') && value.length >= 2 ? value.slice(1, -1) : value;
  const bracketed = /^\[([^\]]*)\](?::\d*)?$/.exec(unquoted);
  if (bracketed) return bracketed[1]!;
  const v4WithPort = /^(\d{1,3}(?:\.\d{1,3}){3}):\d*$/.exec(unquoted);
  return v4WithPort ? v4WithPort[1]! : unquoted;
}

/**
 * The client addresses the proxies in front of this service reported, the client first and the nearest proxy's client last:
 * from `Forwarded` (RFC 7239) when present, from `X-Forwarded-For` otherwise. Obfuscated names (`unknown`, `_hidden`) are kept
 * as they are: they are never a trusted proxy, so the walk over the list stops at them.
 */
export function forwardedFor(headers: IncomingHttpHeaders): string[] {
  const forwarded = headers.forwarded;
  if (typeof forwarded === 'string' && forwarded.length > 0) {
    const out: string[] = [];
    for (const element of forwarded.split(',')) {
      const pair = element
        .split(';')
        .map((part) => part.trim())
        .find((part) => part.slice(0, 4).toLowerCase() === 'for=');
      if (pair !== undefined) out.push(nodeAddress(pair.slice(4).trim()));
    }
    return out;
  }
  const xff = headers['x-forwarded-for'];
  if (typeof xff !== 'string' || xff.length === 0) return [];
  return xff
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
}
