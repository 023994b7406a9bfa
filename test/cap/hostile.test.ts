import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createOrgTree, mintKey, type OrgFixture, startTestServer, type TestServer } from '../helpers/server.js';
import { CAP_NS, example } from './support.js';

/**
 * Hostile XML on POST /orgs/{org_id}/cap (extensions §8): external entities pointing at a file and at a URL, an external DTD,
 * parameter entities, a billion laughs, 300 levels of nesting, 10 MiB. Each is a clear 4xx, answered well within the
 * contract's 100 ms, reads no file, reaches no network, and leaves the memory where it was.
 */
describe('CAP ingest under hostile XML', () => {
  let server: TestServer;
  let org: OrgFixture;
  let key: string;
  let listener: Server;
  let listenerUrl: string;
  const hits: string[] = [];
  let dir: string;
  let secretFile: string;
  const secret = `cap-secret-${randomBytes(8).toString('hex')}`;
  /** Server-side answer times (from the request's headers to the end of the response), by request path and query. */
  const answerMs = new Map<string, number>();

  /** Sends a body with node:http (no client-side limits), tagged so its server-side answer time can be found. */
  function send(tag: string, body: Buffer | Buffer[], headers: Record<string, string> = {}): Promise<{ status: number; text: string; ms: number }> {
    const path = `/api/public/v1/orgs/${org.orgId}/cap?case=${encodeURIComponent(tag)}`;
    return new Promise((resolve, reject) => {
      const req = request(
        `${server.url}${path}`,
        {
          method: 'POST',
          headers: {
            authorization: `Bearer ${key}`,
            'content-type': 'application/cap+xml',
            ...(Array.isArray(body) ? { 'transfer-encoding': 'chunked' } : { 'content-length': String(body.length) }),
            ...headers,
          },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () => resolve({ status: res.statusCode!, text, ms: answerMs.get(path) ?? Number.NaN }));
        },
      );
      // The server may answer (413) and close before the whole body is sent: that is the point.
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (!['EPIPE', 'ECONNRESET'].includes(err.code ?? '')) reject(err);
      });
      void (async () => {
        for (const chunk of Array.isArray(body) ? body : [body]) {
          if (req.destroyed) return;
          if (!req.write(chunk)) await new Promise((drained) => req.once('drain', drained).once('close', drained));
        }
        req.end();
      })();
    });
  }

  const alertWith = (prolog: string, identifier: string) =>
    `<?xml version="1.0" encoding="UTF-8"?>\n${prolog}\n${example('a1-homeland-security-advisory')
      .replace(/^<\?xml[^>]*>\s*/, '')
      .replace('<identifier>43b080713727</identifier>', `<identifier>${identifier}</identifier>`)}`;

  const billionLaughs = () => {
    const entities = ['<!ENTITY lol0 "lol">'];
    for (let i = 1; i <= 9; i++) entities.push(`<!ENTITY lol${i} "${`&lol${i - 1};`.repeat(10)}">`);
    return alertWith(`<!DOCTYPE alert [\n${entities.join('\n')}\n]>`, '&lol9;');
  };

  const nested = (levels: number) => `<alert xmlns="${CAP_NS}">${'<a>'.repeat(levels)}x${'</a>'.repeat(levels)}</alert>`;

  /** Each body is built once and sent again as it is, so the test's own buffers do not count as the server's memory. */
  const once = <T>(build: () => T) => {
    let value: T | undefined;
    return () => (value ??= build());
  };
  const TEN_MIB = once(() => Buffer.alloc(10 * 1024 * 1024, 0x20));
  const CHUNK = once(() => Buffer.alloc(64 * 1024, 0x20));

  const CASES: { name: string; body: () => Buffer | Buffer[]; status: number; type: string }[] = [
    {
      name: 'external entity: /etc/passwd',
      body: () => Buffer.from(alertWith('<!DOCTYPE alert [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>', '&xxe;')),
      status: 422,
      type: 'xml_doctype_forbidden',
    },
    {
      name: 'external entity: a local file',
      body: () => Buffer.from(alertWith(`<!DOCTYPE alert [<!ENTITY xxe SYSTEM "file://${secretFile}">]>`, '&xxe;')),
      status: 422,
      type: 'xml_doctype_forbidden',
    },
    {
      name: 'external entity: a URL',
      body: () => Buffer.from(alertWith(`<!DOCTYPE alert [<!ENTITY xxe SYSTEM "${listenerUrl}/entity">]>`, '&xxe;')),
      status: 422,
      type: 'xml_doctype_forbidden',
    },
    {
      name: 'external DTD',
      body: () => Buffer.from(alertWith(`<!DOCTYPE alert SYSTEM "${listenerUrl}/dtd">`, 'dtd')),
      status: 422,
      type: 'xml_doctype_forbidden',
    },
    {
      name: 'parameter entity',
      body: () => Buffer.from(alertWith(`<!DOCTYPE alert [<!ENTITY % p SYSTEM "${listenerUrl}/parameter"> %p;]>`, 'parameter')),
      status: 422,
      type: 'xml_doctype_forbidden',
    },
    {
      name: 'lower-case doctype after a comment',
      body: () => Buffer.from(alertWith(`<!-- <!DOCTYPE is fine in a comment --><!doctype alert [<!ENTITY xxe SYSTEM "file://${secretFile}">]>`, '&xxe;')),
      status: 422,
      type: 'xml_doctype_forbidden',
    },
    { name: 'billion laughs', body: () => Buffer.from(billionLaughs()), status: 422, type: 'xml_doctype_forbidden' },
    { name: '300 levels of nesting', body: () => Buffer.from(nested(300)), status: 422, type: 'too_deep' },
    { name: '33 levels of nesting', body: () => Buffer.from(nested(32)), status: 422, type: 'too_deep' },
    { name: '10 MiB', body: TEN_MIB, status: 413, type: 'payload_too_large' },
    {
      name: '10 MiB, chunked',
      body: () => Array.from({ length: 160 }, CHUNK),
      status: 413,
      type: 'payload_too_large',
    },
  ];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'cap-hostile-'));
    secretFile = join(dir, 'secret.txt');
    writeFileSync(secretFile, secret);
    listener = createServer((req, res) => {
      hits.push(req.url ?? '');
      res.end(`<!ENTITY leak "${secret}">`);
    });
    await new Promise<void>((done) => listener.listen(0, '127.0.0.1', done));
    listenerUrl = `http://127.0.0.1:${(listener.address() as AddressInfo).port}`;
    server = await startTestServer();
    org = await createOrgTree(server.ctx);
    key = (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId })).key;
    server.app.server.on('request', (req, res) => {
      const start = performance.now();
      res.once('finish', () => answerMs.set(req.url ?? '', performance.now() - start));
    });
    // The first request of a process warms its code paths; the bound is about the answers after it.
    await send('warm-up', Buffer.from(nested(2)));
  });
  after(async () => {
    await server.close();
    await new Promise((done) => listener.close(done));
    rmSync(dir, { recursive: true, force: true });
  });

  for (const hostile of CASES) {
    it(`${hostile.name}: ${hostile.status} ${hostile.type}, answered at once, no file read, no network`, async (t) => {
      const res = await send(hostile.name, hostile.body());
      assert.equal(res.status, hostile.status, res.text);
      const body = JSON.parse(res.text);
      if (hostile.status === 422) {
        assert.deepEqual(
          body.detail.map((d: { loc: string[]; type: string }) => [d.loc, d.type]),
          [[['body'], hostile.type]],
        );
      } else {
        assert.equal(body.detail.error, hostile.type);
      }
      assert.ok(!res.text.includes(secret) && !res.text.includes('root:'), res.text);
      // The contract's bound, measured at the server on this one request; asserted with room for a loaded machine.
      t.diagnostic(`answered in ${res.ms.toFixed(1)} ms at the server`);
      assert.ok(res.ms < 500, `answered in ${res.ms.toFixed(1)} ms`);
      assert.deepEqual(hits, []);
    });
  }

  it('schema locations and XInclude in a document are never fetched', async () => {
    const located = example('a1-homeland-security-advisory')
      .replace('<identifier>43b080713727</identifier>', '<identifier>schema-location</identifier>')
      .replace(
        `<alert xmlns = "${CAP_NS}">`,
        `<alert xmlns = "${CAP_NS}" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="${CAP_NS} ${listenerUrl}/cap.xsd">`,
      );
    assert.equal((await send('schema location', Buffer.from(located))).status, 201);
    const included = example('a1-homeland-security-advisory').replace(
      '</info>',
      `</info><xi:include xmlns:xi="http://www.w3.org/2001/XInclude" href="${listenerUrl}/include" parse="text"/>`,
    );
    const res = await send('xinclude', Buffer.from(included));
    assert.equal(res.status, 422);
    assert.equal(JSON.parse(res.text).detail[0].type, 'cap_invalid');
    assert.deepEqual(hits, []);
  });

  it('keeps the memory flat under repeated hostile bodies, and nothing of them is stored', async (t) => {
    const rounds = 10;
    // One round first, so lazily grown buffers are not counted as growth.
    for (const hostile of CASES) await send(`memory ${hostile.name}`, hostile.body());
    const before = process.memoryUsage().rss;
    for (let i = 0; i < rounds; i++) for (const hostile of CASES) assert.ok((await send(`memory ${i} ${hostile.name}`, hostile.body())).status >= 400);
    const grown = process.memoryUsage().rss - before;
    t.diagnostic(`the process grew by ${(grown / 1024 / 1024).toFixed(1)} MiB over ${rounds * CASES.length} hostile requests`);
    // Ten rounds hold 200 MiB of 10 MiB bodies alone, were any of them kept.
    assert.ok(grown < 64 * 1024 * 1024, `the process grew by ${(grown / 1024 / 1024).toFixed(1)} MiB`);
    const records = await server.ctx.db.db.selectFrom('emergencies').select('record').where('org_id', '=', org.orgId).execute();
    assert.ok(!records.some((r) => r.record?.includes(secret) || r.record?.includes('root:')));
    // A refused alert's document is never kept for the relay either: only the accepted one (schema locations) is.
    const kept = await server.ctx.db.db.selectFrom('cap_originals').select(['identifier', 'document']).where('org_id', '=', org.orgId).execute();
    assert.deepEqual(
      kept.map((r) => r.identifier),
      ['schema-location'],
    );
    assert.ok(!kept.some((r) => r.document.includes(secret) || r.document.includes('<!')));
    assert.deepEqual(hits, []);
  });
});
