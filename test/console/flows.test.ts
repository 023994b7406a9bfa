import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startReceiver } from '../delivery/helpers.js';
import { client } from '../helpers/http.js';
import { mintKey } from '../helpers/server.js';
import { dataUri, png } from '../messages/fixtures.js';
import { ackingDevice, type ConsoleFixture, consoleFixture, eventually } from './support.js';

/**
 * In the page: every control, image, dialog, nav, table and form without an accessible name (from
 * aria-label, aria-labelledby, a <label>, title, alt, or a button's or link's text). A string, so the
 * test runner's transpiler adds nothing to it.
 */
const UNNAMED_CONTROLS = `(() => {
  const nameOf = (el) => {
    const labelledBy = el.getAttribute('aria-labelledby');
    const byIds = labelledBy ? labelledBy.split(/\\s+/).map((id) => document.getElementById(id)?.textContent ?? '').join(' ') : '';
    const labels = el.labels ? Array.from(el.labels).map((l) => l.textContent ?? '') : [];
    const own = el.matches('button, a') ? el.textContent ?? '' : '';
    return [el.getAttribute('aria-label') ?? '', byIds, ...labels, el.getAttribute('title') ?? '', el.getAttribute('alt') ?? '', own].join(' ').trim();
  };
  return Array.from(document.querySelectorAll('button, a[href], input, select, textarea, img, [role="img"], dialog, nav, table, form'))
    .filter((el) => !nameOf(el))
    .map((el) => el.outerHTML.slice(0, 120));
})()`;

