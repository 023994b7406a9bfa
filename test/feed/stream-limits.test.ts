import assert from 'node:assert/strict';
import { type ChildProcess, execSync, spawn } from 'node:child_process';
import { Agent, request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createContext } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createAdminKey, revokeAdminKey } from '../../src/domain/admin-keys/service.js';
import { revokeApiKey } from '../../src/domain/keys/service.js';
import { toJson } from '../../src/domain/shared/json.js';
import { freePort } from '../helpers/child-server.js';
import { freshDatabaseUrl } from '../helpers/db.js';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey, type OrgFixture, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * The rules of a long-lived connection (issue 32): a stream ends with its credential, a key and an
 * instance hold a bounded number of streams, /healthz and REST keep answering while streams are
 * refused, a replay from the start never holds the event loop, and a client that does not read is
 * dropped.
 */

/** An SSE stream read as fetch() reads it; `endedAt` is when its body ended (or failed). */
class Stream {
  text = '';
  endedAt: number | null = null;
  private constructor(
    readonly response: Response,
    private readonly controller: AbortController,
  ) {}

  static async open(url: string, key: string, query = ''): Promise<Stream> {
    const controller = new AbortController();
    const response = await fetch(`${url}${query}`, { headers: { authorization: `Bearer ${key}` }, signal: controller.signal });
    const stream = new Stream(response, controller);
    if (response.ok) void stream.read();
    return stream;
  }

  private async read() {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of this.response.body as unknown as AsyncIterable<Uint8Array>) this.text += decoder.decode(chunk, { stream: true });
    } catch {
      /* aborted or cut */
    }
    this.endedAt = Date.now();
  }

  /** Resolves once the server has written the stream's first line (so the stream is registered). */
  async started(): Promise<void> {
    await waitFor(() => this.text.startsWith(': after '), 'the stream to start');
  }

  close() {
    this.controller.abort();
  }
}

