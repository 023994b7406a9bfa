import { hostRefusal } from '../outbound/public-host.js';
import { attachmentRejection } from './inline-decode.js';

/** Longest link accepted; browsers and CDNs commonly cap URLs around here. */
export const MAX_LINK_LENGTH = 4096;

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
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what this refuses.
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
  const refusal = hostRefusal(url);
  if (refusal) throw attachmentRejection('host_not_allowed', refusal, index);
  return url;
}
