import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { launchBrowser } from '../helpers/browser.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/** /docs in a real browser, with every request to another origin refused: the page needs no internet. */
describe('interactive reference /docs', () => {
  let server: TestServer;
  let browser: Browser;

  before(async () => {
    server = await startTestServer({}, { dispatcher: false });
    browser = await launchBrowser();
  });
  after(async () => {
    await browser.close();
    await server.close();
  });

  it('renders the public API with its declare operation and the admin API, from this server only', async () => {
    const page = await browser.newPage();
    const elsewhere: string[] = [];
    await page.route('**/*', (route) => {
      if (route.request().url().startsWith(server.url)) return route.continue();
      elsewhere.push(route.request().url());
      return route.abort();
    });
    const response = await page.goto(`${server.url}/docs`);
    assert.equal(response?.status(), 200);
    await page.getByText('Emergency Notification Public API').first().waitFor({ timeout: 20_000 });
    // Open the emergencies group: its operations, declare among them, are listed.
    await page.getByText('emergencies', { exact: true }).first().click();
    await page.getByText('Declare an emergency', { exact: false }).first().waitFor({ timeout: 20_000 });
    // The operation's own section: its method and path are shown.
    await page.getByText('/orgs/{org_id}/emergencies', { exact: false }).first().waitFor({ timeout: 10_000 });
    assert.deepEqual(
      elsewhere.filter((url) => !url.startsWith('data:')),
      [],
    );
    // The admin API is the second document of the same page.
    await page.goto(`${server.url}/docs?api=admin`);
    await page.getByText('Emergency Notification Admin API').first().waitFor({ timeout: 20_000 });
    const alias = await page.goto(`${server.url}/redoc`);
    assert.equal(new URL(alias!.url()).pathname, '/docs');
    await page.close();
  });
});