async function waitFor(predicate: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * `node -e PROBE BASE RESTPATH AUTHORIZATION`: GET /healthz and the REST path every 100 ms on one
 * kept-alive connection, printing `{"health":ms,"rest":ms}` lines (or `{"failure":...}`) until killed.
 */
const PROBE = `
const http = require('node:http');
const [base, restPath, authorization] = process.argv.slice(1);
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const get = (path, headers) => new Promise((done, fail) => {
  const started = Date.now();
  http.request(base + path, { agent, headers }, (res) => {
    res.resume();
    res.on('end', () => done({ status: res.statusCode, ms: Date.now() - started }));
  }).on('error', fail).end();
});
(async () => {
  for (;;) {
    const health = await get('/healthz', {});
    const rest = await get(restPath, { authorization });
    if (health.status !== 200 || rest.status !== 200) console.log(JSON.stringify({ failure: 'statuses ' + health.status + ' ' + rest.status }));
    else console.log(JSON.stringify({ health: health.ms, rest: rest.ms }));
    await new Promise((r) => setTimeout(r, 100));
  }
})().catch((err) => console.log(JSON.stringify({ failure: String(err) })));
`;

/** A stream must end this soon after its credential stops allowing it. */
const END_WITHIN_MS = 2_000;

describe('event streams end with their credential', () => {
  let server: TestServer;
  let org: OrgFixture;
  const streams: Stream[] = [];
  const streamUrl = (orgId = org.orgId) => `${server.base}/orgs/${orgId}/stream`;
  const open = async (key: string, orgId?: string) => {
    const stream = await Stream.open(streamUrl(orgId), key);
    streams.push(stream);
    assert.equal(stream.response.status, 200);
    await stream.started();
    return stream;
  };

  before(async () => {
    server = await startTestServer({}, { dispatcher: false });
    org = await createOrgTree(server.ctx);
  });
  after(async () => {
    for (const s of streams) s.close();
    await server.close();
  });

  it('ends within 2 s of its API key being revoked by another process, and only that key’s streams', async () => {
    const { id, key } = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId });
    const other = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId });
    const doomed = [await open(key), await open(key)];
    const survivor = await open(other.key);
    // The admin CLI's way: its own connection to the database, nothing this server hears of.
    const cli = createContext(loadConfig({ DATABASE_URL: server.databaseUrl, LOG_LEVEL: 'silent' }));
    let revokedAt: number;
    try {
      await revokeApiKey(cli, operatorCaller('cli'), id);
      revokedAt = Date.now();
    } finally {
      await cli.db.close();
    }
    for (const s of doomed) await waitFor(() => s.endedAt !== null, 'the revoked key’s stream to end', END_WITHIN_MS + 1_000);
    for (const s of doomed) assert.ok(s.endedAt! - revokedAt <= END_WITHIN_MS, `ended ${s.endedAt! - revokedAt} ms after the revocation`);
    await sleep(1_200);
    assert.equal(survivor.endedAt, null, 'a stream of another key goes on');
    // And the key is refused from now on, the stream route included.
    assert.equal((await Stream.open(streamUrl(), key)).response.status, 401);
  });

  it('ends within 2 s of its API key expiring', async () => {
    const activeUntil = Date.now() + 1_500;
    const { key } = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId, activeUntil: new Date(activeUntil).toISOString() });
    const stream = await open(key);
    await waitFor(() => stream.endedAt !== null, 'the expired key’s stream to end', 1_500 + END_WITHIN_MS + 1_000);
    assert.ok(stream.endedAt! - activeUntil <= END_WITHIN_MS, `ended ${stream.endedAt! - activeUntil} ms after the expiry`);
  });

  it('ends within 2 s of the key no longer covering the org (allowedOrgIds changed), and goes on for the orgs it still covers', async () => {
    const sibling = await createOrgTree(server.ctx, { partnerId: org.partnerId, enterpriseId: org.enterpriseId });
    const { id, key } = await mintKey(server.ctx, { subjectType: 'enterprise', subjectId: org.enterpriseId, allowedOrgIds: [org.orgId, sibling.orgId] });
    const narrowed = await open(key, org.orgId);
    const kept = await open(key, sibling.orgId);
    await server.ctx.db.db
      .updateTable('api_keys')
      .set({ allowed_org_ids: toJson([sibling.orgId]) })
      .where('id', '=', id)
      .execute();
    const changedAt = Date.now();
    await waitFor(() => narrowed.endedAt !== null, 'the stream of the org no longer covered to end', END_WITHIN_MS + 1_000);
    assert.ok(narrowed.endedAt! - changedAt <= END_WITHIN_MS, `ended ${narrowed.endedAt! - changedAt} ms after the change`);
    await sleep(1_200);
    assert.equal(kept.endedAt, null, 'the stream of the org still covered goes on');
    assert.equal((await Stream.open(streamUrl(org.orgId), key)).response.status, 403);
  });

  it('ends within 2 s of its admin key being revoked', async () => {
    const admin = await createAdminKey(server.ctx, operatorCaller(), { name: 'console', subject: { type: 'partner', id: org.partnerId } });
    const stream = await open(admin.key);
    await revokeAdminKey(server.ctx, operatorCaller(), admin.adminKeyId);
    const revokedAt = Date.now();
    await waitFor(() => stream.endedAt !== null, 'the revoked admin key’s stream to end', END_WITHIN_MS + 1_000);
    assert.ok(stream.endedAt! - revokedAt <= END_WITHIN_MS, `ended ${stream.endedAt! - revokedAt} ms after the revocation`);
  });
});

