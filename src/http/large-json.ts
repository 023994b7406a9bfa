import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import { AppError } from '../errors.js';

/** Strings at least this long (base64 media) are cut out of the body before it is parsed. */
const BIG_STRING_BYTES = 64 * 1024;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Parses a large JSON body (inline media, up to 64 MiB) without holding it several times over.
 * Parsing the text as a whole would keep the raw bytes, the whole body as one string and every
 * parsed string at once: for a 53 MiB post, about four times its size. Here each long string value
 * is read straight from the bytes into its own string (the only copy the decoder needs); the rest of
 * the body, a few hundred bytes, is parsed by `parseSmall` (the framework's JSON parser, with its
 * prototype-poisoning checks) with placeholders where the long strings were.
 */
export function parseLargeJson(bytes: Buffer, parseSmall: (text: string) => unknown): unknown {
  const big: string[] = [];
  const marker = `\u0000${randomBytes(8).toString('hex')}:`;
  const pieces: string[] = [];
  let copiedUpTo = 0;
  let at = bytes.indexOf(QUOTE);
  while (at >= 0) {
    const end = closingQuote(bytes, at + 1);
    if (end < 0) break; // unterminated: the parser reports it
    if (end - at - 1 >= BIG_STRING_BYTES && !isKey(bytes, end + 1)) {
      pieces.push(bytes.toString('utf8', copiedUpTo, at));
      pieces.push(JSON.stringify(`${marker}${big.length}`));
      big.push(stringAt(bytes, at, end));
      copiedUpTo = end + 1;
    }
    at = bytes.indexOf(QUOTE, end + 1);
  }
  if (big.length === 0) return parseSmall(bytes.toString('utf8'));
  pieces.push(bytes.toString('utf8', copiedUpTo));
  return restore(parseSmall(pieces.join('')), marker, big);
}

/** Whether the string that ended before `from` is an object key (a colon follows it). */
function isKey(bytes: Buffer, from: number): boolean {
  let i = from;
  while (bytes[i] === 0x20 || bytes[i] === 0x0a || bytes[i] === 0x0d || bytes[i] === 0x09) i++;
  return bytes[i] === 0x3a;
}

/** The index of the quote that closes the string opened before `from` (one not escaped), or -1. */
function closingQuote(bytes: Buffer, from: number): number {
  let at = bytes.indexOf(QUOTE, from);
  while (at >= 0) {
    let backslashes = 0;
    for (let i = at - 1; i >= from && bytes[i] === BACKSLASH; i--) backslashes++;
    if (backslashes % 2 === 0) return at;
    at = bytes.indexOf(QUOTE, at + 1);
  }
  return -1;
}

/** The value of the JSON string between the quotes at `open` and `close`. */
function stringAt(bytes: Buffer, open: number, close: number): string {
  const escaped = bytes.indexOf(BACKSLASH, open + 1);
  // Without escapes the bytes between the quotes are the value (UTF-8); with them, JSON decodes it.
  if (escaped < 0 || escaped > close) return bytes.toString('utf8', open + 1, close);
  return JSON.parse(bytes.toString('utf8', open, close + 1)) as string;
}

/** Puts the long strings back where their placeholders are (walked with a stack, never by recursion). */
function restore(value: unknown, marker: string, big: string[]): unknown {
  const take = (s: unknown) => (typeof s === 'string' && s.startsWith(marker) ? big[Number(s.slice(marker.length))] : undefined);
  const top = take(value);
  if (top !== undefined) return top;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const current = stack.pop();
    if (current === null || typeof current !== 'object') continue;
    const record = current as Record<string, unknown>;
    for (const key of Object.keys(record)) {
      const replaced = take(record[key]);
      if (replaced !== undefined) record[key] = replaced;
      else if (record[key] !== null && typeof record[key] === 'object') stack.push(record[key]);
    }
  }
  return value;
}

/**
 * The body's bytes in one buffer of its declared size, filled as chunks arrive: collecting the chunks
 * and joining them at the end would hold the body twice. A chunked body (no declared size) is joined.
 */
export async function readBody(stream: Readable, declaredLength: string | undefined, limit: number): Promise<Buffer> {
  const tooLarge = () => new AppError('payload_too_large', `The request body exceeds the size limit of this endpoint (${limit} bytes).`);
  const declared = declaredLength === undefined ? null : Number(declaredLength);
  if (declared !== null && (!Number.isSafeInteger(declared) || declared < 0)) throw new AppError('bad_request', 'Content-Length is not a byte count.');
  if (declared !== null && declared > limit) throw tooLarge();
  if (declared !== null) {
    const body = Buffer.allocUnsafe(declared);
    let filled = 0;
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      if (filled + chunk.length > declared) throw new AppError('bad_request', 'The body is longer than its Content-Length.');
      chunk.copy(body, filled);
      filled += chunk.length;
    }
    if (filled !== declared) throw new AppError('bad_request', 'The body is shorter than its Content-Length.');
    return body;
  }
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    total += chunk.length;
    if (total > limit) throw tooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, total);
}
