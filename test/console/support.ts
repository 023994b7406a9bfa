import type { Browser, BrowserContext, Page } from 'playwright-core';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createAdminKey } from '../../src/domain/admin-keys/service.js';
import { createDevice } from '../../src/domain/devices/service.js';
import { connectDevice, type TestDevice } from '../devices/support.js';
import { launchBrowser } from '../helpers/browser.js';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey, type OrgFixture, startTestServer, type TestServer } from '../helpers/server.js';

/** What every console test gets: a real server on SQLite, an org with keys of each kind, and Chromium. */
export interface ConsoleFixture {
  server: TestServer;
  browser: Browser;
  org: OrgFixture;
  orgName: string;
  /** An instance admin key. */
  adminKey: string;
  /** The org's read/write API key (also what the tests declare with over REST). */
  writeKey: string;
  /** The org's read-only API key. */
  readKey: string;
  api: ReturnType<typeof client>;
  adminApi: ReturnType<typeof client>;
  wsUrl: string;
  devices: TestDevice[];
  /** A new page at `width` × (tall enough) in its own context (its own sessionStorage). */
  newPage(width?: number): Promise<Page>;
  /** Signs in on a fresh page and opens the org's board (a key of one org lands there; another picks it). */
  signedIn(key: string, width?: number, options?: { name?: string }): Promise<Page>;
  addDevice(name: string): Promise<{ id: string; token: string }>;
  close(): Promise<void>;
}

export async function consoleFixture(env: Record<string, string> = {}): Promise<ConsoleFixture> {
  const server = await startTestServer(env, { devices: { ackFlushMs: 100 } });
  const browser = await launchBrowser();
  const org = await createOrgTree(server.ctx);
  const adminKey = (await createAdminKey(server.ctx, operatorCaller(), { name: 'console test', subject: { type: 'instance' } })).key;
  const writeKey = (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId, name: 'dispatch' })).key;
  const readKey = (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId, name: 'wallboard', permissions: ['read'] })).key;
  const orgs = await client(server.base, writeKey).get('/orgs');
  const orgName: string = orgs.body.items[0].name;
  const contexts: BrowserContext[] = [];
  const devices: TestDevice[] = [];
  const wsUrl = `${server.url.replace(/^http/, 'ws')}/devices/v1/stream`;

  const fixture: ConsoleFixture = {
    server,
    browser,
    org,
    orgName,
    adminKey,
    writeKey,
    readKey,
    api: client(server.base, writeKey),
    adminApi: client(`${server.url}/api/admin/v1`, adminKey),
    wsUrl,
    devices,
    async newPage(width = 1280) {
      const context = await browser.newContext({ viewport: { width, height: 900 } });
      contexts.push(context);
      const page = await context.newPage();
      page.setDefaultTimeout(10_000);
      return page;
    },
    async signedIn(key, width = 1280, options = {}) {
      const page = await fixture.newPage(width);
      await page.goto(`${server.url}/console/`);
      await page.getByLabel('API key').fill(key);
      if (options.name) await page.getByLabel('Your name (optional)').fill(options.name);
      await page.getByRole('button', { name: 'Sign in' }).click();
      const board = page.getByRole('heading', { name: 'Emergencies' });
      const picker = page.getByRole('heading', { name: 'Organizations' });
      await board.or(picker).waitFor();
      if (await picker.isVisible()) await page.getByRole('link', { name: new RegExp(fixture.orgName) }).click();
      await board.waitFor();
      return page;
    },
    async addDevice(name) {
      const { id, token } = await createDevice(server.ctx, operatorCaller(), org.orgId, { name });
      return { id, token };
    },
    async close() {
      for (const d of devices) await d.close().catch(() => undefined);
      for (const c of contexts) await c.close().catch(() => undefined);
      await browser.close();
      await server.close();
    },
  };
  return fixture;
}

/** A device that connects and acknowledges everything it receives at once. */
export async function ackingDevice(f: ConsoleFixture, token: string): Promise<TestDevice> {
  const device = await connectDevice(f.wsUrl, token);
  device.ws.on('message', (data) => {
    const frame = JSON.parse(data.toString());
    if (frame.type === 'event') device.send({ type: 'ack', offset: frame.offset });
  });
  f.devices.push(device);
  return device;
}

/** Waits until `check` holds (polling), failing with `what` after `timeoutMs`. */
export async function eventually(check: () => Promise<boolean> | boolean, what: string, timeoutMs = 8000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
