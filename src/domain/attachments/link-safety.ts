import { hostRefusal } from '../outbound/public-host.js';
import { attachmentRejection } from './inline-decode.js';

/** Longest link accepted; browsers and CDNs commonly cap URLs around here. */
export const MAX_LINK_LENGTH = 4096;

/**
 * A link must be https on the default port, without credentials, to a public host: it is never fetched, but these rules keep
 * devices and people from being pointed at internal services.
 */
export function checkLink(src: string, index: number): URL {
  if (src.length > MAX_LINK_LENGTH) throw attachmentRejection('invalid_url', `Links may be at most ${MAX_LINK_LENGTH} characters.`, index);
  // The URL parser drops tabs/newlines and trims controls, so with them the stored text would differ from what was checked.
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