describe('event stream limits', () => {
  let server: TestServer;
  let org: OrgFixture;
  const streams: Stream[] = [];
  const url = () => `${server.base}/orgs/${org.orgId}/stream`;
  const open = async (key: string) => {
    const stream = await Stream.open(url(), key);
    streams.push(stream);
    return stream;
  };

  before(async () => {
    // One org fills the instance here: its share of the instance (test/fairness/connection-quotas.test.ts) is not what is tested.
    server = await startTestServer({ MAX_STREAMS: '25', TENANT_CONNECTION_SHARE: '1' }, { dispatcher: false });
    org = await createOrgTree(server.ctx);
  });
  after(async () => {
    for (const s of streams) s.close();
    await server.close();
  });

  it('gives a key at most STREAMS_PER_KEY (20) streams: the 21st is a 429 too_many_streams with Retry-After', async () => {
    const { key } = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId });
    // Opened together: the count is taken before anything is read, so none slips past the limit.
    const first = await Promise.all(Array.from({ length: 21 }, () => open(key)));
    const statuses = first.map((s) => s.response.status).sort();
    assert.deepEqual(statuses, [...Array(20).fill(200), 429]);
    const refused = first.find((s) => s.response.status === 429)!;
    assert.ok(Number(refused.response.headers.get('retry-after')) >= 1);
    const body = (await refused.response.json()) as { detail: { error: string; message: string } };
    assert.equal(body.detail.error, 'too_many_streams');
    assert.match(body.detail.message, /20 event streams/);
    assert.equal((await open(key)).response.status, 429);
    // Another key is not held back by this one.
    const other = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId });
    assert.equal((await open(other.key)).response.status, 200);
    // A closed stream gives its place back.
    first.find((s) => s.response.status === 200)!.close();
    await waitFor(() => server.app.services.streams.watching === 20, 'the closed stream to be let go');
    assert.equal((await open(key)).response.status, 200);
  });

  it('refuses streams beyond MAX_STREAMS with 503 and Retry-After while /healthz and REST answer', async () => {
    // MAX_STREAMS is 25; the streams of the test above are still open.
    const streams = server.app.services.streams;
    const room = 25 - streams.watching;
    assert.ok(room > 0 && room <= 20, `${room} places left`);
    const keys = [await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId })];
    for (let i = 0; i < room; i++) assert.equal((await open(keys[0]!.key)).response.status, 200);
    assert.equal(streams.watching, 25);
    const refused = await open(keys[0]!.key);
    assert.equal(refused.response.status, 503);
    assert.ok(Number(refused.response.headers.get('retry-after')) >= 1);
    assert.equal(((await refused.response.json()) as { detail: { error: string } }).detail.error, 'unavailable');
    const health = await fetch(`${server.url}/healthz`);
    assert.equal(health.status, 200);
    const rest = await client(server.base, keys[0]!.key).get(`/orgs/${org.orgId}/events?limit=1`);
    assert.equal(rest.status, 200);
  });
});

/** A raw connection that asks for the stream and then never reads a byte. */
async function silentClient(server: TestServer, orgId: string, key: string, sockets: Socket[]): Promise<Socket> {
  const { port } = new URL(server.url);
  const socket = connect(Number(port), '127.0.0.1');
  sockets.push(socket);
  socket.pause();
  await new Promise((r) => socket.once('connect', r));
  socket.write(`GET /api/public/v1/orgs/${orgId}/stream HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n\r\n`);
  return socket;
}

/** About 21 KB an event: a long description and 15 KB of metadata. */
const bigDeclare = (api: ReturnType<typeof client>, orgId: string, i: number) =>
  api.post(`/orgs/${orgId}/emergencies`, { description: `${i} ${'d'.repeat(3990)}`, metadata: { blob: 'm'.repeat(15_000) } });

describe('event stream clients that do not read: more than 1 MiB queued', () => {
  let server: TestServer;
  let org: OrgFixture;
  let key: string;
  const sockets: Socket[] = [];

  before(async () => {
    server = await startTestServer({}, { dispatcher: false });
    org = await createOrgTree(server.ctx);
    key = (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId })).key;
  });
  after(async () => {
    for (const s of sockets) s.destroy();
    await server.close();
  });

  it('drops a stream with more than 1 MiB queued for its client', async () => {
    const api = client(server.base, key);
    const streams = server.app.services.streams;
    await silentClient(server, org.orgId, key, sockets);
    await waitFor(() => streams.watching === 1, 'the stream to open');
    // The kernel's buffers take a few MiB first; then the server's queue grows past 1 MiB.
    let declared = 0;
    while (streams.watching > 0 && declared < 1_500) {
      await Promise.all(Array.from({ length: 10 }, (_, i) => bigDeclare(api, org.orgId, declared + i)));
      declared += 10;
    }
    assert.equal(streams.watching, 0, `the stream was still open after ${declared} events of ~21 KB`);
  });
});