/** The operator console (extensions §6) in Debian's Chromium against a real server on its own database. */
describe('operator console', () => {
  let f: ConsoleFixture;
  let orgPath: string;

  before(async () => {
    f = await consoleFixture();
    orgPath = `/orgs/${f.org.orgId}`;
  });
  after(() => f.close());

  it('signs in: a wrong key is refused where it was typed, a right key opens its organization', async () => {
    const page = await f.newPage();
    await page.goto(`${f.server.url}/console/`);
    await page.getByLabel('API key').fill(`enk_live_0123abcd${'0'.repeat(64)}`);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'not accepted' }).waitFor();
    assert.equal(new URL(page.url()).pathname, '/console/', 'no navigation on a wrong key');
    assert.equal(await page.evaluate(() => sessionStorage.length), 0, 'a refused key is not kept');

    await page.getByLabel('API key').fill(f.adminKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    // The instance holds one organization so far: its board opens without the picker.
    await page.getByRole('heading', { name: 'Emergencies' }).waitFor();
    await page.getByRole('navigation', { name: `${f.orgName} pages` }).waitFor();
    assert.equal(await page.evaluate(() => sessionStorage.getItem('emergency-console.key')), f.adminKey, 'kept in sessionStorage');
    assert.equal(await page.evaluate(() => localStorage.length), 0, 'never in localStorage');
    // An admin key sees the management pages; an API key does not.
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
    // Set-up, not the measured declare: the page may still be loading its board and opening its stream
    // (on a loaded machine that alone took over 2 s once), so this waits longer than the limit below.
    await page.getByRole('link', { name: /Fall in the gym/ }).waitFor({ timeout: 10_000 });
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
    const thumb = page.getByRole('img', { name: 'Hallway', exact: true });
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

  it('declare, re-categorize and resolve, each behind a confirmation that can be cancelled', async () => {
    const page = await f.signedIn(f.writeKey, 1280, { name: 'Ada Lovelace' });
    await page.getByRole('button', { name: 'Declare emergency' }).click();
    const form = page.getByRole('form', { name: 'Declare an emergency' });
    await form.getByLabel('Category').selectOption({ label: 'Fire (severity 5)' });
    await form.getByLabel('Description').fill('Kitchen fire in the cafeteria');
    await form.getByLabel('Floor (optional)').fill('G');
    await form.getByRole('button', { name: 'Declare…' }).click();
    let dialog = page.getByRole('alertdialog', { name: 'Declare this emergency?' });
    await dialog.getByText(/Fire.*emergency \(severity 5\) is declared for/).waitFor();
    // Cancel: nothing is declared.
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'detached' });
    const before = await f.api.get(`${orgPath}/emergencies?limit=200`);
    assert.equal(before.body.items.filter((e: any) => e.description === 'Kitchen fire in the cafeteria').length, 0);
    await form.getByRole('button', { name: 'Declare…' }).click();
    await dialog.getByRole('button', { name: 'Declare now' }).click();
    await page.getByRole('status').filter({ hasText: 'Declared: Fire emergency' }).waitFor();
    const list = await f.api.get(`${orgPath}/emergencies?limit=200`);
    const declared = list.body.items.find((e: any) => e.description === 'Kitchen fire in the cafeteria');
    assert.ok(declared, 'declared through the console');
    assert.equal(declared.location.floorId, 'G');
    assert.deepEqual(declared.declaredBy, { type: 'user', id: 'console:ada-lovelace', name: 'Ada Lovelace' });

    await page.getByRole('link', { name: 'Open it' }).click();
    await page.getByRole('heading', { name: /Fire emergency/ }).waitFor();
    await page.getByLabel('New category').selectOption({ label: 'Medical (severity 3)' });
    await page.getByRole('button', { name: 'Re-categorize…' }).click();
    dialog = page.getByRole('alertdialog', { name: 'Re-categorize this emergency?' });
    await dialog.getByText(/moves from Fire to Medical/).waitFor();
    await dialog.getByRole('button', { name: 'Re-categorize now' }).click();
    await page.getByRole('heading', { name: /Medical emergency/ }).waitFor();
    assert.equal((await f.api.get(`${orgPath}/emergencies/${declared.emergencyId}`)).body.status, 'categorized');
    await page.getByRole('list', { name: 'Timeline' }).getByText('Re-categorized').waitFor();

    await page.getByLabel('Resolution note').fill('Put out with the extinguisher');
    await page.getByRole('button', { name: 'Resolve…' }).click();
    dialog = page.getByRole('alertdialog', { name: 'Resolve this emergency?' });
    await dialog.getByRole('button', { name: 'Resolve now' }).click();
    await page.getByText('Put out with the extinguisher').waitFor();
    const resolved = (await f.api.get(`${orgPath}/emergencies/${declared.emergencyId}`)).body;
    assert.equal(resolved.status, 'resolved');
    assert.equal(resolved.resolutionNote, 'Put out with the extinguisher');
    assert.deepEqual(resolved.resolvedBy, { type: 'user', id: 'console:ada-lovelace', name: 'Ada Lovelace' });
    assert.equal(await page.getByRole('button', { name: 'Resolve…' }).count(), 0, 'no more actions on a resolved emergency');
  });

  it('devices: presence and lag; an admin key adds a base station (token shown once), rotates its token and revokes it', async () => {
    const online = await f.addDevice('Auditorium base station');
    const device = await ackingDevice(f, online.token);
    await f.addDevice('Boiler room base station');
    // A declare the online device acknowledges: it is caught up, the offline one is behind.
    await f.api.post(`${orgPath}/emergencies`, { categoryName: 'Medical' });
    await device.until(() => device.events.length > 0, 5000, 'the event');
    const page = await f.signedIn(f.adminKey);
    await page.getByRole('link', { name: 'Devices' }).click();
    const table = page.getByRole('table', { name: 'Base stations' });
    const row = (name: string) => table.getByRole('row').filter({ hasText: name });
    await row('Auditorium base station').getByText('Online').waitFor();
    await row('Auditorium base station').getByText('Caught up').waitFor({ timeout: 8000 });
    await row('Boiler room base station').getByText('Offline').waitFor();
    await row('Boiler room base station')
      .getByText(/\d+ events? behind/)
      .waitFor();

    await page.getByLabel('New base station name').fill('Portable unit');
    await page.getByRole('button', { name: 'Add base station' }).click();
    const secret = page.getByRole('region', { name: 'Token for Portable unit' });
    const token = (await secret.getByRole('status', { name: 'Token for Portable unit' }).or(secret.locator('output')).first().innerText()).trim();
    assert.match(token, /^enk_dev_/);
    await secret.getByRole('button', { name: 'I have stored it' }).click();
    await secret.waitFor({ state: 'detached' });
    assert.equal((await page.content()).includes(token), false, 'the token is gone once dismissed');
    const connected = await ackingDevice(f, token);
    await row('Portable unit').getByText('Online').waitFor({ timeout: 8000 });

    await page.getByRole('button', { name: 'Rotate token of Portable unit' }).click();
    await page
      .getByRole('alertdialog', { name: /Rotate the token of Portable unit/ })
      .getByRole('button', { name: 'Rotate token' })
      .click();
    const rotated = (await page.getByRole('region', { name: 'New token for Portable unit' }).locator('output').innerText()).trim();
    assert.match(rotated, /^enk_dev_/);
    assert.notEqual(rotated, token);
    await page.getByRole('button', { name: 'I have stored it' }).click();

    await page.getByRole('button', { name: 'Revoke Portable unit' }).click();
    await page.getByRole('alertdialog', { name: 'Revoke Portable unit?' }).getByRole('button', { name: 'Revoke device' }).click();
    await row('Portable unit').getByText('Revoked').waitFor();
    await connected.until(() => connected.closeCode !== null, 8000, 'the revoked socket closed');
  });

  it('webhooks: health and recent attempts, a test delivery, and a replay behind a confirmation', async () => {
    const receiver = await startReceiver();
    try {
      const created = await f.adminApi.post('/webhooks', { url: `${receiver.url}/hooks/ops`, subject: { type: 'org', id: f.org.orgId } });
      assert.equal(created.status, 201);
      await f.api.post(`${orgPath}/emergencies`, { categoryName: 'Fire', description: 'webhook check' });
      await eventually(() => receiver.forPath('/hooks/ops').length >= 1, 'the delivery');
      const page = await f.signedIn(f.adminKey);
      await page.getByRole('link', { name: 'Webhooks' }).click();
      const card = page.getByRole('article', { name: `${receiver.url}/hooks/ops` });
      await card.getByText('Healthy: the latest delivery succeeded').waitFor();
      const deliveries = card.getByRole('table', { name: /Recent deliveries/ });
      await deliveries.getByText('emergency.declared').first().waitFor();
      await deliveries
        .getByText(/HTTP 204, \d+ ms/)
        .first()
        .waitFor();

      await card.getByRole('button', { name: /Send a test event/ }).click();
      await card.getByText(/Test delivered: HTTP 204/).waitFor();

      const received = receiver.forPath('/hooks/ops').length;
      await card.getByLabel('Replay events since').fill('2000-01-01T00:00:00');
      await card.getByRole('button', { name: 'Replay…' }).click();
      const dialog = page.getByRole('alertdialog', { name: 'Replay deliveries?' });
      await dialog.getByRole('button', { name: 'Replay now' }).click();
      await card.getByText(/Replayed \d+ events?\./).waitFor();
      const replayed = Number(/Replayed (\d+)/.exec(await card.getByText(/Replayed \d+/).innerText())![1]);
      assert.ok(replayed >= 1);
      await eventually(() => receiver.forPath('/hooks/ops').length >= received + 1, 'the replayed deliveries');
    } finally {
      await receiver.close();
    }
  });

  it('API keys: minting shows the key once, rotation mints a working successor, revocation refuses the key', async () => {
    const page = await f.signedIn(f.adminKey);
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByLabel('New key name').fill('Front desk');
    await page.getByRole('button', { name: 'Mint key' }).click();
    const minted = page.getByRole('region', { name: /New API key/ });
    const key = (await minted.locator('output').innerText()).trim();
    assert.match(key, /^enk_live_[0-9a-f]{72}$/);
    assert.equal((await client(f.server.base, key).get('/orgs')).status, 200, 'the minted key works');
    await minted.getByRole('button', { name: 'I have stored it' }).click();
    await minted.waitFor({ state: 'detached' });
    assert.equal((await page.content()).includes(key), false, 'shown once');
    const row = page.getByRole('table', { name: 'API keys' }).getByRole('row').filter({ hasText: 'Front desk' });
    await row.getByText('read, write').waitFor();

    await page.getByRole('button', { name: 'Rotate Front desk' }).first().click();
    await page
      .getByRole('alertdialog', { name: /Rotate “Front desk”/ })
      .getByRole('button', { name: 'Rotate key' })
      .click();
    const rotated = (
      await page
        .getByRole('region', { name: /Rotated key/ })
        .locator('output')
        .innerText()
    ).trim();
    assert.notEqual(rotated, key);
    assert.equal((await client(f.server.base, rotated).get('/orgs')).status, 200, 'the successor works');
    await page.getByRole('button', { name: 'I have stored it' }).click();

    const kiosk = await mintKey(f.server.ctx, { subjectType: 'org', subjectId: f.org.orgId, name: 'Lobby kiosk', permissions: ['read'] });
    await page.reload();
    await page.getByRole('button', { name: 'Revoke Lobby kiosk' }).click();
    await page
      .getByRole('alertdialog', { name: /Revoke “Lobby kiosk”/ })
      .getByRole('button', { name: 'Revoke key' })
      .click();
    await page.getByRole('table', { name: 'API keys' }).getByRole('row').filter({ hasText: 'Lobby kiosk' }).getByText('Revoked').waitFor();
    await eventually(async () => (await client(f.server.base, kiosk.key).get('/orgs')).status === 401, 'the revoked key refused', 5000);
  });

  it('audit log: filtered by category and event type', async () => {
    const declared = await f.api.post(`${orgPath}/emergencies`, { categoryName: 'Medical', description: 'audit check' });
    await f.api.post(`${orgPath}/emergencies/${declared.body.emergencyId}/resolutions`, { resolutionNote: 'ok' });
    const page = await f.signedIn(f.writeKey);
    await page.getByRole('link', { name: 'Audit log' }).click();
    const table = page.getByRole('table', { name: 'Audit entries' });
    await table.getByText('emergency.declared').first().waitFor();
    await page.getByLabel('Category').selectOption('emergency');
    await page.getByLabel('Event type').fill('emergency.resolved');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await eventually(async () => {
      const types = await table.locator('tbody tr td[data-label="Event"]').allInnerTexts();
      return types.length > 0 && types.every((t) => t.trim() === 'emergency.resolved');
    }, 'only emergency.resolved entries');
    await page.getByLabel('Actor id').fill('nobody-at-all');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.getByText('No audit entries match.').waitFor();
  });

  it('401: a key revoked while signed in sends the operator back to sign-in with a message', async () => {
    const doomed = await f.adminApi.post('/api-keys', { name: 'soon revoked', subject: { type: 'org', id: f.org.orgId }, permissions: ['read'] });
    const page = await f.signedIn(doomed.body.key);
    await page.getByRole('link', { name: 'Devices' }).click();
    await page.getByRole('heading', { name: 'Base stations' }).waitFor();
    assert.equal((await f.adminApi.post(`/api-keys/${doomed.body.apiKeyId}/revoke`)).status, 200);
    // The devices page asks again every 5 s; the key cache forgets a revoked key within 2 s.
    await page.getByRole('heading', { name: 'Sign in' }).waitFor({ timeout: 15_000 });
    await page.getByText('The service refused your key (401). Sign in again.').waitFor();
    assert.equal(await page.evaluate(() => sessionStorage.getItem('emergency-console.key')), null, 'the key is forgotten');
  });

  it('403: a read-only key sees no write controls, a refused write says so, and pages it may not see say "Not allowed"', async () => {
    const page = await f.signedIn(f.readKey);
    await page.getByText('This key can read only').waitFor();
    assert.equal(await page.getByRole('button', { name: 'Declare emergency' }).count(), 0);
    // Should the page believe the key may write (here its GET /me answer is altered in the browser), the
    // service's 403 to the write is shown where it was attempted.
    const believing = await f.newPage();
    await believing.route('**/api/public/v1/me', async (route) => {
      const response = await route.fetch();
      const me = await response.json();
      await route.fulfill({ response, json: { ...me, permissions: ['read', 'write'] } });
    });
    await believing.goto(`${f.server.url}/console/`);
    await believing.getByLabel('API key').fill(f.readKey);
    await believing.getByLabel('Your name (optional)').fill('Ada Lovelace');
    await believing.getByRole('button', { name: 'Sign in' }).click();
    await believing.getByRole('button', { name: 'Declare emergency' }).click();
    await believing.getByRole('button', { name: 'Declare…' }).click();
    const dialog = believing.getByRole('alertdialog', { name: 'Declare this emergency?' });
    await dialog.getByRole('button', { name: 'Declare now' }).click();
    await dialog
      .getByRole('alert')
      .getByText(/Not allowed: .*lacks the "emergencies:write" permission/)
      .waitFor();
    // Another organization's board, by its URL: not covered by this key.
    const other = await f.adminApi.post(`/enterprises/${f.org.enterpriseId}/orgs`, { name: 'Elsewhere' });
    await page.goto(`${f.server.url}/console/orgs/${other.body.orgId}`);
    await page
      .getByRole('alert')
      .getByText(/Not allowed/)
      .waitFor();
    // Management pages need an admin key.
    await page.goto(`${f.server.url}/console/orgs/${f.org.orgId}/webhooks`);
    await page
      .getByRole('alert')
      .getByText(/Not allowed: this page needs an admin key/)
      .waitFor();
    assert.notEqual(await page.evaluate(() => sessionStorage.getItem('emergency-console.key')), null, 'a 403 keeps the session');
  });

  it('every control has an accessible name and no page scrolls sideways, at 1280 px and at 390 px', async () => {
    const declared = await f.api.post(`${orgPath}/emergencies`, { categoryName: 'Fire', description: 'a11y check' });
    await f.api.post(`${orgPath}/emergencies/${declared.body.emergencyId}/messages`, {
      content: 'photo',
      attachments: [{ src: dataUri('image/png', png(8, 8)), caption: 'Tiny' }],
    });
    const pages = ['', `/emergencies/${declared.body.emergencyId}`, '/devices', '/webhooks', '/api-keys', '/audit'];
    for (const width of [1280, 390]) {
      const page = await f.signedIn(f.adminKey, width);
      for (const path of pages) {
        await page.goto(`${f.server.url}/console/orgs/${f.org.orgId}${path}`);
        await page.locator('main h1').first().waitFor();
        await eventually(async () => (await page.getByText(/^Loading .*…$/).count()) === 0, `${path} loaded`);
        const unnamed = (await page.evaluate(UNNAMED_CONTROLS)) as string[];
        assert.deepEqual(unnamed, [], `unnamed controls on ${path || 'the board'} at ${width} px`);
        const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
        assert.ok(overflow <= 0, `${path || 'the board'} scrolls sideways by ${overflow} px at ${width} px`);
      }
    }
  });
});
