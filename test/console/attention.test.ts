import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createDevice } from '../../src/domain/devices/service.js';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey } from '../helpers/server.js';
import { type ConsoleFixture, consoleFixture, eventually } from './support.js';

/**
 * Records every Notification the page constructs, from before its first script, while the real constructor
 * still runs (so the browser's permission applies as it would).
 */
const RECORD_NOTIFICATIONS = `
  window.__notifications = [];
  const Real = window.Notification;
  class Recorded extends Real {
    constructor(title, options) {
      super(title, options);
      window.__notifications.push({ title, body: options && options.body, tag: options && options.tag });
    }
  }
  Object.defineProperty(Recorded, 'permission', { get: () => Real.permission });
  Recorded.requestPermission = (...args) => Real.requestPermission(...args);
  window.Notification = Recorded;
`;

/** A console that calls for attention: the open count in the tab title, alerts at a severity, and every organization at a glance. */
describe('operator console: attention', () => {
  let f: ConsoleFixture;
  let orgPath: string;

  before(async () => {
    f = await consoleFixture();
    orgPath = `/orgs/${f.org.orgId}`;
  });
  after(() => f.close());

  const titleOf = (page: Page) => page.evaluate(() => document.title);

  it('the tab title counts the open emergencies, live, also while the tab is in the background', async () => {
    const page = await f.signedIn(f.writeKey);
    await eventually(async () => (await titleOf(page)) === 'Board · Emergency console', 'the title without a count');
    const fire = await f.api.post(`${orgPath}/emergencies`, { categoryName: 'Fire', description: 'Title one' });
    assert.equal(fire.status, 201);
    await eventually(async () => (await titleOf(page)) === '(1) Board · Emergency console', 'the count of one');
    const medical = await f.api.post(`${orgPath}/emergencies`, { categoryName: 'Medical', description: 'Title two' });
    assert.equal(medical.status, 201);
    await eventually(async () => (await titleOf(page)) === '(2) Board · Emergency console', 'the count of two');

    // Another tab comes to the front: the board's tab keeps counting from its live channel.
    const other = await page.context().newPage();
    await other.goto('about:blank');
    await other.bringToFront();
    const resolved = await f.api.post(`${orgPath}/emergencies/${fire.body.emergencyId}/resolutions`, { resolutionNote: 'out' });
    assert.equal(resolved.status, 201);
    await eventually(async () => (await titleOf(page)) === '(1) Board · Emergency console', 'the count back to one');
    await page.bringToFront();

    // The count belongs to the org, whatever page of it is open.
    await page.getByRole('link', { name: 'Devices' }).click();
    await eventually(async () => (await titleOf(page)) === '(1) Devices · Emergency console', 'the count on the devices page');
    await f.api.post(`${orgPath}/emergencies/${medical.body.emergencyId}/resolutions`, { resolutionNote: 'ok' });
    await eventually(async () => (await titleOf(page)) === 'Devices · Emergency console', 'no count once none is open');
  });

  it('with notifications on at severity 4, a Fire (5) declared or re-categorized notifies, an exercise as EXERCISE, and a Medical (3) does not', async () => {
    const context = await f.browser.newContext({ viewport: { width: 1280, height: 900 } });
    await context.grantPermissions(['notifications'], { origin: f.server.url });
    await context.addInitScript(RECORD_NOTIFICATIONS);
    const page = await context.newPage();
    page.setDefaultTimeout(10_000);
    await page.goto(`${f.server.url}/console/`);
    await page.getByLabel('API key').fill(f.writeKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Emergencies' }).waitFor();
    const notifications = () => page.evaluate(() => (window as unknown as { __notifications: { title: string; body: string; tag: string }[] }).__notifications);

    // Off until the operator turns it on.
    const before = await f.api.post(`${orgPath}/emergencies`, { categoryName: 'Fire', description: 'Before alerts were on' });
    await page.locator(`tr[data-emergency-id="${before.body.emergencyId}"]`).waitFor();
    assert.deepEqual(await notifications(), []);

    await page.getByRole('button', { name: 'Alerts off' }).click();
    const dialog = page.getByRole('dialog', { name: 'Alerts in this browser' });
    // Granted in answer to the click (the test browser's permission), then kept on.
    await dialog.getByLabel('Desktop notifications').click();
    await eventually(() => dialog.getByLabel('Desktop notifications').isChecked(), 'notifications turned on');
    await dialog.getByLabel('For severity').selectOption('4');
    await dialog.getByRole('button', { name: 'Test sound' }).click();
    await dialog.getByRole('button', { name: 'Done' }).click();
    await page.getByRole('button', { name: 'Alerts on · severity 4+' }).waitFor();
    const stored = await page.evaluate(() => JSON.parse(localStorage.getItem('emergency-console.attention') ?? 'null'));
    assert.deepEqual(stored, { sound: false, desktop: true, threshold: 4 });

    const fire = await f.api.post(`${orgPath}/emergencies`, { categoryName: 'Fire', description: 'Smoke in the archive' });
    assert.equal(fire.status, 201);
    await eventually(async () => (await notifications()).length === 1, 'a notification for the Fire');
    const [first] = await notifications();
    assert.equal(first!.title, 'New emergency: Fire (severity 5)');
    assert.match(first!.body, /Smoke in the archive/);

    const medical = await f.api.post(`${orgPath}/emergencies`, { categoryName: 'Medical', description: 'Sprained ankle' });
    assert.equal(medical.status, 201);
    await page.locator(`tr[data-emergency-id="${medical.body.emergencyId}"]`).waitFor();
    // The row is on the board, so the event was handled: still one notification.
    await page.waitForTimeout(300);
    assert.equal((await notifications()).length, 1, 'below the threshold: none');

    const upgraded = await f.api.patch(`${orgPath}/emergencies/${medical.body.emergencyId}`, { categoryName: 'Fire' });
    assert.equal(upgraded.status, 200);
    await eventually(async () => (await notifications()).length === 2, 'a notification for the re-categorization');
    assert.equal((await notifications())[1]!.title, 'Emergency re-categorized: Fire (severity 5)');

    const drill = await f.api.post(`${orgPath}/emergencies`, { categoryName: 'Fire', description: 'Evacuation drill', exercise: true });
    assert.equal(drill.status, 201);
    await eventually(async () => (await notifications()).length === 3, 'a notification for the exercise');
    const exercise = (await notifications())[2]!;
    assert.equal(exercise.title, 'EXERCISE · New exercise: Fire (severity 5)');
    assert.match(exercise.body, /An exercise, not a real alarm/);

    // Turned off again: nothing more.
    await page.getByRole('button', { name: 'Alerts on · severity 4+' }).click();
    await dialog.getByLabel('Desktop notifications').click();
    await eventually(async () => !(await dialog.getByLabel('Desktop notifications').isChecked()), 'notifications turned off');
    await dialog.getByRole('button', { name: 'Done' }).click();
    const after = await f.api.post(`${orgPath}/emergencies`, { categoryName: 'Fire', description: 'After alerts were off' });
    await page.locator(`tr[data-emergency-id="${after.body.emergencyId}"]`).waitFor();
    await page.waitForTimeout(300);
    assert.equal((await notifications()).length, 3);
    await context.close();
  });

  it('a key of several organizations lands on every one of them with open, overdue and offline figures, updated live', async () => {
    const second = await createOrgTree(f.server.ctx, { partnerId: f.org.partnerId });
    const secondName: string = (await f.adminApi.get(`/orgs/${second.orgId}`)).body.name;
    const secondApi = client(f.server.base, (await mintKey(f.server.ctx, { subjectType: 'org', subjectId: second.orgId })).key);
    // A base station never connected: offline.
    await createDevice(f.server.ctx, operatorCaller(), second.orgId, { name: 'Lobby' });
    const partnerKey = (await mintKey(f.server.ctx, { subjectType: 'partner', subjectId: f.org.partnerId, permissions: ['read'] })).key;
    const noEvents = (await mintKey(f.server.ctx, { subjectType: 'partner', subjectId: f.org.partnerId, permissions: ['emergencies:read'] })).key;

    const page = await f.newPage();
    await page.goto(`${f.server.url}/console/`);
    await page.getByLabel('API key').fill(partnerKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Organizations' }).waitFor();
    const card = page.getByRole('listitem', { name: secondName, exact: true });
    const figure = (name: string) => card.locator(`xpath=.//dt[.="${name}"]/following-sibling::dd`);
    await eventually(async () => (await figure('Open emergencies').innerText()) === '0', 'no open emergency in the second org');
    assert.equal(await figure('Overdue deliveries').innerText(), '0');
    assert.equal(await figure('Offline base stations').innerText(), '1');
    await card.getByText('Live', { exact: true }).waitFor();
    const titleBefore = await titleOf(page);

    const declared = await secondApi.post(`/orgs/${second.orgId}/emergencies`, { categoryName: 'Medical', description: 'In the second org' });
    assert.equal(declared.status, 201);
    await eventually(async () => /^1\s*highest severity 3$/.test(await figure('Open emergencies').innerText()), 'the declare on the overview');
    await secondApi.post(`/orgs/${second.orgId}/emergencies`, { categoryName: 'Fire', description: 'Worse' });
    await eventually(async () => /^2\s*highest severity 5$/.test(await figure('Open emergencies').innerText()), 'the second declare on the overview');
    const titleAfter = await titleOf(page);
    assert.notEqual(titleAfter, titleBefore);
    assert.match(titleAfter, /^\(\d+\) Organizations · Emergency console$/);

    await card.getByRole('link', { name: new RegExp(secondName) }).click();
    await page.getByRole('heading', { name: 'Emergencies' }).waitFor();
    assert.equal(new URL(page.url()).pathname, `/console/orgs/${second.orgId}`);

    // A key without events:read sees the open emergencies, and "—" for what it may not read.
    const reader = await f.newPage();
    await reader.goto(`${f.server.url}/console/`);
    await reader.getByLabel('API key').fill(noEvents);
    await reader.getByRole('button', { name: 'Sign in' }).click();
    const readerCard = reader.getByRole('listitem', { name: secondName, exact: true });
    const readerFigure = (name: string) => readerCard.locator(`xpath=.//dt[.="${name}"]/following-sibling::dd`);
    await eventually(async () => /^2/.test(await readerFigure('Open emergencies').innerText()), 'the open emergencies without events:read');
    assert.equal(await readerFigure('Overdue deliveries').innerText(), '—');
    assert.equal(await readerFigure('Offline base stations').innerText(), '—');
  });
});