describe('event stream clients that do not read: queued data that does not move', () => {
  let server: TestServer;
  let org: OrgFixture;
  let key: string;
  const sockets: Socket[] = [];
  const STALL_MS = 1_500;

  before(async () => {
    // A short stall timeout, and a queue bound so large that only the stall rule can drop the stream.
    server = await startTestServer({}, { dispatcher: false, streams: { stallTimeoutMs: STALL_MS, maxBufferedBytes: 64 * 1024 * 1024 } });
    org = await createOrgTree(server.ctx);
    key = (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId })).key;
  });
  after(async () => {
    for (const s of sockets) s.destroy();
    await server.close();
  });

  it('drops a stream whose queued data has not moved for the stall timeout, and keeps one that reads', async () => {
    const api = client(server.base, key);
    const streams = server.app.services.streams;
    const reading = await Stream.open(`${server.base}/orgs/${org.orgId}/stream`, key);
    await reading.started();
    await silentClient(server, org.orgId, key, sockets);
    await waitFor(() => streams.watching === 2, 'both streams to open');
    // ~8 MiB: more than the kernel's buffers hold, so the server has data queued for the silent client.
    for (let declared = 0; declared < 400 && streams.watching === 2; declared += 10) {
      await Promise.all(Array.from({ length: 10 }, (_, i) => bigDeclare(api, org.orgId, declared + i)));
    }
    const declaredAt = Date.now();
    // Once its queue is still, it goes within the stall timeout (plus the check each second).
    await waitFor(() => streams.watching === 1, 'the silent stream to be dropped', STALL_MS + 3_000);
    assert.ok(Date.now() - declaredAt <= STALL_MS + 2_000);
    assert.equal(reading.endedAt, null, 'the reading client keeps its stream');
    reading.close();
  });
});

