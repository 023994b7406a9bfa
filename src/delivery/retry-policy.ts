/** A subscription failing without a single success for this long is disabled. */
export const CONTINUOUS_FAILURE_LIMIT_MS = 5 * 24 * 60 * 60 * 1000;
/** A Retry-After beyond this is capped: a subscriber cannot park its queue for weeks. */
const MAX_RETRY_AFTER_MS = 24 * 60 * 60 * 1000;
const JITTER = 0.2;

/**
 * When to try again after failed attempt number `attemptsMade` (1-based), or null when the
 * schedule is exhausted. The scheduled delay gets ±20 % jitter so a recovering subscriber is not hit
 * by every queued delivery at the same instant; a Retry-After later than that is honoured.
 */
export function nextRetryDelayMs(
  scheduleSeconds: readonly number[],
  attemptsMade: number,
  retryAfterMs: number | null,
  random: () => number = Math.random,
): number | null {
  const base = scheduleSeconds[attemptsMade - 1];
  if (base === undefined) return null;
  const jittered = base * 1000 * (1 - JITTER + 2 * JITTER * random());
  const honoured = retryAfterMs === null ? 0 : Math.min(retryAfterMs, MAX_RETRY_AFTER_MS);
  return Math.round(Math.max(jittered, honoured));
}
