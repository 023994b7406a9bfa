import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { deadlineOrg, feedOf, sleep } from '../deadlines/support.js';
import { SEVERAL_INSTANCES, twoInstances } from '../devices/support.js';
import { completedRuns, runsOf, shortSchedule } from './support.js';

describe('drills on two instances of one PostgreSQL database', SEVERAL_INSTANCES, () => {
  const servers = twoInstances();

  it('each scheduled time runs once and completes once, whichever instance claims it', async () => {
    // Both instances' workers race for each run; the test reads through a.
    const { a } = servers;
    const org = await deadlineOrg(a.ctx, a.url);
    // Several drills due at the same times: both workers find them due and race for each.
    const { schedule, times } = shortSchedule(3, 8, 3);
    const drills: string[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await org.admin.post(`/orgs/${org.orgId}/drills`, { name: `Drill ${i}`, schedule, ackDeadlineSeconds: 5, resolveAfterSeconds: 6 });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      drills.push(res.body.drillId);
    }
    for (const drillId of drills) await completedRuns(org, drillId, 3, 60_000);
    // Two more polls of both workers: nothing runs or completes twice.
    await sleep(2_500);
    for (const drillId of drills) {
      const runs = await runsOf(org, drillId);
      assert.deepEqual(runs.map((r) => r.scheduledFor).sort(), times, 'one run per occurrence');
    }
    const completed = await feedOf(org, 'drill.completed');
    assert.equal(completed.length, drills.length * times.length, 'one drill.completed per run');
    assert.equal(new Set(completed.map((i) => i.event.data.runId)).size, completed.length);
    assert.equal((await feedOf(org, 'emergency.declared')).length, drills.length * times.length, 'one exercise per run');
    assert.equal((await feedOf(org, 'emergency.resolved')).length, drills.length * times.length);
  });
});
