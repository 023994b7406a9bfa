import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { connectDevice } from '../devices/support.js';
import { ackingDevice, type ConsoleFixture, consoleFixture, eventually } from './support.js';

/**
 * The Drills page against a real server with real WebSocket base stations: a drill run from the page completes, and its
 * row shows the result, the acknowledged count, the p95 and the silent count; the board and the exercise's timeline show
 * drill.completed without breaking.
 */
describe('operator console: drills', () => {
  let f: ConsoleFixture;
  before(async () => {
    f = await consoleFixture();
  });
  after(() => f.close());

  it('lists the drills with their next run, runs one now and shows its completed run', async () => {
    const acking = await f.addDevice('Lobby station');
    const silent = await f.addDevice('Gym station');
    await ackingDevice(f, acking.token);
    f.devices.push(await connectDevice(f.wsUrl, silent.token));
    const scheduled = await f.adminApi.post(`/orgs/${f.org.orgId}/drills`, {
      name: 'Monthly siren test',
      schedule: 'FREQ=MONTHLY;BYDAY=1MO;BYHOUR=10;BYMINUTE=0;BYSECOND=0',
      ackDeadlineSeconds: 60,
    });
    assert.equal(scheduled.status, 201, JSON.stringify(scheduled.body));
    const quick = await f.adminApi.post(`/orgs/${f.org.orgId}/drills`, { name: 'Quick check', ackDeadlineSeconds: 5, resolveAfterSeconds: 5 });
    assert.equal(quick.status, 201);

    const page = await f.signedIn(f.adminKey);
    const problems: string[] = [];
    page.on('pageerror', (err) => problems.push(err.message));
    await page.getByRole('link', { name: 'Drills' }).click();
    await page.getByRole('heading', { name: 'Drills', level: 1 }).waitFor();
    const monthly = page.getByRole('article', { name: 'Monthly siren test' });
    await monthly.getByText('FREQ=MONTHLY;BYDAY=1MO;BYHOUR=10;BYMINUTE=0;BYSECOND=0').waitFor();
    await monthly.getByText('Not run yet.').waitFor();

    const card = page.getByRole('article', { name: 'Quick check' });
    await card.getByText('On demand only').waitFor();
    await card.getByRole('button', { name: 'Run now' }).click();
    await card.getByRole('table', { name: 'Last runs of Quick check' }).waitFor();
    // Resolved after 5 s by the server's worker; the page shows the final figures once refreshed.
    await eventually(
      async () => {
        await card.getByRole('button', { name: 'Refresh runs' }).click();
        return (await card.locator('tr[data-run-status="completed"]').count()) === 1;
      },
      'the run completed on the page',
      20_000,
    );
    const row = card.locator('tr[data-run-status="completed"]');
    const cells = await row.locator('td').allInnerTexts();
    assert.equal(cells[1], 'Failed');
    assert.equal(cells[2], '1/2');
    assert.match(cells[3]!, /^\d+ ms$/);
    assert.equal(cells[4], '1');
    assert.equal(await row.locator('td').nth(4).getAttribute('title'), 'Gym station');

    // The exercise's timeline names the report; the board kept working through the live drill.completed.
    const runs = await f.adminApi.get(`/orgs/${f.org.orgId}/drills/${quick.body.drillId}/runs`);
    await page.getByRole('link', { name: 'Board' }).click();
    await page.locator(`[data-emergency-id="${runs.body.items[0].emergencyId}"]`).first().waitFor();
    await page.goto(`${f.server.url}/console/orgs/${f.org.orgId}/emergencies/${runs.body.items[0].emergencyId}`);
    await page.getByText('Drill completed', { exact: true }).waitFor();
    await page.getByText(/failed: 1 of 2 acknowledged, p95 \d+ ms, 1 silent/).waitFor();
    assert.deepEqual(problems, []);
  });
});
