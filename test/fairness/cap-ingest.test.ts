import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { abuseLoop, assertFairShare, fairShareSuite } from '../helpers/alert-path.js';
import { createOrgTree, mintKey } from '../helpers/server.js';

/** The largest CAP alert the service accepts (extensions §8). */
const CAP_LIMIT = 256 * 1024;
const RATE_LIMIT_PER_KEY = 50;

const head = (identifier: string) =>
  `<?xml version="1.0" encoding="UTF-8"?>\n<alert xmlns="urn:oasis:names:tc:emergency:cap:1.2"><identifier>${identifier}</identifier>` +
  '<sender>hostile@example.test</sender><sent>2024-05-01T10:00:00-00:00</sent><status>Actual</status><msgType>Alert</msgType><scope>Public</scope>';

/** As many copies of `part` between `open` and `close` as fit in the size limit: a valid alert that is all parsing and validation. */
function fill(open: string, part: (i: number) => string, close: string): { xml: (identifier: string) => string; count: number } {
  const room = CAP_LIMIT - Buffer.byteLength(head('X'.repeat(40)) + open + close);
  const parts: string[] = [];
  let size = 0;
  for (let i = 0; ; i++) {
    const next = part(i);
    if (size + next.length > room) break;
    parts.push(next);
    size += next.length;
  }
  const body = open + parts.join('') + close;
  return { xml: (identifier) => head(identifier) + body, count: parts.length };
}

const manyInfos = fill(
  '',
  (i) => `<info><category>Met</category><event>E${i}</event><urgency>Immediate</urgency><severity>Severe</severity><certainty>Observed</certainty></info>`,
  '</alert>',
);
const manyAreas = fill(
  '<info><category>Met</category><event>Storm</event><urgency>Immediate</urgency><severity>Severe</severity><certainty>Observed</certainty>',
  (i) => `<area><areaDesc>${i % 10}</areaDesc></area>`,
  '</info></alert>',
);

describe('fair share: a tenant ingesting the heaviest CAP alerts the service accepts', () => {
  const suite = fairShareSuite({ RATE_LIMIT_PER_KEY: String(RATE_LIMIT_PER_KEY) });

  it("256 KiB alerts of ~1,800 infos (and ~7,100 areas) at a fifth of the rate limit leave tenant B's declare → frame within its share", async () => {
    const { server, probe } = suite;
    assert.ok(manyInfos.count >= 1700, `${manyInfos.count} infos`);
    assert.ok(manyAreas.count >= 7000, `${manyAreas.count} areas`);
    const org = await createOrgTree(server.ctx);
    const { key } = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId });
    const statuses = new Map<number, number>();
    const post = async (i: number) => {
      const xml = (i % 5 === 4 ? manyAreas : manyInfos).xml(`hostile-${i}-${Date.now()}`);
      assert.ok(Buffer.byteLength(xml) <= CAP_LIMIT);
      const res = await fetch(`${server.base}/orgs/${org.orgId}/cap`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/cap+xml' },
        body: xml,
      });
      await res.arrayBuffer();
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      return res.status;
    };
    assert.equal(await post(0), 201, 'an alert of many infos is ingested');
    assert.equal(await post(4), 201, 'an alert of many areas is ingested');

    const quiet = await probe.measure(30);
    // A fifth of the key's rate limit, each post started on its own schedule whatever the answers take.
    const started = performance.now();
    const interval = 1000 / (RATE_LIMIT_PER_KEY / 5);
    const abuse = abuseLoop(async (i) => {
      const wait = started + i * interval - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      await post(i);
    }, 8);
    const abused = await probe.measureDuring(abuse, 30);
    assert.ok((statuses.get(201) ?? 0) >= 4, `alerts were ingested during the run: ${JSON.stringify([...statuses])}`);
    assert.ok(![...statuses.keys()].some((s) => s >= 500 && s !== 503), `no 5xx but 503: ${JSON.stringify([...statuses])}`);
    assertFairShare(quiet, abused, 'heavy CAP ingest');
  });
});
