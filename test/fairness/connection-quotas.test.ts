import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type AdminSubject, operatorCaller } from '../../src/domain/access/principal.js';
import { createAdminKey } from '../../src/domain/admin-keys/service.js';
import { createDevice } from '../../src/domain/devices/service.js';
import { AlertPathProbe, abuseLoop, assertFairShare } from '../helpers/alert-path.js';
import { connectDevice, refusedUpgrade, type TestDevice } from '../devices/support.js';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey, type OrgFixture, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * Per-tenant connection quotas (extensions §13, issue 41 item 4): tenant A takes every device socket and stream its quotas
 * allow and keeps asking for more; its next ones are refused (429 beyond its quota, 503 beyond its share of the instance)
 * while tenant B's base stations and streams still connect and its alert path keeps §13's bound. Raising A's quotas
 * through the admin API lets A connect more.
 */

/** An event stream opened as a browser would (fetch with the key in the header); `close` aborts it. */
async function openStream(server: TestServer, orgId: string, key: string) {
  const controller = new AbortController();
  const response = await fetch(`${server.base}/orgs/${orgId}/stream`, { headers: { authorization: `Bearer ${key}` }, signal: controller.signal });
  const close = () => controller.abort();
  if (!response.ok) {
    const body = (await response.json()) as { detail: { error: string; message: string } };
    return { status: response.status, retryAfter: response.headers.get('retry-after'), detail: body.detail, close };
  }
  // Read until the first line: the stream is then counted by the server.
  const reader = response.body!.getReader();
  await reader.read();
  const end = () => {
    reader.cancel().catch(() => undefined);
    close();
  };
  return { status: response.status, retryAfter: null, detail: null, close: end };
}

type Stream = Awaited<ReturnType<typeof openStream>>;

/** Between two of A's attempts: the client shares the server's process, so an unpaced loop would measure the test's own cost. */
const ATTEMPT_GAP_MS = 20;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A tenant of the test: an org, a key that reads it, devices minted as needed. */
class Tenant {
  readonly devices: TestDevice[] = [];
  readonly streams: Stream[] = [];
  /** A device token kept for upgrades meant to be refused: minting one per attempt would cost the test more than the server. */
  private spare: string | undefined;
  private constructor(
    private readonly server: TestServer,
    readonly org: OrgFixture,
    readonly key: string,
  ) {}

  static async create(server: TestServer, partnerId?: string): Promise<Tenant> {
    const org = await createOrgTree(server.ctx, partnerId ? { partnerId } : {});
    const { key } = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId });
    return new Tenant(server, org, key);
  }

  get wsUrl(): string {
    return `${this.server.url.replace(/^http/, 'ws')}/devices/v1/stream`;
  }

  async newToken(): Promise<string> {
    return (await createDevice(this.server.ctx, operatorCaller(), this.org.orgId, { name: `station ${this.devices.length}` })).token;
  }

  async connect(): Promise<TestDevice> {
    const device = await connectDevice(this.wsUrl, await this.newToken());
    this.devices.push(device);
    return device;
  }

  async refused() {
    this.spare ??= await this.newToken();
    return refusedUpgrade(this.wsUrl, { authorization: `Bearer ${this.spare}` });
  }

  async stream(): Promise<Stream> {
    const stream = await openStream(this.server, this.org.orgId, this.key);
    if (stream.status === 200) this.streams.push(stream);
    return stream;
  }

  async close(): Promise<void> {
    for (const s of this.streams) s.close();
    await Promise.all(this.devices.map((d) => d.close()));
  }
}

async function adminClient(server: TestServer, subject: AdminSubject) {
  const { key } = await createAdminKey(server.ctx, operatorCaller(), { name: 'quota admin', subject });
  return client(`${server.url}/api/admin/v1`, key);
}

