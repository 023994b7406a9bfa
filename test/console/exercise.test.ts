import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertValidCap, example, postCap } from '../cap/support.js';
import { type Receiver, startReceiver } from '../delivery/helpers.js';
import { connectMcp } from '../helpers/mcp.js';
import { ackingDevice, type ConsoleFixture, consoleFixture, eventually } from './support.js';

/**
 * Exercise emergencies (extensions §11) end to end: declared over REST, MCP and CAP ingest (status Exercise or Test), and
 * marked on every way out: the record, device frames, webhooks, the event feed, the CAP export (status Exercise), the lists'
 * filter and the console (in Chromium).
 */
describe('exercise emergencies', () => {
  let f: ConsoleFixture;
  let receiver: Receiver;

  before(async () => {
    [f, receiver] = await Promise.all([consoleFixture(), startReceiver()]);
    const sub = await f.adminApi.post('/webhooks', { subject: { type: 'org', id: f.org.orgId }, url: `${receiver.url}/hook` });
    assert.equal(sub.status, 201, JSON.stringify(sub.body));
  });
  after(async () => {
    await Promise.all([f?.close(), receiver?.close()]);
  });

  it('an exercise declared over REST is marked on its record, device frames, webhooks, the feed and its CAP export', async () => {
    const device = await f.addDevice('Gym station');
    const station = await ackingDevice(f, device.token);
    const real = await f.api.post(`/orgs/${f.org.orgId}/emergencies`, { categoryName: 'Fire', description: 'A real fire' });
    const drill = await f.api.post(`/orgs/${f.org.orgId}/emergencies`, { categoryName: 'Fire', description: 'Fire drill', exercise: true });
    assert.equal(real.body.exercise, false);
    assert.equal(drill.body.exercise, true);

    // Fixed once declared: no change takes the field.
    const change = await f.api.patch(`/orgs/${f.org.orgId}/emergencies/${drill.body.emergencyId}`, { categoryName: 'Medical', exercise: false });
    assert.equal(change.status, 422);

    const only = async (exercise: string) =>
      (await f.api.get(`/orgs/${f.org.orgId}/emergencies?exercise=${exercise}`)).body.items.map((e: { emergencyId: string }) => e.emergencyId);
    assert.deepEqual(await only('true'), [drill.body.emergencyId]);
    assert.deepEqual(await only('false'), [real.body.emergencyId]);
    assert.equal((await f.api.get(`/orgs/${f.org.orgId}/emergencies?exercise=maybe`)).status, 422);

    await eventually(() => station.events.some((e) => e.event.emergencyId === drill.body.emergencyId), 'the exercise frame');
    const frames = (id: string) => station.events.filter((e) => e.event.emergencyId === id).map((e) => (e.event.data as { exercise?: boolean }).exercise);
    assert.deepEqual(frames(drill.body.emergencyId), [true]);
    assert.deepEqual(frames(real.body.emergencyId), [false]);

    await eventually(() => receiver.forPath('/hook').length >= 2, 'the two webhooks');
    const hooks = new Map(receiver.forPath('/hook').map((r) => [r.json.emergencyId, r.json.data.exercise]));
    assert.equal(hooks.get(drill.body.emergencyId), true);
    assert.equal(hooks.get(real.body.emergencyId), false);

    const feed = await f.api.get(`/orgs/${f.org.orgId}/events?emergencyId=${drill.body.emergencyId}`);
    assert.deepEqual(
      feed.body.items.map((i: { event: { data: { exercise: boolean; emergency: { exercise: boolean } } } }) => [
        i.event.data.exercise,
        i.event.data.emergency.exercise,
      ]),
      [[true, true]],
    );

    const cap = await (
      await fetch(`${f.server.base}/orgs/${f.org.orgId}/emergencies/${drill.body.emergencyId}/cap`, { headers: { authorization: `Bearer ${f.writeKey}` } })
    ).text();
    assert.match(cap, /<status>Exercise<\/status>/);
    assertValidCap(cap, 'the exercise export');
    const atom = await (await fetch(`${f.server.base}/orgs/${f.org.orgId}/cap/feed`, { headers: { authorization: `Bearer ${f.writeKey}` } })).text();
    assert.match(atom, /<title>EXERCISE: Fire<\/title>/);
  });

  it('CAP ingest declares an Exercise or Test alert as an exercise, and an Actual update cannot change it', async () => {
    const a1 = example('a1-homeland-security-advisory');
    for (const status of ['Exercise', 'Test']) {
      const xml = a1.replace('<status>Actual</status>', `<status>${status}</status>`).replace('43b080713727', `43b080713727-${status}`);
      const res = await postCap(f.server.base, f.writeKey, f.org.orgId, xml);
      assert.equal(res.status, 201, JSON.stringify(res.body));
      assert.equal(res.body.exercise, true);
    }
    const update = a1
      .replace('<msgType>Alert</msgType>', '<msgType>Update</msgType>')
      .replace('43b080713727', '43b080713727-update')
      .replace('<scope>Public</scope>', '<scope>Public</scope>\n    <references>hsas@dhs.gov,43b080713727-Exercise,2003-04-02T14:39:01-05:00</references>');
    const refused = await postCap(f.server.base, f.writeKey, f.org.orgId, update);
    assert.equal(refused.status, 422, JSON.stringify(refused.body));
    assert.equal(refused.body.detail[0].type, 'cap_status_mismatch');
  });

  it('the tool server declares and lists exercises', async () => {
    const mcp = await connectMcp(f.server.url, f.writeKey);
    try {
      const declared = await mcp.ok('create_emergency', { orgId: f.org.orgId, categoryName: 'Medical', description: 'Agent drill', exercise: true });
      assert.equal(declared.exercise, true);
      const listed = await mcp.ok('list_emergencies', { orgId: f.org.orgId, exercise: true });
      assert.ok(listed.items.some((e: { emergencyId: string }) => e.emergencyId === declared.emergencyId));
      assert.ok(listed.items.every((e: { exercise: boolean }) => e.exercise));
    } finally {
      await mcp.close();
    }
  });

  it('the console shows EXERCISE on the board and in the emergency, and declares one when asked', async () => {
    const page = await f.signedIn(f.writeKey);
    const row = page.locator('tr', { hasText: 'Fire drill' });
    await row.getByText('EXERCISE', { exact: true }).waitFor();
    assert.equal(await page.locator('tr', { hasText: 'A real fire' }).getByText('EXERCISE', { exact: true }).count(), 0);
    await row.getByRole('link').first().click();
    await page
      .getByRole('heading', { name: /Fire emergency/ })
      .getByText('EXERCISE')
      .waitFor();

    // Signed in with a name: the declare records the person.
    const board = await f.signedIn(f.writeKey, 1280, { name: 'Drill Lead' });
    await board.getByRole('button', { name: 'Declare emergency' }).click();
    await board.getByLabel('Description').fill('Lockdown drill from the console');
    await board.getByLabel(/^Exercise/).check();
    await board.getByRole('button', { name: 'Declare…' }).click();
    await board.getByRole('button', { name: 'Declare the exercise now' }).click();
    await board.locator('tr', { hasText: 'Lockdown drill from the console' }).getByText('EXERCISE', { exact: true }).waitFor();
    const listed = await f.api.get(`/orgs/${f.org.orgId}/emergencies?exercise=true&limit=200`);
    assert.ok(listed.body.items.some((e: { description: string }) => e.description === 'Lockdown drill from the console'));
  });
});
