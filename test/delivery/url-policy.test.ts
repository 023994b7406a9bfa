import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { WebhookSender } from '../../src/delivery/http-sender.js';
import { nextRetryDelayMs } from '../../src/delivery/retry-policy.js';
import { isPublicAddress } from '../../src/domain/outbound/public-host.js';
import { checkWebhookUrl } from '../../src/domain/outbound/webhook-url.js';

describe('webhook target policy', () => {
  it('accepts only globally routable addresses', () => {
    for (const ok of ['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111']) assert.equal(isPublicAddress(ok), true, ok);
    for (const bad of [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '224.0.0.1',
      '255.255.255.255',
      '::1',
      '::',
      'fe80::1',
      'fc00::1',
      '::ffff:127.0.0.1',
      '::ffff:10.0.0.1',
      '2002:7f00:1::1',
      'not-an-ip',
    ]) {
      assert.equal(isPublicAddress(bad), false, bad);
    }
  });

  it('requires https and a public host unless private targets are allowed', () => {
    assert.deepEqual(checkWebhookUrl('https://hooks.example.com/in?x=1', false), { ok: true, url: 'https://hooks.example.com/in?x=1' });
    const refused = (url: string) => {
      const r = checkWebhookUrl(url, false);
      return r.ok ? 'accepted' : r.reason;
    };
    assert.match(refused('http://hooks.example.com/'), /https/);
    assert.match(refused('https://127.0.0.1/'), /non-public/);
    assert.match(refused('https://[::1]:8443/'), /non-public/);
    assert.match(refused('https://169.254.169.254/latest'), /non-public/);
    assert.match(refused('https://localhost/'), /localhost/);
    assert.match(refused('https://api.localhost/'), /localhost/);
    assert.match(refused('https://intranet/'), /fully qualified/);
    assert.match(refused('https://printer.local/'), /local network/);
    assert.match(refused('https://user:pw@hooks.example.com/'), /credentials/);
    assert.match(refused('ftp://hooks.example.com/'), /scheme/);
    assert.match(refused('not a url'), /absolute URL/);
    assert.equal(checkWebhookUrl('http://127.0.0.1:9000/hook', true).ok, true);
  });

  it('refuses at connect time a name that resolves to a private address, and private IP literals', async () => {
    let hits = 0;
    const target = createServer((_req, res) => {
      hits++;
      res.writeHead(204).end();
    });
    await new Promise<void>((r) => target.listen(0, '127.0.0.1', () => r()));
    const { port } = target.address() as AddressInfo;
    const strict = new WebhookSender({ allowPrivateTargets: false, timeoutMs: 2000 });
    const lenient = new WebhookSender({ allowPrivateTargets: true, timeoutMs: 2000 });
    try {
      // `localhost` stands in for a public name re-pointed at an internal address after registration.
      const byName = await strict.send(`http://localhost:${port}/`, {}, '{}');
      assert.equal(byName.ok, false);
      assert.equal(byName.error, 'refused by target policy: localhost resolves to 127.0.0.1, a loopback address');
      const byIp = await strict.send(`http://127.0.0.1:${port}/`, {}, '{}');
      assert.equal(byIp.error, 'refused by target policy: 127.0.0.1 is a loopback address');
      assert.equal(hits, 0, 'no connection reached the internal server');
      const allowed = await lenient.send(`http://localhost:${port}/`, {}, '{}');
      assert.equal(allowed.statusCode, 204);
      assert.equal(hits, 1);
    } finally {
      await strict.close();
      await lenient.close();
      target.closeAllConnections();
      await new Promise((r) => target.close(r));
    }
  });

  it('does not follow redirects', async () => {
    let followed = false;
    const target = createServer((req, res) => {
      if (req.url === '/elsewhere') followed = true;
      res.writeHead(302, { location: '/elsewhere' }).end();
    });
    await new Promise<void>((r) => target.listen(0, '127.0.0.1', () => r()));
    const sender = new WebhookSender({ allowPrivateTargets: true, timeoutMs: 2000 });
    try {
      const result = await sender.send(`http://127.0.0.1:${(target.address() as AddressInfo).port}/hook`, {}, '{}');
      assert.equal(result.ok, false);
      assert.equal(result.statusCode, 302);
      assert.equal(followed, false);
    } finally {
      await sender.close();
      target.closeAllConnections();
      await new Promise((r) => target.close(r));
    }
  });

  it('spreads retries by ±20 % around the schedule, lets Retry-After push them later, and stops at its end', () => {
    const schedule = [5, 300, 1800];
    assert.equal(
      nextRetryDelayMs(schedule, 1, null, () => 0),
      4000,
    );
    assert.equal(
      nextRetryDelayMs(schedule, 1, null, () => 1),
      6000,
    );
    assert.equal(
      nextRetryDelayMs(schedule, 2, null, () => 0.5),
      300_000,
    );
    assert.equal(
      nextRetryDelayMs(schedule, 1, 60_000, () => 0.5),
      60_000,
    );
    assert.equal(
      nextRetryDelayMs(schedule, 3, 1000, () => 0.5),
      1_800_000,
    );
    assert.equal(nextRetryDelayMs(schedule, 4, null), null);
    assert.equal(
      nextRetryDelayMs(schedule, 1, 30 * 24 * 3600 * 1000, () => 0.5),
      24 * 3600 * 1000,
      'Retry-After is capped at a day',
    );
  });
});
