import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { checkSignature } from '../../src/cli/webhook-listen.js';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { mintWebhookSecret, signatureHeader } from '../../src/domain/webhooks/signing.js';
import { createSubscription } from '../../src/domain/webhooks/service.js';
import { freePort } from '../helpers/child-server.js';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey, type OrgFixture, type TestServer } from '../helpers/server.js';
import { startDeliveryServer } from './helpers.js';

const BIN = resolve(import.meta.dirname, '../../bin/emergency-api.js');

interface Listener {
  child: ChildProcess;
  url: string;
  stdout: () => string;
  exited: Promise<number | null>;
}

/** `emergency-api webhook listen` as a child process, once it says where it listens. */
async function listen(args: string[]): Promise<Listener> {
  const child = spawn(process.execPath, [BIN, 'webhook', 'listen', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const url = await new Promise<string>((done, fail) => {
    child.stderr!.on('data', (d) => {
      stderr += d;
      const found = /listening for webhooks on (http:\S+)/.exec(stderr);
      if (found) done(found[1]!.replace(/\/$/, ''));
    });
    void exited.then((code) => fail(new Error(`webhook listen exited with ${code}: ${stderr}`)));
  });
  return { child, url, stdout: () => stdout, exited };
}

describe('emergency-api webhook listen (a local receiver)', () => {
  let server: TestServer;
  let org: OrgFixture;
  before(async () => {
    server = await startDeliveryServer();
    org = await createOrgTree(server.ctx);
  });
  after(() => server.close());

  it('prints a delivery with its verified signature, answers 204 and stops after --count deliveries', async () => {
    const port = await freePort();
    const { secret } = await createSubscription(server.ctx, operatorCaller(), {
      subjectType: 'org',
      subjectId: org.orgId,
      url: `http://127.0.0.1:${port}/hook`,
    });
    const receiver = await listen(['--port', String(port), '--secret', secret, '--count', '1']);
    // A request that is not a delivery (a script checking that the receiver is up) is answered and not counted.
    assert.equal((await fetch(`${receiver.url}/`)).status, 200);
    const api = client(server.base, (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId })).key);
    const declared = await api.post(`/orgs/${org.orgId}/emergencies`, { description: 'smoke on floor 2' });
    assert.equal(declared.status, 201);
    assert.equal(await receiver.exited, 0);
    const [line, body, summary] = receiver.stdout().trimEnd().split('\n');
    assert.equal(summary, 'received: 1');
    assert.match(line!, new RegExp(`POST /hook emergency\\.declared event \\S+ emergency ${declared.body.emergencyId} #1: signature verified, answered 204$`));
    assert.equal(JSON.parse(body!).emergencyId, declared.body.emergencyId);
  });

  it('with --json, prints one JSON line per request; a bad signature is answered 401 and not counted', async () => {
    const secret = mintWebhookSecret();
    const receiver = await listen(['--port', '0', '--secret', secret, '--count', '1', '--json']);
    const body = JSON.stringify({ eventId: 'e1', eventType: 'webhook.ping' });
    const headers = (signedWith: string) => ({
      'content-type': 'application/json',
      'webhook-id': 'e1',
      'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
      'webhook-signature': signatureHeader([signedWith], 'e1', new Date(), body),
    });
    const forged = await fetch(`${receiver.url}/hook`, { method: 'POST', headers: headers(mintWebhookSecret()), body });
    assert.equal(forged.status, 401);
    assert.equal(receiver.child.exitCode, null, 'still listening');
    const genuine = await fetch(`${receiver.url}/hook`, { method: 'POST', headers: headers(secret), body });
    assert.equal(genuine.status, 204);
    assert.equal(await receiver.exited, 0);
    const lines = receiver
      .stdout()
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.deepEqual(lines.pop(), { received: 1 });
    assert.deepEqual(
      lines.map((l) => [l.verification, l.status, l.webhookId, l.body.eventType]),
      [
        ['does not match the secret', 401, 'e1', 'webhook.ping'],
        ['verified', 204, 'e1', 'webhook.ping'],
      ],
    );
  });

  it('checks the timestamp and the presence of the signature headers', () => {
    const secret = mintWebhookSecret();
    const body = '{}';
    const at = new Date('2026-01-01T00:00:00Z');
    const signed = { 'webhook-id': 'e1', 'webhook-timestamp': String(at.getTime() / 1000), 'webhook-signature': signatureHeader([secret], 'e1', at, body) };
    assert.equal(checkSignature(secret, signed, body, at.getTime() + 60_000), 'verified');
    assert.equal(checkSignature(secret, signed, body, at.getTime() + 10 * 60_000), 'timestamp too far from this clock');
    assert.equal(checkSignature(secret, signed, '{"changed":true}', at.getTime()), 'does not match the secret');
    assert.match(checkSignature(secret, { 'webhook-id': 'e1' }, body, at.getTime()), /^missing/);
    // During a rotation two signatures are sent; the one made with this secret is enough.
    const rotated = { ...signed, 'webhook-signature': signatureHeader([mintWebhookSecret(), secret], 'e1', at, body) };
    assert.equal(checkSignature(secret, rotated, body, at.getTime()), 'verified');
  });
});
