import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { type ConsoleFixture, consoleFixture } from './support.js';

/** The console's live channel: fetch-streamed SSE with the key in a header, a banner while it is lost, resumption by offset. */
describe('operator console live channel', () => {
  let f: ConsoleFixture;
  const sockets = new Set<Socket>();

  before(async () => {
    f = await consoleFixture();
    f.server.app.server.on('connection', (socket: Socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
  });
  after(() => f.close());

  it('shows "Connection lost — reconnecting…" while the network is gone, then resumes after the last offset with nothing missed', async () => {
    const orgPath = `/orgs/${f.org.orgId}`;
    await f.api.post(`${orgPath}/emergencies`, { categoryName: 'Fire', description: 'before the outage' });
    const page = await f.signedIn(f.writeKey);
    const streams: string[] = [];
    page.on('request', (request) => {
      if (new URL(request.url()).pathname.endsWith('/stream')) {
        streams.push(request.url());
        assert.match(request.headers().authorization ?? '', /^Bearer enk_live_/, 'the key travels in the header');
      }
    });
    // A live event first, so the channel has an offset to resume from.
    const during = await f.api.post(`${orgPath}/emergencies`, { categoryName: 'Medical', description: 'while live' });
    // Generous: a limit on how long the page may take, not a latency target (the suite shares two cores with the browser).
    await page.getByRole('link', { name: /while live/ }).waitFor({ timeout: 10_000 });
    const { body: feed } = await f.api.get(`${orgPath}/events?limit=1`);
    const lastOffset: number = feed.lastOffset;
    assert.ok(lastOffset >= 2);
    assert.equal(during.status, 201);

    // The network goes: every connection to the server is cut and new ones are refused.
    await page.route('**/api/public/v1/**', (route) => route.abort('internetdisconnected'));
    for (const socket of sockets) socket.destroy();
    const banner = page.getByRole('alert').filter({ hasText: 'Connection lost — reconnecting…' });
    await banner.waitFor({ timeout: 5000 });
    const missed = await f.api.post(`${orgPath}/emergencies`, { categoryName: 'Fire', description: 'declared during the outage' });
    assert.equal(missed.status, 201);
    await page.waitForTimeout(500);
    assert.equal(await page.getByRole('link', { name: /during the outage/ }).count(), 0);

    // The network comes back: the channel reconnects by itself, resumes after the last offset it had.
    await page.unroute('**/api/public/v1/**');
    await page.getByRole('link', { name: /declared during the outage/ }).waitFor({ timeout: 10_000 });
    await banner.waitFor({ state: 'detached', timeout: 5000 });
    const resumed = streams.at(-1)!;
    assert.equal(new URL(resumed).searchParams.get('after'), String(lastOffset), `resumed with after=${lastOffset}: ${resumed}`);
    assert.equal(resumed.includes('enk_'), false, 'no key in the URL');
    const rows = await page.locator('tr[data-emergency-id]').count();
    assert.equal(rows, 3, 'each emergency once');
  });

  it('misses nothing declared while the board is opening: the list is asked for only once the channel knows where it starts', async () => {
    const page = await f.newPage();
    // Hold the channel's start (the newest offset) until an emergency has been declared.
    let held!: () => void;
    const startAsked = new Promise<void>((asked) => {
      void page.route(
        (url) => url.pathname.endsWith(`/orgs/${f.org.orgId}/events`) && url.searchParams.get('limit') === '1',
        async (route) => {
          asked();
          await new Promise<void>((release) => {
            held = release;
          });
          await route.continue();
        },
        { times: 1 },
      );
    });
    await page.goto(`${f.server.url}/console/`);
    await page.getByLabel('API key').fill(f.writeKey);
    // The key covers one organization: its board opens without the picker.
    await page.getByRole('button', { name: 'Sign in' }).click();
    await startAsked;
    // Long enough for a list asked for at the same time to have come back without what follows.
    await page.waitForTimeout(300);
    const between = await f.api.post(`/orgs/${f.org.orgId}/emergencies`, { categoryName: 'Fire', description: 'declared as the board opened' });
    assert.equal(between.status, 201);
    held();
    await page.getByRole('link', { name: /declared as the board opened/ }).waitFor({ timeout: 10_000 });
    assert.equal(await page.locator(`tr[data-emergency-id="${between.body.emergencyId}"]`).count(), 1);
  });
});
