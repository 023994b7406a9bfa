import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { declareEmergency } from '../../src/domain/emergencies/service.js';
import { assertFairShare, fairShareSuite, startChildAbuser } from '../helpers/alert-path.js';
import { createOrgTree, mintKey } from '../helpers/server.js';

const OPEN_EMERGENCIES = 2000;
/** The default rate limit: the pollers use all of it. */
const RATE_LIMIT_PER_KEY = 50;

/**
 * Tenant A's pollers run in a process of their own: the test shares its process with the server, and reading megabytes of
 * feed would otherwise be charged to the server's event loop. Each loop polls as fast as it is answered (a second's pause
 * after a 429, as Retry-After says) and prints the status.
 */
const POLLER = `
const [url, key, loops] = process.argv.slice(-3);
console.log('ready');
await Promise.all(Array.from({ length: Number(loops) }, async () => {
  for (;;) {
    const res = await fetch(url, { headers: { authorization: 'Bearer ' + key } });
    await res.arrayBuffer();
    console.log(res.status);
    if (res.status === 429) await new Promise((r) => setTimeout(r, 1000));
  }
}));
`;

describe('fair share: a tenant polling the CAP Atom feed of its many open emergencies', () => {
  const suite = fairShareSuite({ RATE_LIMIT_PER_KEY: String(RATE_LIMIT_PER_KEY) });

  it("several read-key pollers of tenant A's feed leave tenant B's declare → frame within its share", async () => {
    const { server, probe } = suite;
    const org = await createOrgTree(server.ctx);
    for (let i = 0; i < OPEN_EMERGENCIES; i += 100) {
      await Promise.all(
        Array.from({ length: 100 }, (_, j) =>
          declareEmergency(server.ctx, operatorCaller(), org.orgId, {
            categoryName: j % 2 ? 'Fire' : 'Medical',
            description: `Open emergency ${i + j} with a description long enough to weigh like a real one`,
            location: { latitude: 48.85 + j / 1000, longitude: 2.35 },
          }),
        ),
      );
    }
    const { key } = await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId, permissions: ['read'] });
    const feedUrl = `${server.base}/orgs/${org.orgId}/cap/feed`;
    const first = await fetch(feedUrl, { headers: { authorization: `Bearer ${key}` } });
    await first.arrayBuffer();
    assert.equal(first.status, 200, 'the feed is served');

    const quiet = await probe.measure(30);
    const pollers = await startChildAbuser(POLLER, [feedUrl, key, '4'], 'the pollers');
    const abused = await probe.measureDuring(pollers, 30, 1000);
    assert.ok(pollers.statuses.length >= 4, `the pollers ran (${pollers.statuses.length} polls)`);
    assert.ok(
      pollers.statuses.every((s) => s === 200 || s === 429),
      `every poll was served, or refused for the key's share: ${pollers.statuses.join(',')}`,
    );
    assertFairShare(quiet, abused, 'CAP feed pollers');
  });
});
