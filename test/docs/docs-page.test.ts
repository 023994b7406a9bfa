import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { launchBrowser } from '../helpers/browser.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * Waits for the text to be shown; the wait is generous, as the suite runs two files at once on two cores
 * and the bundle renders a whole document. On a timeout the error says what the page showed instead.
 */
async function shows(page: Page, text: string, timeout = 60_000): Promise<void> {
  try {
    await page.getByText(text, { exact: false }).first().waitFor({ timeout });
  } catch (error) {
    const shown = (
      await page
        .locator('body')
        .innerText()
        .catch(() => '')
    )
      .replace(/\s+/g, ' ')
      .slice(0, 400);
    throw new Error(`"${text}" not shown at ${page.url()}; the page showed: ${shown}`, { cause: error });
  }
}

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
    // What the page's Content-Security-Policy refused, if anything: the reference must need nothing it forbids.
    const refused: string[] = [];
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) refused.push(message.text());
    });
    const elsewhere: string[] = [];
    await page.route('**/*', (route) => {
      if (route.request().url().startsWith(server.url)) return route.continue();
      elsewhere.push(route.request().url());
      return route.abort();
    });
    const response = await page.goto(`${server.url}/docs`);
    assert.equal(response?.status(), 200);
    await shows(page, 'Emergency Notification Public API');
    // Open the emergencies group: its operations, declare among them, are listed.
    await page.getByText('emergencies', { exact: true }).first().click();
    await shows(page, 'Declare an emergency');
    // The operation's own section: its method and path are shown.
    await shows(page, '/orgs/{org_id}/emergencies');
    assert.deepEqual(
      elsewhere.filter((url) => !url.startsWith('data:')),
      [],
    );
    await page.close();

    // The admin API is the second document of the same page, chosen by its slug; its document is served first.
    const adminDocument = await fetch(`${server.url}/api/admin/v1/openapi.json`);
    assert.equal(adminDocument.status, 200);
    assert.equal(((await adminDocument.json()) as { info: { title: string } }).info.title, 'Emergency Notification Admin API');
    const admin = await browser.newPage();
    const seen: string[] = [];
    admin.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) refused.push(message.text());
      if (message.type() === 'error') seen.push(`console error: ${message.text()}`);
    });
    admin.on('requestfinished', (request) => seen.push(`fetched ${new URL(request.url()).pathname}`));
    admin.on('requestfailed', (request) => seen.push(`failed ${new URL(request.url()).pathname}: ${request.failure()?.errorText}`));
    admin.on('crash', () => seen.push('the page crashed'));
    // A page that rendered nothing is loaded once more, as a reader would; twice blank fails with what the page did.
    for (let attempt = 1; ; attempt++) {
      await admin.goto(`${server.url}/docs?api=admin`);
      try {
        await shows(admin, 'Emergency Notification Admin API', 45_000);
        break;
      } catch (error) {
        if (attempt === 2) throw new Error(`${(error as Error).message}; the page: ${seen.slice(-12).join('; ')}`, { cause: error });
      }
    }
    const alias = await admin.goto(`${server.url}/redoc`);
    assert.equal(new URL(alias!.url()).pathname, '/docs');
    assert.deepEqual(refused, []);
    await admin.close();
  });

  it('has a Content-Security-Policy and refuses to be framed', async () => {
    const res = await fetch(`${server.url}/docs`);
    const csp = res.headers.get('content-security-policy') ?? '';
    assert.match(csp, /frame-ancestors 'none'/);
    assert.match(csp, /script-src 'self' 'sha256-[A-Za-z0-9+/]+=*'(;|$)/, "scripts from this origin and the page's own inline script only");
    assert.match(csp, /object-src 'none'/);
    assert.equal(res.headers.get('x-frame-options'), 'DENY');
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');

    // Another page framing /docs gets nothing rendered in the frame.
    const page = await browser.newPage();
    const blocked = page.waitForEvent('console', { predicate: (m) => /frame-ancestors/.test(m.text()), timeout: 10_000 });
    await page.setContent(`<iframe src="${server.url}/docs" width="800" height="600"></iframe>`, { waitUntil: 'load' });
    await blocked;
    const frame = page.frames().find((f) => f !== page.mainFrame());
    assert.ok(frame);
    assert.equal(await frame.locator('#app').count(), 0);
    await page.close();
  });
});