describe('fair share: one tenant at its connection quotas', () => {
  let server: TestServer;
  let probe: AlertPathProbe;
  let a: Tenant;
  before(async () => {
    server = await startTestServer(
      { DEVICES_PER_ORG: '3', STREAMS_PER_ORG: '2', DEVICES_PER_PARTNER: '4', STREAMS_PER_PARTNER: '3' },
      { dispatcher: false, deadlines: false },
    );
    probe = await AlertPathProbe.open(server);
    a = await Tenant.create(server);
  });
  after(async () => {
    await a?.close();
    await probe?.close();
    await server?.close();
  });

  it("refuses A's device and stream beyond its org quota with 429 while B connects and keeps its alert path", async () => {
    const quiet = await probe.measure(30);
    for (let i = 0; i < 3; i++) await a.connect();
    const device = await a.refused();
    assert.equal(device.status, 429);
    assert.equal(device.body.detail.error, 'too_many_devices');
    assert.match(device.body.detail.message, /DEVICES_PER_ORG/);
    assert.match(device.body.detail.message, new RegExp(`/api/admin/v1/orgs/${a.org.orgId}/connection-quotas`));
    assert.equal(device.headers['retry-after'], '10');

    for (let i = 0; i < 2; i++) assert.equal((await a.stream()).status, 200);
    const stream = await a.stream();
    assert.equal(stream.status, 429);
    assert.equal(stream.detail?.error, 'too_many_streams');
    assert.match(stream.detail!.message, /STREAMS_PER_ORG/);
    assert.equal(stream.retryAfter, '10');

    // A keeps knocking at both doors while B connects more base stations and a stream, and declares.
    const abuse = abuseLoop(async (i) => {
      await sleep(ATTEMPT_GAP_MS);
      if (i % 2 === 0) {
        const refused = await a.refused();
        assert.equal(refused.status, 429);
      } else {
        const refused = await a.stream();
        assert.equal(refused.status, 429);
      }
    }, 2);
    const b = { devices: [] as TestDevice[], streams: [] as Stream[] };
    try {
      for (let i = 0; i < 2; i++) {
        const { token } = await createDevice(server.ctx, operatorCaller(), probe.org.orgId, { name: `B station ${i}` });
        b.devices.push(await connectDevice(`${server.url.replace(/^http/, 'ws')}/devices/v1/stream`, token));
      }
      const bStream = await openStream(server, probe.org.orgId, probe.key);
      assert.equal(bStream.status, 200, `tenant B's stream was refused: ${JSON.stringify(bStream.detail)}`);
      b.streams.push(bStream);
      const abused = await probe.measureDuring(abuse, 30, 100);
      assertFairShare(quiet, abused, 'A at its device and stream quotas');
    } finally {
      await abuse.stop();
      for (const s of b.streams) s.close();
      await Promise.all(b.devices.map((d) => d.close()));
    }
  });

  it("lets A connect more once an admin raises its org quotas, and enforces its partner's quota over all its orgs", async () => {
    const instance = await adminClient(server, { type: 'instance' });
    const path = `/orgs/${a.org.orgId}/connection-quotas`;
    const before = await instance.get(path);
    assert.equal(before.status, 200);
    assert.deepEqual(before.body, { orgId: a.org.orgId, devices: 3, streams: 2, devicesOverride: null, streamsOverride: null });
    const raised = await instance.patch(path, { devices: 4, streams: 3 });
    assert.equal(raised.status, 200, JSON.stringify(raised.body));
    assert.deepEqual(raised.body, { orgId: a.org.orgId, devices: 4, streams: 3, devicesOverride: 4, streamsOverride: 3 });
    await a.connect();
    assert.equal((await a.stream()).status, 200);

    // A second org of A's partner: the partner's quota (4 devices, 3 streams) is already taken by the first.
    const sibling = await Tenant.create(server, a.org.partnerId);
    try {
      const device = await sibling.refused();
      assert.equal(device.status, 429);
      assert.equal(device.body.detail.error, 'too_many_devices');
      assert.match(device.body.detail.message, /DEVICES_PER_PARTNER/);
      assert.match(device.body.detail.message, new RegExp(`/api/admin/v1/partners/${a.org.partnerId}/connection-quotas`));
      const stream = await sibling.stream();
      assert.equal(stream.status, 429);
      assert.match(stream.detail!.message, /STREAMS_PER_PARTNER/);

      const partner = await instance.patch(`/partners/${a.org.partnerId}/connection-quotas`, { devices: 6, streams: null });
      assert.equal(partner.status, 200, JSON.stringify(partner.body));
      assert.deepEqual(partner.body, { partnerId: a.org.partnerId, devices: 6, streams: 3, devicesOverride: 6, streamsOverride: null });
      await sibling.connect();
      assert.equal((await sibling.stream()).status, 429, 'the partner stream quota is back to its default of 3');
    } finally {
      await sibling.close();
    }
  });

  it('lets the level above set quotas, with 422 for values out of range', async () => {
    const partnerAdmin = await adminClient(server, { type: 'partner', id: a.org.partnerId });
    const enterpriseAdmin = await adminClient(server, { type: 'enterprise', id: a.org.enterpriseId });
    const path = `/orgs/${a.org.orgId}/connection-quotas`;
    assert.equal((await enterpriseAdmin.get(path)).status, 200);
    assert.equal((await enterpriseAdmin.patch(path, { devices: 100 })).status, 403, "an enterprise does not raise its own org's quota");
    assert.equal((await partnerAdmin.patch(path, { devices: 5 })).body.devices, 5);
    assert.equal((await partnerAdmin.get(`/partners/${a.org.partnerId}/connection-quotas`)).status, 200);
    assert.equal((await partnerAdmin.patch(`/partners/${a.org.partnerId}/connection-quotas`, { devices: 100 })).status, 403);
    assert.equal((await partnerAdmin.get(`/orgs/${probe.org.orgId}/connection-quotas`)).status >= 403, true);
    for (const body of [{}, { devices: -1 }, { devices: 1.5 }, { streams: '7' }, { devices: 2_000_000 }, { devices: 1, other: 1 }]) {
      const res = await partnerAdmin.patch(path, body);
      assert.equal(res.status, 422, `${JSON.stringify(body)} answered ${res.status}`);
    }
  });
});

