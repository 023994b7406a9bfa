import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createDevice } from '../../src/domain/devices/service.js';
import { client } from '../helpers/http.js';
import { createOrgTree, type OrgFixture, startTestServer, type TestServer } from '../helpers/server.js';
import { connectDevice, refusedUpgrade } from './support.js';

/**
 * Failed device authentications take from the throttle REST uses (AUTH_FAILURES_PER_ADDRESS), per (address, device id):
 * once an address has spent its lookups, upgrades with made-up device ids are answered 429 with Retry-After without a
 * database lookup, while devices that exist, seen before by this instance or not, are still looked up and admitted.
 */
describe('device gateway: failed authentication is throttled per address and device id', () => {
  let server: TestServer;
  let org: OrgFixture;
  let wsUrl: string;
  /** Device rows looked up by token since the counter was installed. */
  let deviceLookups = 0;

  before(async () => {
    // One failure a second, a burst of five.
    server = await startTestServer({ AUTH_FAILURES_PER_ADDRESS: '1' }, { dispatcher: false });
    org = await createOrgTree(server.ctx);
    wsUrl = `${server.url.replace(/^http/, 'ws')}/devices/v1/stream`;
    const db = server.ctx.db.db;
    const selectFrom = db.selectFrom.bind(db);
    (db as unknown as { selectFrom: (table: unknown) => unknown }).selectFrom = (table: unknown) => {
      if (table === 'devices') deviceLookups++;
      return selectFrom(table as Parameters<typeof selectFrom>[0]);
    };
  });
  after(() => server.close());

  const hex = (length: number) => [...Array(length)].map(() => Math.floor(Math.random() * 16).toString(16)).join('');
  const madeUpToken = () => `enk_dev_${hex(72)}`;

  it('answers 401 for a burst of made-up tokens, then 429 without reading the database; devices seen before or not still connect', async () => {
    const seen = await createDevice(server.ctx, operatorCaller(), org.orgId, { name: 'Lobby' });
    // A station that has never connected to this instance (a base station behind the same NAT, after a restart).
    const fresh = await createDevice(server.ctx, operatorCaller(), org.orgId, { name: 'Annex' });
    // A station that connected before the flood, from the same address.
    const station = await connectDevice(wsUrl, seen.token);
    await station.close();

    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push((await refusedUpgrade(wsUrl, { authorization: `Bearer ${madeUpToken()}` })).status);
    assert.ok(
      statuses.slice(0, 4).every((s) => s === 401),
      statuses.join(','),
    );
    assert.equal(statuses.at(-1), 429, statuses.join(','));

    // The stored ids were read once for this period: made-up ids from now on cost no query.
    const lookupsBefore = deviceLookups;
    const throttled = await refusedUpgrade(wsUrl, { authorization: `Bearer ${madeUpToken()}` });
    assert.equal(throttled.status, 429);
    assert.equal(throttled.body.detail.error, 'rate_limited');
    assert.match(throttled.body.detail.message, /failed authentications/);
    assert.ok(Number(throttled.headers['retry-after']) >= 1, `Retry-After: ${throttled.headers['retry-after']}`);
    assert.equal(deviceLookups, lookupsBefore, 'a made-up device id from a throttled address reads no device row');

    // The same budget as REST: made-up keys from the address are 429 there too.
    const rest = await client(server.base, `enk_live_${hex(72)}`).get(`/orgs/${org.orgId}/emergencies`);
    assert.equal(rest.status, 429);
    assert.equal(rest.body.detail.error, 'rate_limited');

    // A device this instance has authenticated before is still looked up and admitted.
    const again = await connectDevice(wsUrl, seen.token);
    assert.ok(deviceLookups > lookupsBefore);
    await again.close();

    // So is a device this instance has never seen: its id is stored.
    const firstSeen = await connectDevice(wsUrl, fresh.token);
    await firstSeen.close();
  });

  it('throttles a wrong secret per device id: five 401s, then 429 for that id only; no token is a pair of its own', async () => {
    // Let the address's lookups refill (5 at 1/s) and the stored ids be read again.
    await new Promise((r) => setTimeout(r, 5_200));
    const device = await createDevice(server.ctx, operatorCaller(), org.orgId, { name: 'Guessed' });
    const other = await createDevice(server.ctx, operatorCaller(), org.orgId, { name: 'Other' });
    const guessed = `${device.token.slice(0, 'enk_dev_'.length + 8)}${hex(64)}`;
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push((await refusedUpgrade(wsUrl, { authorization: `Bearer ${guessed}` })).status);
    assert.deepEqual(statuses.slice(0, 5), [401, 401, 401, 401, 401], statuses.join(','));
    assert.equal(statuses.at(-1), 429, statuses.join(','));
    const missing = await refusedUpgrade(wsUrl, {});
    assert.equal(missing.status, 401);
    // Another stored device from the same address is not held by that id's failures.
    const connected = await connectDevice(wsUrl, other.token);
    await connected.close();
  });
});
