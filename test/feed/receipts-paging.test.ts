import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { recordAcks } from '../../src/domain/devices/repo.js';
import { createDevices } from '../../src/domain/devices/service.js';
import { declareEmergency, recategorizeEmergency } from '../../src/domain/emergencies/service.js';
import { client } from '../helpers/http.js';
import { connectMcp, type McpConnection, rawMcp } from '../helpers/mcp.js';
import { createOrgTree, mintKey, type OrgFixture, startTestServer, type TestServer } from '../helpers/server.js';

const MiB = 1024 * 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Receipts stay bounded (extensions.md §9) in an org of 1,000 base stations whose names are as long
 * as allowed and escape to six bytes a character, with an emergency re-categorized hundreds of times:
 * every answer is at most 1 MiB (REST and the tool), and walking the pages gives the exact counts.
 *
 * Devices A0..A599 exist from the start, B0..B399 from event 151 on (of 240). A0..A299 acknowledged
 * up to event 75; A300..A399 and B0..B99 everything; the rest nothing.
 */
const EVENTS = 240;
const FIRST_FLEET = 600;
const SECOND_FLEET_FROM = 151;
const FIRST_ACK = 75;
const deviceName = (fleet: 'A' | 'B', i: number) => `${'\u0001'.repeat(115)}${fleet} station ${String(i).padStart(3, '0')}`;

function expected(sequence: number): { targeted: number; acknowledged: number } {
  const targeted = sequence < SECOND_FLEET_FROM ? FIRST_FLEET : 1000;
  const acknowledged = (sequence <= FIRST_ACK ? 300 : 0) + 100 + (sequence >= SECOND_FLEET_FROM ? 100 : 0);
  return { targeted, acknowledged };
}

