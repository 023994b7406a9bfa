import type { DeadlineOrg } from '../deadlines/support.js';
import { eventually } from '../deadlines/support.js';

/** An RRULE's DTSTART form of a time: whole seconds, UTC. */
export function dtstart(ms: number): string {
  return new Date(Math.ceil(ms / 1000) * 1000)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
}

/** A schedule of `count` runs `intervalSeconds` apart, the first `inSeconds` from now. */
export function shortSchedule(inSeconds: number, intervalSeconds: number, count: number): { schedule: string; times: string[] } {
  const first = Math.ceil((Date.now() + inSeconds * 1000) / 1000) * 1000;
  return {
    schedule: `DTSTART:${dtstart(first)}\nRRULE:FREQ=SECONDLY;INTERVAL=${intervalSeconds};COUNT=${count}`,
    times: Array.from({ length: count }, (_, i) => new Date(first + i * intervalSeconds * 1000).toISOString()),
  };
}

/** Every run of a drill, newest first (every page). */
export async function runsOf(org: Pick<DeadlineOrg, 'admin' | 'orgId'>, drillId: string): Promise<any[]> {
  const items: any[] = [];
  let cursor: string | null = null;
  do {
    const res: { status: number; body: any } = await org.admin.get(
      `/orgs/${org.orgId}/drills/${drillId}/runs?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    if (res.status !== 200) throw new Error(`runs answered ${res.status}: ${JSON.stringify(res.body)}`);
    items.push(...res.body.items);
    cursor = res.body.nextCursor;
  } while (cursor);
  return items;
}

/** Waits until the drill has `count` completed runs; returns every run. */
export async function completedRuns(org: Pick<DeadlineOrg, 'admin' | 'orgId'>, drillId: string, count: number, timeoutMs = 45_000): Promise<any[]> {
  return eventually(
    `${count} completed runs`,
    async () => {
      const runs = await runsOf(org, drillId);
      return runs.filter((r) => r.status === 'completed').length >= count ? runs : null;
    },
    timeoutMs,
    250,
  );
}
