import { runInNewContext } from 'node:vm';
import rrule from 'rrule';
import { fieldError } from '../../errors.js';

const { RRule, rrulestr } = rrule;
type Rule = InstanceType<typeof RRule>;

/**
 * A drill's schedule: an RFC 5545 RRULE, with its DTSTART line or starting at the drill's creation. Evaluating a rule walks
 * its periods from DTSTART, and a rule that can never match (February 31st) walks them to the year 9999: every evaluation
 * runs under a time budget, so no rule can hold the event loop.
 */

/** What one evaluation of a rule may take: a rule with a time zone needs some 15 ms, its first evaluation in a process some 130. */
const EVALUATION_BUDGET_MS = 300;
/** The next occurrence must fall within this: a drill is a regular practice, not a one-off years ahead. */
const HORIZON_MS = 366 * 86_400_000;
/** Occurrences looked at for the shortest interval between two: enough to cover a rule's pattern. */
const GAP_SAMPLE = 60;
/** Rules repeating every second or minute must end: their periods from DTSTART are walked at each evaluation. */
const MAX_COUNT_SUB_HOURLY = 1000;
const SCHEDULE_TEXT_MAX = 1000;

const where = ['body', 'schedule'];

/** A rule that does not parse, cannot be evaluated or breaks a bound: a 422 on `schedule`. */
function scheduleError(msg: string) {
  return fieldError(where, msg);
}

/** Runs `fn` with at most EVALUATION_BUDGET_MS of CPU; null when it ran out, or failed (an unknown TZID, say). */
function withinBudget<T>(fn: () => T): T | null {
  try {
    return runInNewContext('evaluate()', { evaluate: fn }, { timeout: EVALUATION_BUDGET_MS }) as T;
  } catch {
    return null;
  }
}

const RANGES: [keyof Rule['origOptions'], number, number, boolean][] = [
  ['bymonth', 1, 12, false],
  ['bymonthday', 1, 31, true],
  ['byyearday', 1, 366, true],
  ['byweekno', 1, 53, true],
  ['byhour', 0, 23, false],
  ['byminute', 0, 59, false],
  ['bysecond', 0, 59, false],
  ['bysetpos', 1, 366, true],
];

/** BY parts that select days: with a rule repeating within a day they make it walk every second of the days they skip. */
const DAY_PARTS = ['bymonth', 'bymonthday', 'byyearday', 'byweekno', 'byweekday', 'bysetpos'] as const;

function checkParts(rule: Rule): void {
  const o = rule.origOptions;
  for (const [part, min, max, signed] of RANGES) {
    const value = o[part];
    if (value === undefined || value === null) continue;
    for (const n of Array.isArray(value) ? value : [value]) {
      const ok = typeof n === 'number' && Number.isInteger(n) && ((n >= min && n <= max) || (signed && n <= -min && n >= -max));
      if (!ok) throw scheduleError(`${String(part).toUpperCase()} must hold integers from ${signed ? `±${min}` : min} to ${signed ? `±${max}` : max}`);
    }
  }
  if (o.interval !== undefined && (!Number.isInteger(o.interval) || o.interval < 1 || o.interval > 10_000)) {
    throw scheduleError('INTERVAL must be an integer from 1 to 10000');
  }
  if (o.count !== undefined && o.count !== null && (!Number.isInteger(o.count) || o.count < 1)) throw scheduleError('COUNT must be a positive integer');
  const subDaily = o.freq === RRule.HOURLY || o.freq === RRule.MINUTELY || o.freq === RRule.SECONDLY;
  if (subDaily && DAY_PARTS.some((p) => o[p] !== undefined && o[p] !== null)) {
    throw scheduleError('an HOURLY, MINUTELY or SECONDLY rule cannot select days: use FREQ=DAILY (or WEEKLY, MONTHLY) with BYHOUR and BYMINUTE');
  }
  if ((o.freq === RRule.MINUTELY || o.freq === RRule.SECONDLY) && (o.count === undefined || o.count === null || o.count > MAX_COUNT_SUB_HOURLY)) {
    throw scheduleError(`a MINUTELY or SECONDLY rule needs a COUNT of at most ${MAX_COUNT_SUB_HOURLY}`);
  }
  const start = o.dtstart?.getTime();
  if (start !== undefined && Math.abs(start - Date.now()) > 10 * 365 * 86_400_000) throw scheduleError('DTSTART must be within 10 years of now');
}

