/**
 * `npm run console:screenshots`: starts the service on a throw-away SQLite database with demo data (an
 * organization, categories, base stations that acknowledge, a webhook receiver, emergencies with a
 * message and a photo), opens the operator console in Debian's Chromium and writes
 * docs/console-{board,emergency,devices}-{1280,390}.png.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import WebSocket from 'ws';
import { loadConfig } from '../src/config.js';
import { operatorCaller } from '../src/domain/access/principal.js';
import { createAdminKey } from '../src/domain/admin-keys/service.js';
import { createCategory } from '../src/domain/categories/service.js';
import { createDevice } from '../src/domain/devices/service.js';
import { createEnterprise, createOrg, createPartner } from '../src/domain/orgs/service.js';
import { startServer } from '../src/server.js';
import { launchBrowser } from '../test/helpers/browser.js';

const OUT = new URL('../docs/', import.meta.url);

const CRC = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function chunk(type: string, data: Buffer): Buffer {
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  let c = 0xffffffff;
  for (const b of body) c = CRC[(c ^ b) & 0xff]! ^ (c >>> 8);
  const out = Buffer.alloc(body.length + 8);
  out.writeUInt32BE(data.length, 0);
  body.copy(out, 4);
  out.writeUInt32BE((c ^ 0xffffffff) >>> 0, body.length + 4);
  return out;
}
/** A small picture for the demo message: a hallway-ish gradient with a door. */
function picture(width: number, height: number): Buffer {
  const rows: Buffer[] = [];
  for (let y = 0; y < height; y++) {
    const row = Buffer.alloc(1 + width * 3);
    for (let x = 0; x < width; x++) {
      const door = x > width * 0.42 && x < width * 0.58 && y > height * 0.35;
      const floor = y > height * 0.75;
      const shade = Math.round(160 + 60 * (1 - Math.abs(x / width - 0.5) * 2));
      const [r, g, b] = door ? [120, 72, 40] : floor ? [90, 96, 110] : [shade, shade - 10, shade - 30];
      row.set([r, g, b], 1 + x * 3);
    }
    rows.push(row);
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 2, 0, 0, 0], 8);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(Buffer.concat(rows))),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'console-shots-'));
  const receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks/emergencies`;
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    DATABASE_URL: `sqlite:${join(dir, 'demo.db')}`,
    ATTACHMENT_STORE: `file:${join(dir, 'attachments')}`,
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  });
  const server = await startServer(config, undefined, { devices: { ackFlushMs: 100 } });
  const sockets: WebSocket[] = [];
  try {
    const ctx = server.ctx;
    const op = operatorCaller();
    const partner = await createPartner(ctx, op, { name: 'Acme Safety' });
    const enterprise = await createEnterprise(ctx, op, partner.partnerId, { name: 'North District' });
    const org = await createOrg(ctx, op, enterprise.enterpriseId, { name: 'Lincoln High School' });
    await createOrg(ctx, op, enterprise.enterpriseId, { name: 'Roosevelt Middle School' });
    for (const c of [
      { name: 'Lockdown', color: '#6A1B9A', severity: 5, responseLevel: 'lockdown' },
      { name: 'Fire', color: '#D32F2F', severity: 5, responseLevel: 'evacuate' },
      { name: 'Medical', color: '#1976D2', severity: 3, responseLevel: 'medical' },
      { name: 'Severe weather', color: '#F9A825', severity: 2, responseLevel: 'shelter' },
    ]) {
      await createCategory(ctx, op, org.orgId, c);
    }
    const adminKey = (await createAdminKey(ctx, op, { name: 'District dispatch', subject: { type: 'instance' } })).key;
    const admin = (path: string, body: unknown) =>
      fetch(`${server.url}/api/admin/v1${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }).then((r) => r.json() as Promise<any>);
    const pub = (method: string, path: string, body?: unknown) =>
      fetch(`${server.url}/api/public/v1/orgs/${org.orgId}${path}`, {
        method,
        headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      }).then((r) => r.json() as Promise<any>);
    await admin('/webhooks', { url: receiverUrl, subject: { type: 'org', id: org.orgId } });

    // Base stations: three connected (two acknowledge everything), one offline.
    const wsUrl = `${server.url.replace(/^http/, 'ws')}/devices/v1/stream`;
    const names = ['Main office', 'Gym', 'Library', 'Cafeteria'];
    for (const [i, name] of names.entries()) {
      const { token } = await createDevice(ctx, op, org.orgId, { name });
      if (i === 3) continue;
      const ws = new WebSocket(wsUrl, { headers: { authorization: `Bearer ${token}` } });
      sockets.push(ws);
      ws.on('message', (data) => {
        const frame = JSON.parse(data.toString());
        if (frame.type === 'event' && i !== 2) ws.send(JSON.stringify({ type: 'ack', offset: frame.offset }));
      });
      await new Promise((r) => ws.once('open', r));
    }

    const hour = 3600_000;
    const drill = await pub('POST', '/emergencies', {
      categoryName: 'Fire',
      description: 'Fire drill, all buildings',
      occurredAt: new Date(Date.now() - 26 * hour).toISOString(),
      declaredBy: { id: 'u-2', name: 'Sam Ortiz' },
    });
    await pub('POST', `/emergencies/${drill.emergencyId}/resolutions`, { resolutionNote: 'Drill complete', resolvedBy: { id: 'u-2', name: 'Sam Ortiz' } });
    const fall = await pub('POST', '/emergencies', {
      categoryName: 'Medical',
      description: 'Student fell on the stairs, nurse on the way',
      location: { floorId: '2' },
      occurredAt: new Date(Date.now() - 2 * hour).toISOString(),
      declaredBy: { id: 'u-9', name: 'Jane Doe' },
    });
    await pub('PATCH', `/emergencies/${fall.emergencyId}`, { categoryName: 'Medical' });
    await pub('POST', '/emergencies', {
      categoryName: 'Severe weather',
      description: 'Thunderstorm warning until 4 pm',
      occurredAt: new Date(Date.now() - 40 * 60_000).toISOString(),
    });
    // From here on base stations have 5 s to acknowledge: the Library (silent) and the Cafeteria (offline) miss it.
    await fetch(`${server.url}/api/admin/v1/orgs/${org.orgId}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ackDeadlineSeconds: 5 }),
    });
    const lockdown = await pub('POST', '/emergencies', {
      categoryName: 'Lockdown',
      externalId: 'INC-2041',
      description: 'Intruder reported near the east entrance',
      location: { floorId: '1', latitude: 40.7411, longitude: -73.9897 },
      declaredBy: { id: 'u-17', name: 'Jane Doe' },
      source: 'front-desk-panel',
    });
    await pub('POST', `/emergencies/${lockdown.emergencyId}/messages`, {
      content: 'Doors on the east side are locked. Police are on their way.',
      author: { type: 'user', name: 'Jane Doe' },
    });
    const photo = await pub('POST', `/emergencies/${lockdown.emergencyId}/messages`, {
      content: 'Camera still from the east hallway',
      author: { type: 'user', name: 'Officer Lee' },
      attachments: [
        { src: `data:image/png;base64,${picture(320, 200).toString('base64')}`, caption: 'East hallway, 10:42' },
        { src: 'https://cams.example.com/live/east-hall.m3u8', caption: 'East hallway live camera' },
      ],
    });
    if (!photo.messageId) throw new Error(`the demo message was refused: ${JSON.stringify(photo)}`);
    // Let the acks and the webhook deliveries land, and the lockdown's deadline pass.
    for (let waited = 0; ; waited += 250) {
      const overdue = await pub('GET', '/events?eventType=emergency.delivery_overdue');
      if (overdue.items?.length > 0) break;
      if (waited > 20_000) throw new Error('the lockdown never became overdue');
      await new Promise((r) => setTimeout(r, 250));
    }
    await new Promise((r) => setTimeout(r, 1000));

    const browser = await launchBrowser();
    try {
      for (const width of [1280, 390]) {
        const context = await browser.newContext({ viewport: { width, height: width === 1280 ? 800 : 844 }, deviceScaleFactor: 1 });
        await context.addInitScript((key) => {
          sessionStorage.setItem('emergency-console.key', key);
          sessionStorage.setItem('emergency-console.name', 'Jane Doe');
        }, adminKey);
        const page = await context.newPage();
        const shot = async (name: string) => {
          await page.waitForTimeout(300);
          await page.screenshot({ path: new URL(`console-${name}-${width}.png`, OUT).pathname, fullPage: true });
        };
        await page.goto(`${server.url}/console/orgs/${org.orgId}`);
        await page.getByRole('link', { name: /Intruder reported/ }).waitFor();
        await page.getByText('Delivery overdue').first().waitFor();
        await shot('board');
        await page.goto(`${server.url}/console/orgs/${org.orgId}/emergencies/${lockdown.emergencyId}`);
        await page.getByRole('img', { name: 'East hallway, 10:42' }).waitFor();
        await page
          .getByText(/base stations acknowledged/)
          .first()
          .waitFor();
        await page.getByRole('list', { name: 'Silent base stations' }).waitFor();
        await shot('emergency');
        await page.goto(`${server.url}/console/orgs/${org.orgId}/devices`);
        await page.getByRole('table', { name: 'Base stations' }).waitFor();
        await page.getByText('Now: 5 s').waitFor();
        await shot('devices');
        await context.close();
      }
    } finally {
      await browser.close();
    }
    console.log(`wrote docs/console-{board,emergency,devices}-{1280,390}.png`);
  } finally {
    for (const ws of sockets) ws.terminate();
    await server.stop();
    await new Promise<void>((r) => receiver.close(() => r()));
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
