import { z } from 'zod';
import { PAGE_BYTES } from './page-bytes.js';

/** Date.parse rolls 2026-02-31 over to March; the parts must name a real date and time. */
function isRealDateTime(value: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?/.exec(value);
  if (!m || Number.isNaN(Date.parse(value))) return false;
  const [year, month, day, hour, minute, second] = m.slice(1).map((x) => Number(x ?? 0)) as number[];
  const daysInMonth = new Date(Date.UTC(year!, month!, 0)).getUTCDate();
  return month! >= 1 && month! <= 12 && day! >= 1 && day! <= daysInMonth && hour! < 24 && minute! < 60 && second! < 60;
}

const EARLIEST_STORED_MS = Date.UTC(1970, 0, 1);
const LATEST_STORED_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/** The range every stored time lies in, so that each is written `YYYY-MM-DDThh:mm:ss.sssZ` (never `+010000-...`). */
export const STORED_TIME_RANGE = 'must lie between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z (in UTC)';

/** Whether an instant, once normalized to UTC, lies in the years 1970..9999 (e.g. 9999-12-31T23:30-01:00 does not). */
export function isStorableTime(ms: number): boolean {
  return ms >= EARLIEST_STORED_MS && ms <= LATEST_STORED_MS;
}

/** Input timestamps must carry a zone (`Z` or `+hh:mm`); they are normalized to UTC with milliseconds. */
export const isoTimestampInput = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/, 'must be an ISO-8601 timestamp with a zone, e.g. 2026-11-21T17:44:29.123Z')
  .refine(isRealDateTime, 'is not a real calendar date and time')
  .refine((s) => isStorableTime(Date.parse(s)), STORED_TIME_RANGE)
  .transform((s) => new Date(s).toISOString())
  .meta({ format: 'date-time', example: '2026-11-21T17:44:29.123Z' });

export const timestamp = z.string().meta({ format: 'date-time', example: '2026-11-21T17:44:29.123Z' });

export const uuid = z.string().meta({ format: 'uuid' });

export const orgIdParam = z.uuid({ message: 'must be an organization UUID' });

export const limitParam = z.coerce
  .number({ message: 'must be an integer from 1 to 200' })
  .int('must be an integer from 1 to 200')
  .min(1, 'must be at least 1')
  .max(200, 'must be at most 200')
  .default(50)
  .describe('Page size, 1..200 (default 50).');

/** The largest value of an `integer` column on PostgreSQL: offsets and sequences past it cannot exist. */
export const INT4_MAX = 2 ** 31 - 1;

/** Longest `cursor` accepted: room for the longest sort values the service stores, even fully escaped. */
export const MAX_CURSOR_LENGTH = 4096;
export const CURSOR_INVALID_MESSAGE = 'is not a cursor returned by this endpoint; pass the nextCursor of the previous page unchanged';

/** A cursor that is empty or too long is refused like any other that the service did not hand out. */
export const cursorParam = z
  .string()
  .refine((value) => value.length >= 1 && value.length <= MAX_CURSOR_LENGTH, {
    message: CURSOR_INVALID_MESSAGE,
    params: { type: 'cursor_invalid' },
  })
  .meta({
    minLength: 1,
    maxLength: MAX_CURSOR_LENGTH,
    description:
      'The `nextCursor` of the previous page, passed unchanged. A cursor this endpoint did not hand out (altered, from another list, ' +
      'or decoding to values its sort columns cannot hold) is refused with 422 `cursor_invalid`.',
  });

export const actorInput = z.strictObject({
  id: z.string().min(1).max(256).describe('Identifier of the person in your system.'),
  name: z.string().min(1).max(256).describe('Display name of the person.'),
});

export const actorOutput = z.object({
  type: z
    .enum(['api_key', 'admin_key', 'user', 'drill'])
    .describe("`api_key` when the key itself acted, `admin_key` when an admin key did; `user` when a person was named; `drill` for a drill's run."),
  id: z.string(),
  name: z.string(),
});

export type Actor = z.infer<typeof actorOutput>;

export function pageOf<T extends z.ZodType>(item: T) {
  return z.object({
    items: z.array(item).describe(`At most \`limit\` items; fewer when they reach ${PAGE_BYTES / 1024} KiB, so that no answer exceeds 1 MiB.`),
    nextCursor: z.string().nullable().describe('Pass as `cursor` to fetch the next page; null on the last page.'),
  });
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

/** Every event's `data` says whether its emergency is an exercise (extensions §11). */
export const exerciseFlag = z.boolean().describe('true when the emergency is an exercise (a drill): show it as such, never as a real alarm.');
