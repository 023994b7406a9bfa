import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { dataUri, png } from '../messages/fixtures.js';
import { ackingDevice, type ConsoleFixture, consoleFixture, eventually } from './support.js';

/** The operator console (extensions §6) in Debian's Chromium against a real server on its own database. */
describe('operator console', () => {
  let f: ConsoleFixture;
  let orgPath: string;

  before(async () => {
    f = await consoleFixture();
    orgPath = `/orgs/${f.org.orgId}`;
  });
  after(() => f.close());

  it('signs in: a wrong key is refused where it was typed, a right key lists its organizations', async () => {
    const page = await f.newPage();
    await page.goto(`${f.server.url}/console/`);
    await page.getByLabel('API key').fill(`enk_live_0123abcd${'0'.repeat(64)}`);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'not accepted' }).waitFor();
    assert.equal(new URL(page.url()).pathname, '/console/', 'no navigation on a wrong key');
    assert.equal(await page.evaluate(() => sessionStorage.length), 0, 'a refused key is not kept');

    await page.getByLabel('API key').fill(f.adminKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Organizations' }).waitFor();
    await page.getByRole('link', { name: new RegExp(f.orgName) }).waitFor();
    assert.equal(await page.evaluate(() => sessionStorage.getItem('emergency-console.key')), f.adminKey, 'kept in sessionStorage');
    assert.equal(await page.evaluate(() => localStorage.length), 0, 'never in localStorage');
    // An admin key sees the management pages; an API key does not.
    await page.getByRole('link', { name: new RegExp(f.orgName) }).click();
    await page.getByRole('link', { name: 'Webhooks' }).waitFor();
    await page.getByRole('link', { name: 'API keys' }).waitFor();
    const reader = await f.signedIn(f.readKey);
    assert.equal(await reader.getByRole('link', { name: 'Webhooks' }).count(), 0);
    assert.equal(await reader.getByRole('link', { name: 'API keys' }).count(), 0);
  });

  it('board: a declare made elsewhere appears within 2 s without a reload, newest first', async () => {
    const page = await f.signedIn(f.writeKey);
    const first = await f.api.post(`${orgPath}/emergencies`, { categoryName: 'Medical', description: 'Fall in the gym' });
    assert.equal(first.status, 201);
    await page.getByRole('link', { name: /Fall in the gym/ }).waitFor({ timeout: 2000 });
    const navigations: string[] = [];
    page.on('framenavigated', (frame) => navigations.push(frame.url()));
    const started = Date.now();
    const declared = await f.api.post(`${orgPath}/emergencies`, { categoryName: 'Fire', description: 'Smoke on floor 2' });
    assert.equal(declared.status, 201);
    const row = page.locator(`tr[data-emergency-id="${declared.body.emergencyId}"]`);
    await row.waitFor({ timeout: 2000 });
    const elapsed = Date.now() - started;
    assert.ok(elapsed < 2000, `appeared after ${elapsed} ms`);
    assert.deepEqual(navigations, [], 'no reload');
    assert.match(await row.innerText(), /Declared[\s\S]*Fire[\s\S]*5[\s\S]*Smoke on floor 2/);
    // Newest first.
    const ids = await page.locator('tr[data-emergency-id]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-emergency-id')));
    assert.equal(ids[0], declared.body.emergencyId);
    // A change elsewhere updates the row in place.
    await f.api.patch(`${orgPath}/emergencies/${declared.body.emergencyId}`, { categoryName: 'Medical' });
    await row.filter({ hasText: 'Categorized' }).filter({ hasText: 'Medical' }).waitFor({ timeout: 2000 });
    // The category colour is shown.
    const colour = await row.locator('.swatch').evaluate((el) => getComputedStyle(el).backgroundColor);
    assert.equal(colour, 'rgb(25, 118, 210)');
  });

  it('emergency view: record, timeline, a message with an image thumbnail, receipts of acknowledged and pending devices', async () => {
    const acked = await f.addDevice('Library base station');
    await f.addDevice('Gym base station'); // never connects: pending
    const device = await ackingDevice(f, acked.token);
    const declared = await f.api.post(`${orgPath}/emergencies`, { categoryName: 'Fire', description: 'Alarm in the library', location: { floorId: 'L1' } });
    const id = declared.body.emergencyId;
    await f.api.patch(`${orgPath}/emergencies/${id}`, { categoryName: 'Medical' });
    const posted = await f.api.post(`${orgPath}/emergencies/${id}/messages`, {
      content: 'Photo from the hallway',
      author: { type: 'user', name: 'Ada' },
      attachments: [{ src: dataUri('image/png', png(40, 30)), caption: 'Hallway' }, 'https://cams.example.com/live/hall.m3u8'],
    });
    assert.equal(posted.status, 201);
    await device.until(() => device.events.some((e) => e.event.emergencyId === id && e.event.sequence === 2), 5000, 'both events');
    // The acks are written within the flush interval.
    await eventually(async () => {
      const r = await f.api.get(`${orgPath}/emergencies/${id}/receipts`);
      return r.body.events.every((e: any) => e.devices.acknowledged >= 1);
    }, 'acks recorded');

    const page = await f.signedIn(f.writeKey);
    await page.getByRole('link', { name: /Alarm in the library/ }).click();
    await page.getByRole('heading', { name: /Medical emergency/ }).waitFor();
    await page.getByText('Floor L1').waitFor();
    const timeline = page.getByRole('list', { name: 'Timeline' });
    await timeline.getByText('Declared').waitFor();
    await timeline.getByText('Re-categorized').waitFor();
    // The thumbnail is the stored bytes fetched with the key (a blob: URL), decoded by the browser.
    const thumb = page.getByRole('img', { name: 'Hallway' });
    await thumb.waitFor();
    assert.match((await thumb.getAttribute('src')) ?? '', /^blob:/);
    await eventually(() => thumb.evaluate((img) => (img as HTMLImageElement).complete && (img as HTMLImageElement).naturalWidth === 40), 'image decoded');
    await page.getByText('Photo from the hallway').waitFor();
    const link = page.getByRole('link', { name: /cams\.example\.com/ });
    assert.equal(await link.getAttribute('href'), 'https://cams.example.com/live/hall.m3u8');
    // Receipts: the library acknowledged, the gym is pending, per event.
    const declaredReceipts = page.getByRole('region', { name: /Receipts of Declared/ });
    await declaredReceipts.getByText('1 of 2 base stations acknowledged').waitFor();
    await declaredReceipts.getByRole('list', { name: 'Acknowledged devices' }).getByText('Library base station').waitFor();
    await declaredReceipts.getByRole('list', { name: 'Pending devices' }).getByText('Gym base station').waitFor();
    await declaredReceipts.getByText(/Webhooks: 0 delivered, 0 failed, 0 pending \(of 0\)/).waitFor();
  });
});