describe('replays from the start and 2,000 stream attempts against one process', () => {
  const database = freshDatabaseUrl();
  let child: ChildProcess;
  let base = '';
  let orgId = '';
  const keys: string[] = [];
  const fileLimit = Number(execSync('ulimit -n', { shell: '/bin/bash' }).toString().trim()) || 0;
  // 2,000 client sockets here and as many in the server: both processes need the descriptors.
  const skip = fileLimit !== 0 && fileLimit < 4_500 ? `needs ulimit -n of 4,500 or more (have ${fileLimit})` : false;

  before(async () => {
    if (skip) return;
    const ctx = createContext(loadConfig({ DATABASE_URL: database.url, LOG_LEVEL: 'silent' }));
    await migrateToLatest(ctx.db);
    const org = await createOrgTree(ctx);
    orgId = org.orgId;
    for (let i = 0; i < 100; i++) keys.push((await mintKey(ctx, { subjectType: 'org', subjectId: orgId })).key);
    await ctx.db.close();
    const port = await freePort();
    child = spawn(process.execPath, [resolve(import.meta.dirname, '../../bin/emergency-api.js'), 'serve'], {
      // One org fills the instance from one address: its quotas, its share of the instance and the per-address cap are lifted.
      env: {
        ...process.env,
        DATABASE_URL: database.url,
        PORT: String(port),
        LOG_LEVEL: 'warn',
        RATE_LIMIT_PER_KEY: '100000',
        MAX_STREAMS: '1000',
        STREAMS_PER_ORG: '1000',
        STREAMS_PER_PARTNER: '1000',
        TENANT_CONNECTION_SHARE: '1',
        // 2,000 streams are attempted at once from this one address, which the slow-client cap would otherwise cut.
        UNAUTHENTICATED_CONNECTIONS_PER_ADDRESS: '10000',
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const url = `http://127.0.0.1:${port}`;
    for (let i = 0; ; i++) {
      if ((await fetch(`${url}/healthz`).catch(() => null))?.ok) break;
      assert.ok(i < 300, 'the server started');
      await sleep(100);
    }
    base = url;
    // Something to replay: 100 events of ~1.5 KB (150 KB a stream, 150 MB for 1,000 streams).
    const api = client(`${url}/api/public/v1`, keys[0]);
    for (let i = 0; i < 10; i++) {
      await Promise.all(Array.from({ length: 10 }, (_, j) => api.post(`/orgs/${orgId}/emergencies`, { description: `${i}-${j} ${'r'.repeat(700)}` })));
    }
  });
  after(async () => {
    if (child && child.exitCode === null) {
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
    }
    await database.drop();
  });

  it('/healthz and REST answer within 1 s while 2,000 streams with after=0 are attempted; those beyond MAX_STREAMS get 503', { skip }, async () => {
    // The probe is a process of its own, so what it measures is the server, not this busy process. It
    // keeps its connection: what is measured is the server's event loop, not the accept queue.
    const probe = spawn(process.execPath, ['-e', PROBE, base, `/api/public/v1/orgs/${orgId}/events?limit=1`, `Bearer ${keys[0]}`], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const samples: { health: number; rest: number; at: number }[] = [];
    let attempted = 0;
    let failure = '';
    let buffered = '';
    probe.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
        const line = JSON.parse(buffered.slice(0, nl));
        buffered = buffered.slice(nl + 1);
        if (line.failure) failure ||= line.failure;
        else samples.push({ ...line, at: attempted });
      }
    });
    const probeExit = new Promise((r) => probe.once('exit', r));
    await waitFor(() => samples.length > 0 || failure !== '', 'the probe to start', 10_000);

    const streamAgent = new Agent({ keepAlive: false, maxSockets: Number.POSITIVE_INFINITY });
    const open: { destroy(): void }[] = [];
    const statuses = new Map<number, number>();
    const attempt = (i: number) =>
      new Promise<void>((done, fail) => {
        const req = request(
          `${base}/api/public/v1/orgs/${orgId}/stream?after=0`,
          { agent: streamAgent, headers: { authorization: `Bearer ${keys[i % keys.length]}` } },
          (res) => {
            statuses.set(res.statusCode ?? 0, (statuses.get(res.statusCode ?? 0) ?? 0) + 1);
            // Half the streams are read (and discarded) as a browser would; the others leave it in the kernel's buffers.
            if (res.statusCode !== 200 || i % 2 === 0) res.resume();
            if (res.statusCode === 200) open.push(req);
            done();
          },
        );
        req.on('error', fail);
        req.end();
      });
    try {
      // As clients arrive: 2,000 attempts, at most 100 connecting at once.
      await Promise.all(
        Array.from({ length: 100 }, async () => {
          while (attempted < 2_000) await attempt(attempted++);
        }),
      );
      // Keep measuring while the accepted streams replay.
      await sleep(2_000);
    } finally {
      probe.kill();
      await probeExit;
      for (const req of open) req.destroy();
    }
    assert.equal(failure, '');
    assert.equal(statuses.get(200), 1_000, JSON.stringify([...statuses]));
    assert.equal(statuses.get(503), 1_000, JSON.stringify([...statuses]));
    assert.ok(samples.length >= 5, `${samples.length} probes`);
    const slowest = [...samples].sort((a, b) => Math.max(b.health, b.rest) - Math.max(a.health, a.rest)).slice(0, 5);
    assert.ok(
      samples.every((s) => s.health < 1_000 && s.rest < 1_000),
      `/healthz or REST took 1 s or more (slowest of ${samples.length}: ${JSON.stringify(slowest)})`,
    );
  });
});