describe('fair share: the share of the instance no tenant can take', () => {
  let server: TestServer;
  let probe: AlertPathProbe;
  let a: Tenant;
  before(async () => {
    // An instance of four device sockets and four streams; one tenant may hold half of each, whatever its quotas.
    server = await startTestServer(
      { MAX_STREAMS: '4', TENANT_CONNECTION_SHARE: '0.5' },
      { dispatcher: false, deadlines: false, devices: { maxConnections: 4 } },
    );
    probe = await AlertPathProbe.open(server);
    a = await Tenant.create(server);
  });
  after(async () => {
    await a?.close();
    await probe?.close();
    await server?.close();
  });

  it("refuses A beyond its share with 503, even with raised quotas, while B's base station, stream and alert path still work", async () => {
    const instance = await adminClient(server, { type: 'instance' });
    assert.equal((await instance.patch(`/orgs/${a.org.orgId}/connection-quotas`, { devices: 1000, streams: 1000 })).status, 200);
    const quiet = await probe.measure(30);
    for (let i = 0; i < 2; i++) await a.connect();
    const device = await a.refused();
    assert.equal(device.status, 503);
    assert.equal(device.body.detail.error, 'unavailable');
    assert.match(device.body.detail.message, /TENANT_CONNECTION_SHARE/);
    for (let i = 0; i < 2; i++) assert.equal((await a.stream()).status, 200);
    const stream = await a.stream();
    assert.equal(stream.status, 503);
    assert.match(stream.detail!.message, /TENANT_CONNECTION_SHARE/);
    assert.equal(stream.retryAfter, '5');

    const abuse = abuseLoop(async (i) => {
      await sleep(ATTEMPT_GAP_MS);
      const refused = i % 2 === 0 ? await a.refused() : await a.stream();
      assert.equal(refused.status, 503);
    }, 2);
    const { token } = await createDevice(server.ctx, operatorCaller(), probe.org.orgId, { name: 'B second station' });
    const second = await connectDevice(`${server.url.replace(/^http/, 'ws')}/devices/v1/stream`, token);
    const bStream = await openStream(server, probe.org.orgId, probe.key);
    try {
      assert.equal(bStream.status, 200, `tenant B's stream was refused: ${JSON.stringify(bStream.detail)}`);
      const abused = await probe.measureDuring(abuse, 30, 100);
      assertFairShare(quiet, abused, "A at its share of the instance's connections");
    } finally {
      await abuse.stop();
      bStream.close();
      await second.close();
    }
  });
});