/** Whole seconds: a DTSTART with milliseconds gives occurrences that drift apart from it. */
function wholeSecond(ms: number): Date {
  return new Date(Math.floor(ms / 1000) * 1000);
}

/** Parses the rule; `defaultStart` is its DTSTART when the text has none (the drill's creation). */
export function parseSchedule(text: string, defaultStart: string): Rule {
  if (text.length > SCHEDULE_TEXT_MAX) throw scheduleError(`must be at most ${SCHEDULE_TEXT_MAX} characters`);
  let parsed: unknown;
  try {
    parsed = rrulestr(text.trim());
  } catch (err) {
    throw scheduleError(`is not an RFC 5545 RRULE: ${(err as Error).message}`);
  }
  if (!(parsed instanceof RRule)) throw scheduleError('must be one RRULE (with an optional DTSTART line), without RDATE or EXDATE');
  // A DTSTART given as an option would override the text's, so the creation is put in only where the text has none.
  if (parsed.origOptions.dtstart === undefined || parsed.origOptions.dtstart === null) {
    try {
      parsed = new RRule({ ...parsed.origOptions, dtstart: wholeSecond(Date.parse(defaultStart)) });
    } catch (err) {
      throw scheduleError(`is not an RFC 5545 RRULE: ${(err as Error).message}`);
    }
  }
  if (!(parsed instanceof RRule)) throw scheduleError('must be one RRULE');
  if (parsed.origOptions.freq === undefined || parsed.origOptions.freq === null || Number.isNaN(parsed.origOptions.freq)) {
    throw scheduleError('is not an RFC 5545 RRULE: FREQ is missing');
  }
  checkParts(parsed);
  return parsed;
}

/** The first occurrence strictly after `afterMs` and within the horizon; null when there is none. Throws when the rule runs out of time. */
export function occurrenceAfter(rule: Rule, afterMs: number): Date | null {
  const found = withinBudget(() => rule.between(new Date(afterMs), new Date(afterMs + HORIZON_MS), false, (_, i) => i < 1));
  if (found === null) throw new Error('the schedule could not be evaluated in time');
  return found[0] ?? null;
}

/** The latest occurrence in (`afterMs`, `upToMs`], or null; throws when the rule runs out of time. */
export function latestOccurrence(rule: Rule, afterMs: number, upToMs: number): Date | null {
  if (upToMs <= afterMs) return null;
  const found = withinBudget(() => rule.before(new Date(upToMs), true) ?? undefined);
  if (found === null) throw new Error('the schedule could not be evaluated in time');
  return found !== undefined && found.getTime() > afterMs ? found : null;
}

/**
 * Checks a drill's schedule against its run's length and returns its next occurrence after `nowMs`: a 422 on `schedule` when it has
 * none within a year, or when two occurrences are closer together than a run lasts (a drill never overlaps itself).
 */
export function validateSchedule(text: string, defaultStart: string, runSeconds: number, nowMs = Date.now()): Date {
  const rule = parseSchedule(text, defaultStart);
  const sample = withinBudget(() => rule.between(new Date(nowMs), new Date(nowMs + HORIZON_MS), false, (_, i) => i < GAP_SAMPLE));
  if (sample === null) throw scheduleError('cannot be evaluated within 300 ms (or names an unknown time zone): simplify the rule');
  if (sample.length === 0) throw scheduleError('has no occurrence within the next year');
  for (let i = 1; i < sample.length; i++) {
    const gapSeconds = (sample[i]!.getTime() - sample[i - 1]!.getTime()) / 1000;
    if (gapSeconds < runSeconds) {
      throw scheduleError(
        `has occurrences ${gapSeconds} s apart, less than a run lasts (${runSeconds} s, resolveAfterSeconds): a drill must not overlap itself`,
      );
    }
  }
  return sample[0]!;
}
