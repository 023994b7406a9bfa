import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey, type OrgFixture, startTestServer, type TestServer } from '../helpers/server.js';
import { assertValidCap, atomView, example, getXml, postCap } from './support.js';

const REQUESTS = Number(process.env.CAP_FUZZ_REQUESTS ?? 400);

const SNIPPETS = [
  '<',
  '>',
  '&',
  '&amp;',
  '&#0;',
  '&#x1F4A5;',
  '&lol;',
  ']]>',
  '<![CDATA[',
  '<!--',
  '-->',
  '<?pi x?>',
  '<!DOCTYPE a>',
  '<!ENTITY x "y">',
  '"',
  "'",
  '</info>',
  '<info>',
  '<area><areaDesc>x</areaDesc><polygon>1,2 3,4 5,6 1,2</polygon></area>',
  '<circle>91,181 0</circle>',
  '<circle>1e400,-0 5</circle>',
  '<references>a,b,c d,e</references>',
  '<references>,,,</references>',
  '\u0000',
  '\ud800',
  '💥',
  'x'.repeat(3000),
];

/** A valid alert, then edits: text inserted, cut or repeated anywhere, and elements' values swapped for hostile ones. */
function mutated(base: string, rng: fc.Arbitrary<number>) {
  const edit = fc.oneof(
    fc
      .tuple(rng, fc.oneof(fc.constantFrom(...SNIPPETS), fc.string({ maxLength: 30 }), fc.string({ unit: 'binary', maxLength: 30 })))
      .map(([at, text]) => (s: string) => {
        const i = Math.floor(at * s.length);
        return s.slice(0, i) + text + s.slice(i);
      }),
    fc.tuple(rng, fc.integer({ min: 1, max: 40 })).map(([at, n]) => (s: string) => {
      const i = Math.floor(at * s.length);
      return s.slice(0, i) + s.slice(i + n);
    }),
    fc.tuple(rng, fc.integer({ min: 1, max: 200 })).map(([at, n]) => (s: string) => {
      const i = Math.floor(at * s.length);
      return s.slice(0, i + n) + s.slice(i, i + n) + s.slice(i + n);
    }),
    fc
      .tuple(
        fc.constantFrom('msgType', 'status', 'event', 'identifier', 'sender', 'sent', 'references', 'description', 'senderName'),
        fc.oneof(fc.constantFrom('Alert', 'Update', 'Cancel', 'Ack', 'Actual', 'Exercise', 'Fire', ''), fc.string({ maxLength: 40 })),
      )
      .map(([name, value]) => (s: string) => {
        const escaped = value.replace(/&/g, '&amp;').replace(/</g, '&lt;');
        const element = new RegExp(`<${name}>[^<]*</${name}>`);
        return element.test(s) ? s.replace(element, `<${name}>${escaped}</${name}>`) : s.replace('<scope>', `<${name}>${escaped}</${name}><scope>`);
      }),
  );
  return fc.array(edit, { minLength: 0, maxLength: 4 }).map((edits) => edits.reduce((s, f) => f(s), base));
}

/** Random edits of the specification's examples on POST /orgs/{org_id}/cap: never a 5xx; whatever was ingested exports valid CAP. */
describe('fuzz: CAP ingest', () => {
  let server: TestServer;
  let org: OrgFixture;
  let key: string;

  before(async () => {
    server = await startTestServer();
    org = await createOrgTree(server.ctx);
    key = (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId })).key;
  });
  after(() => server.close());

  it(`${REQUESTS} mutated alerts: no 5xx, and every ingested emergency exports as valid CAP`, { timeout: 10 * 60_000 }, async (t) => {
    const bases = (['a1-homeland-security-advisory', 'a2-severe-thunderstorm-warning', 'a3-earthquake-update', 'a4-amber-alert-multilingual'] as const).map(
      example,
    );
    const rng = fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true });
    const statuses = new Map<number, number>();
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: bases.length - 1 }).chain((i) => mutated(bases[i]!, rng)),
        async (xml) => {
          // Each run is a new message, so Alerts are declared rather than refused as repeats.
          const res = await postCap(server.base, key, org.orgId, xml.replace(/<identifier>([^<]*)<\/identifier>/, `<identifier>$1-${n++}</identifier>`));
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          assert.ok(res.status < 500, `${res.status} ${JSON.stringify(res.body)}\n${xml}`);
        },
      ),
      { numRuns: REQUESTS },
    );
    t.diagnostic(`answers by status: ${JSON.stringify(Object.fromEntries(statuses))}`);
    assert.ok((statuses.get(201) ?? 0) > 0 && (statuses.get(422) ?? 0) > 0, `a mix of outcomes: ${JSON.stringify([...statuses])}`);

    const feed = atomView((await getXml(`${server.base}/orgs/${org.orgId}/cap/feed`, key)).text);
    assert.ok(feed.entries.length > 0);
    for (const entry of feed.entries) assertValidCap(entry.alertXml, `feed entry ${entry.id}`);
    const api = client(server.base, key);
    const page = await api.get(`/orgs/${org.orgId}/emergencies?status=resolved&limit=20`);
    for (const e of page.body.items as { emergencyId: string }[]) {
      assertValidCap((await getXml(`${server.base}/orgs/${org.orgId}/emergencies/${e.emergencyId}/cap`, key)).text, `resolved ${e.emergencyId}`);
    }
  });
});
