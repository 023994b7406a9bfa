import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createDevice } from '../../src/domain/devices/service.js';
import { client } from '../helpers/http.js';
import { createOrgTree, type OrgFixture, startTestServer, type TestServer } from '../helpers/server.js';
import { connectDevice, refusedUpgrade } from './support.js';

/**
 * Failed device authentications take from the per-address limiter REST uses (AUTH_FAILURES_PER_ADDRESS):
 * once an address has used up its failures, its upgrades with tokens this instance has not seen
 * authenticate are answered 429 with Retry-After, without a database lookup.
 */
describe('device gateway: failed authentication is throttled per address', () => {
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

  const madeUpToken = () => `enk_dev_${[...Array(72)].map(() => Math.floor(Math.random() * 16).toString(16)).join('')}`;

  it('answers 401 for a burst of bad tokens, then 429 with Retry-After without reading the database; a device already seen still connects', async () => {
    const device = await createDevice(server.ctx, operatorCaller(), org.orgId, { name: 'Lobby' });
    // A station that connected before the flood, from the same address.
    const station = await connectDevice(wsUrl, device.token);
    await station.close();

    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push((await refusedUpgrade(wsUrl, { authorization: `Bearer ${madeUpToken()}` })).status);
    assert.deepEqual(statuses.slice(0, 5), [401, 401, 401, 401, 401], statuses.join(','));
    assert.equal(statuses.at(-1), 429, statuses.join(','));

    const lookupsBefore = deviceLookups;
    const throttled = await refusedUpgrade(wsUrl, { authorization: `Bearer ${madeUpToken()}` });
    assert.equal(throttled.status, 429);
    assert.equal(throttled.body.detail.error, 'rate_limited');
    assert.match(throttled.body.detail.message, /failed authentications/);
    assert.ok(Number(throttled.headers['retry-after']) >= 1, `Retry-After: ${throttled.headers['retry-after']}`);
    // No token, and a malformed one, are failures too.
    assert.equal((await refusedUpgrade(wsUrl, {})).status, 429);
    assert.equal((await refusedUpgrade(wsUrl, { authorization: 'Bearer enk_dev_nothex' })).status, 429);
    assert.equal(deviceLookups, lookupsBefore, 'a throttled upgrade reads no device row');

    // The same limiter as REST: the address's REST failures are throttled as well.
    const rest = await client(server.base, `enk_live_${'0'.repeat(72)}`).get(`/orgs/${org.orgId}/emergencies`);
    assert.equal(rest.status, 429);
    assert.equal(rest.body.detail.error, 'rate_limited');

    // A device this instance has authenticated before is still looked up and admitted.
    const again = await connectDevice(wsUrl, device.token);
    assert.ok(deviceLookups > lookupsBefore);
    await again.close();
  });

  it('shares its budget with REST: failures there leave the upgrades throttled too', async () => {
    // Let the bucket refill (5 tokens at 1/s).
    await new Promise((r) => setTimeout(r, 5_200));
    for (let i = 0; i < 5; i++) {
      const res = await client(server.base, `enk_live_${'1'.repeat(72)}`).get(`/orgs/${org.orgId}/emergencies`);
      assert.equal(res.status, 401);
    }
    const upgrade = await refusedUpgrade(wsUrl, { authorization: `Bearer ${madeUpToken()}` });
    assert.equal(upgrade.status, 429);
    assert.ok(Number(upgrade.headers['retry-after']) >= 1);
  });
});
