import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { connectDevice } from '../devices/support.js';
import { ackingDevice, type ConsoleFixture, consoleFixture, eventually } from './support.js';

/** Collects what went wrong in a page: uncaught errors and errors logged to its console. */
function watchProblems(page: Page): string[] {
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (err) => problems.push(`page: ${err.message}`));
  return problems;
}

/**
 * Acknowledgement deadlines in the console, against a real server with real WebSocket base stations: the org's
 * deadline set on the devices page, the board's overdue mark (live and on load), the silent station in the
 * emergency view, and the mark cleared by the delivery_completed that follows the station's acknowledgement.
 */
describe('operator console: acknowledgement deadlines', () => {
  let f: ConsoleFixture;
  before(async () => {
    f = await consoleFixture();
  });
  after(() => f.close());

  it('an admin key sets the deadline of the organization and of a category; a value out of range is refused', async () => {
    const page = await f.signedIn(f.adminKey);
    const problems = watchProblems(page);
    await page.getByRole('link', { name: 'Devices' }).click();
    const form = page.getByRole('form', { name: 'Acknowledgement deadline of the organization' });
    await form.getByText('Now: Off').waitFor();

    const field = form.getByLabel('New deadline in seconds (5 to 3600)');
    await field.fill('4');
    await form.getByRole('button', { name: 'Save' }).click();
    await form.getByRole('alert').getByText('Enter a whole number of seconds from 5 to 3600.').waitFor();
    assert.equal((await f.adminApi.get(`/orgs/${f.org.orgId}`)).body.ackDeadlineSeconds, null, 'nothing was saved');

    await field.fill('90');
    await form.getByRole('button', { name: 'Save' }).click();
    await form.getByRole('status').getByText('Saved: 1 min 30 s.').waitFor();
    await form.getByText('Now: 1 min 30 s').waitFor();
    assert.equal((await f.adminApi.get(`/orgs/${f.org.orgId}`)).body.ackDeadlineSeconds, 90);

    // A category overrides it, then inherits it again.
    await page.getByText(/^Per category/).click();
    const fire = page.getByRole('form', { name: 'Acknowledgement deadline of Fire' });
    await fire.getByText('Now: The organization’s (1 min 30 s)').waitFor();
    await fire.getByLabel('New deadline of Fire in seconds').fill('3600');
    await fire.getByRole('button', { name: 'Save' }).click();
    await fire.getByText('Now: 1 h').waitFor();
    const categoryDeadline = async () =>
      (await f.api.get(`/orgs/${f.org.orgId}/emergencies/categories`)).body.items.find((c: any) => c.categoryId === f.org.categories.Fire).ackDeadlineSeconds;
    assert.equal(await categoryDeadline(), 3600);
    await fire.getByRole('button', { name: 'Use the organization’s' }).click();
    await fire.getByText('Now: The organization’s (1 min 30 s)').waitFor();
    assert.equal(await categoryDeadline(), null);

    // Off again.
    await form.getByRole('button', { name: 'Turn off' }).click();
    await form.getByText('Now: Off').waitFor();
    assert.equal((await f.adminApi.get(`/orgs/${f.org.orgId}`)).body.ackDeadlineSeconds, null);
    assert.deepEqual(problems, []);
  });

  it('the board marks an emergency a base station has not acknowledged by the deadline, the view lists the station, and both clear once it acknowledges', async () => {
    const page = await f.signedIn(f.adminKey);
    const problems = watchProblems(page);
    await page.getByRole('link', { name: 'Devices' }).click();
    const form = page.getByRole('form', { name: 'Acknowledgement deadline of the organization' });
    await form.getByLabel('New deadline in seconds (5 to 3600)').fill('5');
    await form.getByRole('button', { name: 'Save' }).click();
    await form.getByText('Now: 5 s').waitFor();

    const office = await f.addDevice('Office');
    const gym = await f.addDevice('Gym');
    await ackingDevice(f, office.token);
    const silent = await connectDevice(f.wsUrl, gym.token);
    f.devices.push(silent);

    await page.getByRole('link', { name: 'Board' }).click();
    await page.getByRole('heading', { name: 'Emergencies' }).waitFor();
    const declared = await f.api.post(`/orgs/${f.org.orgId}/emergencies`, { categoryName: 'Fire', description: 'Smoke in the gym' });
    assert.equal(declared.status, 201);
    const emergencyId: string = declared.body.emergencyId;
    const row = page.locator(`tr[data-emergency-id="${emergencyId}"]`);
    await row.getByRole('link', { name: 'Open Fire emergency: Smoke in the gym' }).waitFor();
    assert.equal(await row.getByText('Delivery overdue').count(), 0, 'not overdue before the deadline');

    // Live: the overdue event marks the row, in words.
    await row.getByText('Delivery overdue').waitFor({ timeout: 20_000 });
    await row.getByText('1 of 2 base stations silent').waitFor();
    await page.getByText('1 with delivery overdue').waitFor();

    // On load: another operator's board reads the mark from the event feed.
    const reader = await f.signedIn(f.readKey);
    const readerProblems = watchProblems(reader);
    const readerRow = reader.locator(`tr[data-emergency-id="${emergencyId}"]`);
    await readerRow.getByText('Delivery overdue').waitFor();
    await readerRow.getByRole('link', { name: 'Open Fire emergency: Smoke in the gym (delivery overdue)' }).click();

    // The emergency view names the silent station as the overdue event did, and the receipts show the deadline.
    await reader
      .getByRole('heading', { name: /Fire emergency/ })
      .getByText('Delivery overdue')
      .waitFor();
    const declaredOffset = silent.events.find((e) => e.event.eventType === 'emergency.declared')!.offset;
    const delivery = reader.getByRole('region', { name: `Delivery of Declared (offset ${declaredOffset})` });
    await delivery.getByText('1 of 2 base stations silent at the 5 s deadline').waitFor();
    const silentList = delivery.getByRole('list', { name: 'Silent base stations' });
    assert.equal(await silentList.getByRole('listitem').count(), 1);
    const entry = (await silentList.getByRole('listitem').innerText()).replace(/\s+/g, ' ').trim();
    assert.match(entry, /^Gym · online · last seen /);
    assert.doesNotMatch(entry, /Office/);
    const receipt = reader.getByRole('region', { name: `Receipts of Declared (offset ${declaredOffset})` });
    await receipt.getByText('Deadline').waitFor();
    await receipt.getByText('Overdue', { exact: true }).waitFor();
    await reader.getByRole('list', { name: 'Timeline' }).getByText('Delivery overdue').waitFor();

    // The station acknowledges everything it has: one delivery_completed clears the marks, live.
    await silent.until(() => silent.events.some((e) => e.event.eventType === 'emergency.delivery_overdue'), 5_000, 'the overdue frame');
    silent.send({ type: 'ack', offset: silent.events[silent.events.length - 1]!.offset });
    await delivery.getByText('Delivery completed').waitFor({ timeout: 15_000 });
    await delivery.getByText(/All 2 base stations acknowledged it/).waitFor();
    assert.equal(await delivery.getByRole('list', { name: 'Silent base stations' }).count(), 0);
    await eventually(
      async () =>
        (await reader
          .getByRole('heading', { name: /Fire emergency/ })
          .getByText('Delivery overdue')
          .count()) === 0,
      'the heading mark to clear',
    );
    await receipt.getByText('(acknowledged by all since)').waitFor();
    await eventually(async () => (await row.getByText('Delivery overdue').count()) === 0, 'the board mark to clear', 10_000);
    assert.equal(await page.getByText('with delivery overdue').count(), 0);
    await reader.getByRole('link', { name: '← Back to the board' }).click();
    await readerRow.getByRole('link', { name: 'Open Fire emergency: Smoke in the gym' }).waitFor();
    assert.equal(await readerRow.getByText('Delivery overdue').count(), 0, 'not marked on load either');

    assert.deepEqual([...problems, ...readerProblems], []);
  });
});
