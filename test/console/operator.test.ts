import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { createOrgTree, mintKey } from '../helpers/server.js';
import { type ConsoleFixture, consoleFixture, eventually } from './support.js';

/** A loopback port nothing listens on: a webhook sent there fails with a connection error. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Records, from before the first script runs, whether the organization picker was ever rendered. */
const WATCH_PICKER = `
  window.__sawPicker = false;
  new MutationObserver(() => {
    for (const h of document.querySelectorAll('h1')) if (h.textContent === 'Organizations') window.__sawPicker = true;
  }).observe(document, { childList: true, subtree: true });
`;

/**
 * The console reads its key with GET /me: what it may do and where, without a write probe; the
 * operator's name on declares and resolutions; messages posted from the emergency view; the neutral
 * receipts of an event no base station was sent; the error of a webhook's latest attempt.
 */
describe('operator console: the key read, the operator name, messages', () => {
  let f: ConsoleFixture;
  let orgPath: string;

  before(async () => {
    f = await consoleFixture();
    orgPath = `/orgs/${f.org.orgId}`;
  });
  after(() => f.close());

  async function signIn(page: Page, key: string, name?: string): Promise<void> {
    await page.goto(`${f.server.url}/console/`);
    await page.getByLabel('API key').fill(key);
    if (name) await page.getByLabel('Your name (optional)').fill(name);
    await page.getByRole('button', { name: 'Sign in' }).click();
  }

  it('a key of one org lands on its board without the picker; the board loads with no write probe and nothing failing', async () => {
    const page = await f.newPage();
    await page.addInitScript(WATCH_PICKER);
    const requests: string[] = [];
    const problems: string[] = [];
    page.on('request', (r) => requests.push(`${r.method()} ${new URL(r.url()).pathname}`));
    page.on('response', (r) => {
      if (r.status() >= 400) problems.push(`${r.status()} ${r.request().method()} ${r.url()}`);
    });
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(`console: ${m.text()}`);
    });
    page.on('pageerror', (err) => problems.push(`page: ${err.message}`));

    await signIn(page, f.writeKey);
    await page.getByRole('heading', { name: 'Emergencies' }).waitFor();
    assert.equal(new URL(page.url()).pathname, `/console/orgs/${f.org.orgId}`);
    await page.getByRole('button', { name: 'Declare emergency' }).waitFor();
    await eventually(() => requests.some((r) => r.endsWith('/stream')), 'the live channel opened');
    // Opened again by its URL (a reload): the key is read once more, the same way.
    await page.reload();
    await page.getByRole('button', { name: 'Declare emergency' }).waitFor();
    await eventually(() => requests.filter((r) => r.endsWith('/stream')).length >= 2, 'the live channel opened again');

    assert.equal(await page.evaluate('window.__sawPicker'), false, 'the picker was never shown');
    assert.equal(requests.filter((r) => r === 'GET /api/public/v1/me').length, 2, 'the key read with GET /me at sign-in and after the reload');
    assert.deepEqual(
      requests.filter((r) => r.includes('/resolutions') || r.startsWith('POST')),
      [],
      'nothing written on load',
    );
    assert.deepEqual(problems, []);

    // A read-only key: the same read tells the console to show no write controls.
    const reader = await f.newPage();
    await signIn(reader, f.readKey);
    await reader.getByText('This key can read only').waitFor();
    assert.equal(await reader.getByRole('button', { name: 'Declare emergency' }).count(), 0);
  });

  it('a key of several orgs shows the picker with each of them', async () => {
    const second = await createOrgTree(f.server.ctx, { partnerId: f.org.partnerId });
    const partnerKey = await mintKey(f.server.ctx, { subjectType: 'partner', subjectId: f.org.partnerId, permissions: ['read'] });
    const names = (await f.api.get('/orgs')).body.items.map((o: { name: string }) => o.name);
    const secondName = (await f.adminApi.get(`/orgs/${second.orgId}`)).body.name;
    const page = await f.newPage();
    await signIn(page, partnerKey.key);
    const list = page.getByRole('list', { name: 'Organizations' });
    await list.waitFor();
    for (const name of [...names, secondName]) await list.getByRole('link', { name: new RegExp(name) }).waitFor();
    await list.getByRole('link', { name: new RegExp(secondName) }).click();
    await page.getByRole('heading', { name: 'Emergencies' }).waitFor();
    assert.equal(new URL(page.url()).pathname, `/console/orgs/${second.orgId}`);
  });

  it('the name given at sign-in, or changed later, is the declaredBy and resolvedBy of what the console declares and resolves', async () => {
    const page = await f.signedIn(f.writeKey, 1280, { name: 'Ada  Lovelace ' });
    await page.getByText('Acting as Ada Lovelace').waitFor();
    await page.getByRole('button', { name: 'Declare emergency' }).click();
    const form = page.getByRole('form', { name: 'Declare an emergency' });
    await form.getByLabel('Description').fill('Named declare');
    await form.getByRole('button', { name: 'Declare…' }).click();
    const dialog = page.getByRole('alertdialog', { name: 'Declare this emergency?' });
    assert.equal(await dialog.getByLabel('Your name').count(), 0, 'a known name is not asked again');
    await dialog.getByRole('button', { name: 'Declare now' }).click();
    await page.getByRole('status').filter({ hasText: 'Declared:' }).waitFor();
    const declared = (await f.api.get(`${orgPath}/emergencies?limit=200`)).body.items.find((e: any) => e.description === 'Named declare');
    assert.deepEqual(declared.declaredBy, { type: 'user', id: 'console:ada-lovelace', name: 'Ada Lovelace' });

    await page.getByRole('button', { name: 'Change name' }).click();
    const naming = page.getByRole('dialog', { name: 'Change your name' });
    await naming.getByLabel('Your name', { exact: true }).fill('Grace Hopper');
    await naming.getByRole('button', { name: 'Save name' }).click();
    await page.getByText('Acting as Grace Hopper').waitFor();
    await page.getByRole('link', { name: 'Open it' }).click();
    await page.getByRole('button', { name: 'Resolve…' }).click();
    await page.getByRole('alertdialog', { name: 'Resolve this emergency?' }).getByRole('button', { name: 'Resolve now' }).click();
    await page.getByText('by Grace Hopper').waitFor();
    const resolved = (await f.api.get(`${orgPath}/emergencies/${declared.emergencyId}`)).body;
    assert.equal(resolved.status, 'resolved');
    assert.deepEqual(resolved.resolvedBy, { type: 'user', id: 'console:grace-hopper', name: 'Grace Hopper' });
  });

  it('without a name, the first write asks for it once; it is kept for the tab', async () => {
    const page = await f.signedIn(f.writeKey);
    await page.getByText('No name given').waitFor();
    await page.getByRole('button', { name: 'Declare emergency' }).click();
    const form = page.getByRole('form', { name: 'Declare an emergency' });
    await form.getByLabel('Description').fill('Asked for a name');
    await form.getByRole('button', { name: 'Declare…' }).click();
    const dialog = page.getByRole('alertdialog', { name: 'Declare this emergency?' });
    await dialog.getByRole('button', { name: 'Declare now' }).click();
    await dialog.getByRole('alert').getByText('Enter your name').waitFor();
    const none = (await f.api.get(`${orgPath}/emergencies?limit=200`)).body.items.filter((e: any) => e.description === 'Asked for a name');
    assert.deepEqual(none, [], 'nothing declared without a name');
    await dialog.getByLabel('Your name').fill('Émile Zola');
    await dialog.getByRole('button', { name: 'Declare now' }).click();
    await page.getByRole('status').filter({ hasText: 'Declared:' }).waitFor();
    const declared = (await f.api.get(`${orgPath}/emergencies?limit=200`)).body.items.find((e: any) => e.description === 'Asked for a name');
    assert.deepEqual(declared.declaredBy, { type: 'user', id: 'console:emile-zola', name: 'Émile Zola' });
    await page.getByText('Acting as Émile Zola').waitFor();
    assert.equal(await page.evaluate(() => sessionStorage.getItem('emergency-console.name')), 'Émile Zola');
    assert.equal(await page.evaluate(() => localStorage.length), 0);
    await page.reload();
    await page.getByText('Acting as Émile Zola').waitFor();
    // Signing out forgets it with the key.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    assert.equal(await page.evaluate(() => sessionStorage.getItem('emergency-console.name')), null);
  });

  it('an event no base station was sent says so, neutrally', async () => {
    const devices = await f.api.get(`${orgPath}/devices`);
    assert.equal(devices.body.items?.length ?? 0, 0, 'the org has no base station');
    const declared = await f.api.post(`${orgPath}/emergencies`, { categoryName: 'Medical', description: 'No stations here' });
    const page = await f.signedIn(f.readKey);
    await page.goto(`${f.server.url}/console${orgPath}/emergencies/${declared.body.emergencyId}`);
    const receipts = page.getByRole('region', { name: /^Receipts of Declared/ });
    const text = receipts.getByText('No base stations targeted');
    await text.waitFor();
    assert.equal(await text.getAttribute('class'), 'muted');
    assert.equal(await receipts.getByText(/0 of 0/).count(), 0);
  });

  it('posts a message from the emergency view: shown at once, readable over the API, posted once when retried after a lost answer', async () => {
    const declared = await f.api.post(`${orgPath}/emergencies`, { categoryName: 'Fire', description: 'Conversation check' });
    const id = declared.body.emergencyId;
    const page = await f.signedIn(f.writeKey, 1280, { name: 'Ada Lovelace' });
    await page.goto(`${f.server.url}/console${orgPath}/emergencies/${id}`);
    const composer = page.getByRole('form', { name: 'Post a message' });
    await composer.getByLabel('New message').fill('Evacuating the east wing');
    await composer.getByRole('button', { name: 'Post message' }).click();
    const messages = page.getByRole('list', { name: 'Messages' });
    await messages.getByText('Evacuating the east wing').waitFor();
    assert.equal(await composer.getByLabel('New message').inputValue(), '', 'the field is emptied');
    const listed = (await f.api.get(`${orgPath}/emergencies/${id}/messages`)).body.items;
    assert.deepEqual(
      listed.map((m: any) => [m.content, m.source]),
      [['Evacuating the east wing', 'user']],
    );

    // The answer is lost on the way back: the post was made, the page says it could not tell.
    let dropped = 0;
    await page.route('**/messages', async (route) => {
      if (route.request().method() !== 'POST' || dropped > 0) return route.fallback();
      dropped++;
      await route.fetch();
      await route.abort('connectionreset');
    });
    await composer.getByLabel('New message').fill('Second floor clear');
    await composer.getByRole('button', { name: 'Post message' }).click();
    await composer
      .getByRole('alert')
      .getByText(/Message not posted: .*could not be reached/)
      .waitFor();
    assert.equal(await composer.getByLabel('New message').inputValue(), 'Second floor clear', 'the text is kept');
    // Posting again sends the same Idempotency-Key: the stored answer comes back, nothing is posted twice.
    await composer.getByRole('button', { name: 'Post message' }).click();
    await messages.getByText('Second floor clear').waitFor();
    assert.equal(await composer.getByRole('alert').count(), 0);
    const after = (await f.api.get(`${orgPath}/emergencies/${id}/messages`)).body.items;
    assert.deepEqual(
      after.map((m: any) => m.content),
      ['Evacuating the east wing', 'Second floor clear'],
    );
    assert.equal(await messages.getByText('Second floor clear').count(), 1);
  });

  it('a read-only key sees the conversation without the message form', async () => {
    const declared = await f.api.post(`${orgPath}/emergencies`, { categoryName: 'Fire', description: 'Read-only conversation' });
    const page = await f.signedIn(f.readKey);
    await page.goto(`${f.server.url}/console${orgPath}/emergencies/${declared.body.emergencyId}`);
    await page.getByRole('heading', { name: 'Messages' }).waitFor();
    await page.getByText('No messages.').waitFor();
    assert.equal(await page.getByRole('form', { name: 'Post a message' }).count(), 0);
  });

  it('webhooks: the error of the latest delivery’s latest attempt is shown', async () => {
    const port = await closedPort();
    const url = `http://127.0.0.1:${port}/hooks/down`;
    const created = await f.adminApi.post('/webhooks', { url, subject: { type: 'org', id: f.org.orgId } });
    assert.equal(created.status, 201);
    await f.api.post(`${orgPath}/emergencies`, { categoryName: 'Fire', description: 'webhook down' });
    let error = '';
    await eventually(async () => {
      const deliveries = (await f.adminApi.get(`/webhooks/${created.body.webhookId}/deliveries?limit=1`)).body.items;
      const attempts = deliveries[0]?.attempts ?? [];
      error = attempts[attempts.length - 1]?.error ?? '';
      return error !== '';
    }, 'a failed attempt');
    const page = await f.signedIn(f.adminKey);
    await page.getByRole('link', { name: 'Webhooks' }).click();
    const card = page.getByRole('article', { name: url });
    await card.getByText(`Latest attempt (emergency.declared): ${error}`).waitFor();
    await card
      .getByRole('table', { name: /Recent deliveries/ })
      .getByText(error)
      .first()
      .waitFor();
  });
});
