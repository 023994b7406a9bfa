import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type ConsoleFixture, consoleFixture } from './support.js';

/**
 * The emergency view reads receipts page by page: the first events with ten devices each, then more
 * events and more of one event's devices on request; the counts always cover every device.
 */
describe('operator console: paged receipts', () => {
  let f: ConsoleFixture;

  before(async () => {
    f = await consoleFixture();
  });
  after(() => f.close());

  it('shows more events and more devices of an event when asked', async () => {
    // Twelve base stations that never connect: every event has them all pending.
    for (let i = 1; i <= 12; i++) await f.addDevice(`Station ${String(i).padStart(2, '0')}`);
    const declared = await f.api.post(`/orgs/${f.org.orgId}/emergencies`, { categoryName: 'Fire', description: 'Paged receipts' });
    assert.equal(declared.status, 201);
    const id = declared.body.emergencyId;
    // 22 events: more than one page of 20.
    for (let i = 0; i < 21; i++) {
      const res = await f.api.patch(`/orgs/${f.org.orgId}/emergencies/${id}`, { categoryName: i % 2 === 0 ? 'Medical' : 'Fire' });
      assert.equal(res.status, 200);
    }

    const page = await f.signedIn(f.readKey);
    await page.getByRole('link', { name: /Paged receipts/ }).click();
    const receipts = page.getByRole('region', { name: /^Receipts of / });
    await receipts.first().waitFor();
    assert.equal(await receipts.count(), 20);
    await page.getByRole('button', { name: 'Show more events' }).click();
    await page.getByRole('region', { name: 'Receipts of Re-categorized (offset 22)' }).waitFor();
    assert.equal(await receipts.count(), 22);
    assert.equal(await page.getByRole('button', { name: 'Show more events' }).count(), 0);

    const first = page.getByRole('region', { name: 'Receipts of Declared (offset 1)' });
    await first.getByText('0 of 12 base stations acknowledged').waitFor();
    const pending = first.getByRole('list', { name: 'Pending devices' }).getByRole('listitem');
    assert.equal(await pending.count(), 10);
    await first.getByText('10 of 12 shown').waitFor();
    await first.getByRole('button', { name: 'Show more devices of Declared (offset 1)' }).click();
    await first.getByText('12 of 12 shown').waitFor();
    assert.deepEqual(
      await pending.evaluateAll((items) => items.map((li) => /Station \d+/.exec(li.textContent ?? '')?.[0])),
      Array.from({ length: 12 }, (_, i) => `Station ${String(i + 1).padStart(2, '0')}`),
    );
    assert.equal(await first.getByRole('button', { name: /Show more devices/ }).count(), 0);
    // Other events keep their first ten.
    await page.getByRole('region', { name: 'Receipts of Re-categorized (offset 2)' }).getByText('10 of 12 shown').waitFor();
  });
});
