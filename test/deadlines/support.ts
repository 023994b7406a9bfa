import type { AppContext } from '../../src/context.js';
import { createAdminKey } from '../../src/domain/admin-keys/service.js';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { connectDevice, type TestDevice } from '../devices/support.js';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey, type OrgFixture } from '../helpers/server.js';

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** An org with a public-API client (read/write key) and an admin-API client (instance admin key). */
export interface DeadlineOrg extends OrgFixture {
  key: string;
  adminKey: string;
  api: ReturnType<typeof client>;
  admin: ReturnType<typeof client>;
}

export async function deadlineOrg(ctx: AppContext, url: string): Promise<DeadlineOrg> {
  const org = await createOrgTree(ctx);
  const { key } = await mintKey(ctx, { subjectType: 'org', subjectId: org.orgId });
  const adminKey = (await createAdminKey(ctx, operatorCaller(), { name: 'deadline tests', subject: { type: 'instance' } })).key;
  return { ...org, key, adminKey, api: client(`${url}/api/public/v1`, key), admin: client(`${url}/api/admin/v1`, adminKey) };
}

/** Registers a base station over the admin API; returns its id and token. */
export async function registerDevice(org: DeadlineOrg, name: string): Promise<{ id: string; token: string }> {
  const res = await org.admin.post(`/orgs/${org.orgId}/devices`, { name });
  if (res.status !== 201) throw new Error(`device create answered ${res.status}: ${JSON.stringify(res.body)}`);
  return { id: res.body.deviceId, token: res.body.token };
}

/** A connected device that records when each event frame arrived; with `acking`, it acknowledges every event at once. */
export interface WatchedDevice {
  device: TestDevice;
  /** Arrival time (Date.now()) of each event frame, in the order of `device.events`. */
  arrivals: number[];
  /** The event frames of one offset, with their arrival times. */
  framesOf(offset: number): { at: number; frame: any }[];
  ofType(eventType: string): any[];
  ack(offset: number): void;
}

export async function watchDevice(wsUrl: string, token: string, acking: boolean): Promise<WatchedDevice> {
  const device = await connectDevice(wsUrl, token);
  const arrivals: number[] = [];
  device.ws.on('message', (data) => {
    const frame = JSON.parse(data.toString());
    if (frame.type !== 'event') return;
    arrivals.push(Date.now());
    if (acking) device.send({ type: 'ack', offset: frame.offset });
  });
  return {
    device,
    arrivals,
    framesOf: (offset) => device.events.flatMap((frame, i) => (frame.offset === offset ? [{ at: arrivals[i]!, frame }] : [])),
    ofType: (eventType) => device.events.filter((f) => f.event.eventType === eventType),
    ack: (offset) => device.send({ type: 'ack', offset }),
  };
}

/** The org's feed items of one event type (every page). */
export async function feedOf(org: Pick<DeadlineOrg, 'api' | 'orgId'>, eventType: string): Promise<any[]> {
  const items: any[] = [];
  let cursor: string | null = null;
  do {
    const res: { status: number; body: any } = await org.api.get(
      `/orgs/${org.orgId}/events?eventType=${eventType}&limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    if (res.status !== 200) throw new Error(`feed answered ${res.status}: ${JSON.stringify(res.body)}`);
    items.push(...res.body.items);
    cursor = res.body.nextCursor;
  } while (cursor);
  return items;
}

/** Polls `check` until it returns a truthy value; fails after `timeoutMs`. */
export async function eventually<T>(what: string, check: () => T | Promise<T>, timeoutMs = 10_000, everyMs = 50): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}
