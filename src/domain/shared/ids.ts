import { randomFillSync } from 'node:crypto';

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));
const randomPool = Buffer.alloc(8 * 512);
let randomAt = randomPool.length;
let lastMs = 0;
let counter = 0;

/**
 * A new UUIDv7 (RFC 9562): time-ordered ids append to the end of every id index instead of landing on random B-tree pages, so
 * a write touches far fewer pages; the random bits keep ids unguessable (the contract allows v4 and v7).
 */
export function newId(): string {
  let ms = Date.now();
  if (ms > lastMs) {
    lastMs = ms;
    counter = 0;
  } else {
    // Same millisecond (or the clock stepped back): count on; past 4095, borrow the next millisecond.
    ms = lastMs;
    if (++counter > 0xfff) {
      ms = ++lastMs;
      counter = 0;
    }
  }
  if (randomAt === randomPool.length) {
    randomFillSync(randomPool);
    randomAt = 0;
  }
  const r = randomAt;
  randomAt += 8;
  const b = randomPool;
  const high = Math.floor(ms / 0x10000);
  return (
    HEX[(high >>> 24) & 0xff]! +
    HEX[(high >>> 16) & 0xff]! +
    HEX[(high >>> 8) & 0xff]! +
    HEX[high & 0xff]! +
    '-' +
    HEX[(ms >>> 8) & 0xff]! +
    HEX[ms & 0xff]! +
    '-' +
    HEX[0x70 | (counter >>> 8)]! +
    HEX[counter & 0xff]! +
    '-' +
    HEX[0x80 | (b[r]! & 0x3f)]! +
    HEX[b[r + 1]!]! +
    '-' +
    HEX[b[r + 2]!]! +
    HEX[b[r + 3]!]! +
    HEX[b[r + 4]!]! +
    HEX[b[r + 5]!]! +
    HEX[b[r + 6]!]! +
    HEX[b[r + 7]!]!
  );
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;
export const isUuid = (value: string): boolean => uuidPattern.test(value);

/** Org ids are UUIDs compared case-insensitively: every surface normalises them to lower case once, on entry. */
export const normalizeOrgId = (value: string): string => (isUuid(value) ? value.toLowerCase() : value);

/** Partner, enterprise and other ids follow the same rule (subjects of keys and webhooks, allowedOrgIds). */
export const normalizeId = normalizeOrgId;

let isoMs = -1;
let isoText = '';

/**
 * Timestamps leave the service as ISO-8601 UTC with milliseconds. The text is built once per millisecond, since a declare takes
 * several within one, as do the requests of a busy one.
 */
export function nowIso(): string {
  const ms = Date.now();
  if (ms !== isoMs) {
    isoMs = ms;
    isoText = new Date(ms).toISOString();
  }
  return isoText;
}