describe('receipts paged per event and per device', () => {
  let server: TestServer;
  let org: OrgFixture;
  let key: string;
  let api: ReturnType<typeof client>;
  let mcp: McpConnection;
  let emergencyId: string;
  let receiptsPath: string;
  let firstAckAt: string;
  let lastAckAt: string;

  /** A GET of the receipts with its size in bytes as sent. */
  async function receipts(query: string): Promise<{ status: number; body: any; bytes: number }> {
    const res = await fetch(`${server.base}${receiptsPath}?${query}`, { headers: { authorization: `Bearer ${key}` } });
    const text = await res.text();
    return { status: res.status, body: JSON.parse(text), bytes: Buffer.byteLength(text) };
  }

  /** The event with this sequence as a page of events lists it (with ?detail=devices). */
  async function eventOnPages(sequence: number): Promise<any> {
    let cursor: string | null = null;
    do {
      const page = await receipts(`limit=100&detail=devices${cursor ? `&cursor=${cursor}` : ''}`);
      const found = page.body.events.find((e: { sequence: number }) => e.sequence === sequence);
      if (found) return found;
      cursor = page.body.nextCursor;
    } while (cursor);
    assert.fail(`event ${sequence} not on any page`);
  }

  before(async () => {
    server = await startTestServer();
    org = await createOrgTree(server.ctx);
    key = (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId })).key;
    api = client(server.base, key);
    const operator = operatorCaller();
    const first = await createDevices(
      server.ctx,
      operator,
      org.orgId,
      Array.from({ length: FIRST_FLEET }, (_, i) => deviceName('A', i)),
    );
    const declared = await declareEmergency(server.ctx, operator, org.orgId, { categoryName: 'Fire' });
    emergencyId = declared.emergencyId;
    receiptsPath = `/orgs/${org.orgId}/emergencies/${emergencyId}/receipts`;
    const recategorize = (sequence: number) =>
      recategorizeEmergency(server.ctx, operator, org.orgId, emergencyId, { categoryName: sequence % 2 === 0 ? 'Medical' : 'Fire' });
    for (let sequence = 2; sequence < SECOND_FLEET_FROM; sequence++) await recategorize(sequence);
    // Timestamps have millisecond precision: the second fleet is strictly younger than event 150 and older than 151.
    await sleep(5);
    const second = await createDevices(
      server.ctx,
      operator,
      org.orgId,
      Array.from({ length: 400 }, (_, i) => deviceName('B', i)),
    );
    await sleep(5);
    for (let sequence = SECOND_FLEET_FROM; sequence <= EVENTS; sequence++) await recategorize(sequence);
    // The acks the gateway records when devices acknowledge: cumulative offsets with their arrival time.
    firstAckAt = new Date().toISOString();
    await recordAcks(
      server.ctx.db,
      first.slice(0, 300).map((d) => ({ deviceId: d.id, orgId: org.orgId, offset: FIRST_ACK, at: firstAckAt })),
    );
    await sleep(5);
    lastAckAt = new Date().toISOString();
    await recordAcks(
      server.ctx.db,
      [...first.slice(300, 400), ...second.slice(0, 100)].map((d) => ({ deviceId: d.id, orgId: org.orgId, offset: EVENTS, at: lastAckAt })),
    );
    mcp = await connectMcp(server.url, key);
  });
  after(async () => {
    await mcp?.close();
    await server.close();
  });

  it('pages the events: every answer under 1 MiB, each event with exact counts and at most 10 devices', async () => {
    const byDefault = await receipts('');
    assert.equal(byDefault.status, 200);
    assert.equal(byDefault.body.events.length, 20);
    assert.equal(typeof byDefault.body.nextCursor, 'string');

    for (const detail of ['', '&detail=devices']) {
      const seen: number[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const page = await receipts(`limit=100${detail}${cursor ? `&cursor=${cursor}` : ''}`);
        assert.equal(page.status, 200);
        assert.ok(page.bytes <= MiB, `a page of ${page.bytes} bytes`);
        assert.equal(page.body.emergencyId, emergencyId);
        assert.ok(page.body.events.length >= 1 && page.body.events.length <= 100);
        for (const event of page.body.events) {
          seen.push(event.sequence);
          assert.equal(event.offset, event.sequence, 'the org stream holds only this emergency');
          const { targeted, acknowledged } = expected(event.sequence);
          assert.equal(event.devices.targeted, targeted, `targeted of event ${event.sequence}`);
          assert.equal(event.devices.acknowledged, acknowledged, `acknowledged of event ${event.sequence}`);
          // The first ten pending devices by name: A400.. while A0..A399 have acknowledged the event, else A0..
          const firstPending = event.sequence <= FIRST_ACK ? 400 : 0;
          assert.deepEqual(
            event.devices.pending.map((d: { name: string }) => d.name),
            Array.from({ length: 10 }, (_, i) => deviceName('A', firstPending + i)),
          );
          assert.equal(typeof event.devices.nextCursor, 'string');
          assert.equal('acknowledgedBy' in event.devices, detail !== '');
          if (detail) assert.deepEqual(event.devices.acknowledgedBy, []);
          assert.deepEqual(event.webhooks, { targeted: 0, succeeded: 0, failed: 0, pending: 0 });
        }
        cursor = page.body.nextCursor;
        pages++;
      } while (cursor);
      assert.deepEqual(
        seen,
        Array.from({ length: EVENTS }, (_, i) => i + 1),
      );
      // Device names this long fill a page's size budget before 100 events.
      assert.ok(pages > EVENTS / 100, `${pages} pages`);
    }
  });

  it("pages an event's devices with deviceCursor: pending first, then acknowledged, adding up to its counts", async () => {
    for (const sequence of [1, 120, EVENTS]) {
      const { targeted, acknowledged } = expected(sequence);
      const listed = await eventOnPages(sequence);
      for (const detail of [true, false]) {
        const pending: { deviceId: string; name: string; online: boolean }[] = [...listed.devices.pending];
        const acked: { deviceId: string; name: string; acknowledgedAt: string | null }[] = [];
        let cursor: string | null = listed.devices.nextCursor;
        while (cursor) {
          const page = await receipts(`limit=100&deviceCursor=${cursor}${detail ? '&detail=devices' : ''}`);
          assert.equal(page.status, 200);
          assert.ok(page.bytes <= MiB);
          assert.equal(page.body.nextCursor, null);
          assert.equal(page.body.events.length, 1);
          const [event] = page.body.events;
          assert.equal(event.sequence, sequence);
          assert.equal(event.devices.targeted, targeted);
          assert.equal(event.devices.acknowledged, acknowledged);
          assert.ok(event.devices.pending.length + (event.devices.acknowledgedBy?.length ?? 0) <= 100);
          pending.push(...event.devices.pending);
          acked.push(...(event.devices.acknowledgedBy ?? []));
          cursor = event.devices.nextCursor;
        }
        assert.equal(pending.length, targeted - acknowledged, `pending devices of event ${sequence}`);
        assert.equal(acked.length, detail ? acknowledged : 0, `acknowledging devices of event ${sequence}`);
        const ids = [...pending, ...acked].map((d) => d.deviceId);
        assert.equal(new Set(ids).size, ids.length, 'no device twice');
        const names = (list: { name: string }[]) => list.map((d) => d.name);
        assert.deepEqual(names(pending), [...names(pending)].sort());
        assert.deepEqual(names(acked), [...names(acked)].sort());
        assert.ok(pending.every((d) => d.online === false));
        if (detail) {
          // A0..A299 acknowledged events up to 75 with their first ack; every other acknowledgement is the last ack.
          for (const d of acked) {
            const [, fleet, n] = /([AB]) station (\d+)$/.exec(d.name)!;
            assert.equal(d.acknowledgedAt, fleet === 'A' && Number(n) < 300 ? firstAckAt : lastAckAt, d.name.slice(115));
          }
        }
      }
    }
  });

  it('the tool pages alike, each result under 1 MiB', async () => {
    const args = { orgId: org.orgId, emergencyId, limit: 100, detail: 'devices' };
    const first = await mcp.ok('get_emergency_receipts', args);
    assert.deepEqual(first, (await api.get(`${receiptsPath}?limit=100&detail=devices`)).body);
    let total = first.events.length;
    let cursor: string | null = first.nextCursor;
    while (cursor) {
      const raw = await rawMcp(
        server.url,
        { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_emergency_receipts', arguments: { ...args, cursor } } },
        { authorization: `Bearer ${key}`, 'mcp-protocol-version': '2025-06-18' },
      );
      assert.equal(raw.status, 200);
      assert.ok(Buffer.byteLength(raw.text) <= MiB, `a tool result of ${Buffer.byteLength(raw.text)} bytes`);
      const page = raw.message.result.structuredContent;
      total += page.events.length;
      cursor = page.nextCursor;
    }
    assert.equal(total, EVENTS);

    const devices = await mcp.ok('get_emergency_receipts', { orgId: org.orgId, emergencyId, limit: 50, deviceCursor: first.events[0].devices.nextCursor });
    assert.deepEqual(devices, (await api.get(`${receiptsPath}?limit=50&deviceCursor=${first.events[0].devices.nextCursor}`)).body);
    assert.equal(devices.events[0].devices.pending.length, 50);

    const bad = await mcp.fail('get_emergency_receipts', { orgId: org.orgId, emergencyId, cursor: Buffer.from('[1.5]').toString('base64url') });
    assert.equal(bad.error, 'cursor_invalid');
    const badDevices = await mcp.fail('get_emergency_receipts', {
      orgId: org.orgId,
      emergencyId,
      deviceCursor: Buffer.from('[1,2,"a","0"]').toString('base64url'),
    });
    assert.equal(badDevices.error, 'cursor_invalid');
  });

  it('refuses crafted cursors with 422 cursor_invalid, and limits outside 1..100', async () => {
    const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const uuid = '0190a0b0-0000-7000-8000-000000000000';
    const deviceCursor = (await receipts('limit=1')).body.events[0].devices.nextCursor;
    const cases: [string, string, 'cursor' | 'deviceCursor'][] = [
      ['cursor', encode(['x\u0000', 'y']), 'cursor'],
      ['cursor', encode([1.5]), 'cursor'],
      ['cursor', encode([2147483648]), 'cursor'],
      ['cursor', 'not a cursor!', 'cursor'],
      ['cursor', deviceCursor, 'cursor'],
      ['deviceCursor', encode([1, 2, 'a', uuid]), 'deviceCursor'],
      ['deviceCursor', encode([0, 0, 'a', uuid]), 'deviceCursor'],
      ['deviceCursor', encode([1.5, 0, 'a', uuid]), 'deviceCursor'],
      ['deviceCursor', encode([1, 0, 'x\u0000', uuid]), 'deviceCursor'],
      ['deviceCursor', encode([1, 0, 'a', 'not-a-uuid']), 'deviceCursor'],
      ['deviceCursor', encode([5]), 'deviceCursor'],
      ['deviceCursor', 'x'.repeat(5000), 'deviceCursor'],
    ];
    for (const [param, value, field] of cases) {
      const res = await receipts(`${param}=${encodeURIComponent(value)}`);
      assert.equal(res.status, 422, `${param}=${value.slice(0, 40)}`);
      assert.equal(res.body.detail[0].type, 'cursor_invalid');
      assert.deepEqual(res.body.detail[0].loc, ['query', field]);
    }
    for (const limit of ['0', '101', '1.5']) {
      const res = await receipts(`limit=${limit}`);
      assert.equal(res.status, 422);
      assert.deepEqual(res.body.detail[0].loc, ['query', 'limit']);
    }
  });
});
