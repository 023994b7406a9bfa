import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createAdminKey } from '../../src/domain/admin-keys/service.js';
import { createCategory } from '../../src/domain/categories/service.js';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey, type OrgFixture, startTestServer, type TestServer } from '../helpers/server.js';
import { assertValidCap, capView, example, getXml, postCap } from './support.js';

/** POST /orgs/{org_id}/cap: CAP 1.2 alerts of other systems become declares, re-categorizations and resolutions. */
describe('CAP ingest', () => {
  let server: TestServer;
  let org: OrgFixture;
  let key: string;
  let api: ReturnType<typeof client>;
  const post = (xml: string | Uint8Array, headers?: Record<string, string>) => postCap(server.base, key, org.orgId, xml, headers);
  const categoryOf = async (id: string) => (await api.get(`/orgs/${org.orgId}/emergencies/${id}`)).body.category.name as string;

  /** The A.3 earthquake Update references TRI13970876.1, which the specification does not show: this is that Alert. */
  const earthquakeAlert = () =>
    example('a3-earthquake-update')
      .replace('<identifier>TRI13970876.2</identifier>', '<identifier>TRI13970876.1</identifier>')
      .replace('<sent>2003-06-11T20:56:00-07:00</sent>', '<sent>2003-06-11T20:30:00-07:00</sent>')
      .replace('<msgType>Update</msgType>', '<msgType>Alert</msgType>')
      .replace(/<references>[^<]*<\/references>/, '')
      .replace('<event>Earthquake</event>', '<event>Seismic activity</event>');

  before(async () => {
    server = await startTestServer();
    org = await createOrgTree(server.ctx);
    key = (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId })).key;
    api = client(server.base, key);
    for (const [name, severity, responseLevel] of [
      ['Lockdown', 5, 'lockdown'],
      ['Severe Weather', 4, 'shelter'],
      ['Earthquake', 4, 'shelter'],
    ] as const) {
      await createCategory(server.ctx, operatorCaller(), org.orgId, { name, color: '#B71C1C', severity, responseLevel });
    }
    const admin = client(
      `${server.url}/api/admin/v1`,
      (await createAdminKey(server.ctx, operatorCaller(), { name: 'root', subject: { type: 'instance' } })).key,
    );
    for (const [event, categoryName] of [
      ['Homeland Security Advisory System Update', 'Lockdown'],
      ['severe  thunderstorm', 'Severe Weather'],
      ['earthquake', 'Earthquake'],
      ['Child Abduction', 'Lockdown'],
    ]) {
      assert.equal((await admin.post(`/orgs/${org.orgId}/cap-mappings`, { event, categoryName })).status, 201);
    }
  });
  after(() => server.close());

  it('A.1: an Alert declares under the mapped category, with externalId sender,identifier and its text; it exports as sent', async () => {
    const res = await post(example('a1-homeland-security-advisory'));
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const e = res.body;
    assert.equal(e.status, 'declared');
    assert.equal(e.externalId, 'hsas@dhs.gov,43b080713727');
    assert.equal(e.category.name, 'Lockdown');
    assert.equal(e.source, 'cap');
    assert.equal(e.occurredAt, '2003-04-02T19:39:01.000Z');
    assert.match(e.description, /^The Department of Homeland Security has elevated/);
    assert.deepEqual(e.declaredBy, { type: 'user', id: 'hsas@dhs.gov', name: 'U.S. Government, Department of Homeland Security' });
    assert.equal(e.location, null);
    assert.deepEqual(e.metadata.cap, {
      sender: 'hsas@dhs.gov',
      identifier: '43b080713727',
      sent: '2003-04-02T14:39:01-05:00',
      event: 'Homeland Security Advisory System Update',
      messages: [{ msgType: 'Alert', sender: 'hsas@dhs.gov', identifier: '43b080713727', sent: '2003-04-02T14:39:01-05:00', sequence: 1 }],
    });
    assert.deepEqual((await api.get(`/orgs/${org.orgId}/emergencies/${e.emergencyId}`)).body, e);

    const exported = await getXml(`${server.base}/orgs/${org.orgId}/emergencies/${e.emergencyId}/cap`, key);
    assertValidCap(exported.text, 'an ingested Alert, exported');
    const cap = capView(exported.text);
    // The relay (extensions §12): the alert's own event, category, severity and scope, under the service's identifier and sender.
    assert.deepEqual(
      [cap.msgType, cap.scope, cap.sender, cap.identifier, cap.references, cap.event, cap.category, cap.severity],
      [
        'Alert',
        'Public',
        `urn:uuid:${org.orgId}`,
        `${e.emergencyId}.1`,
        'hsas@dhs.gov,43b080713727,2003-04-02T14:39:01-05:00',
        'Homeland Security Advisory System Update',
        'Security',
        'Severe',
      ],
    );
    assert.equal(cap.description, capView(example('a1-homeland-security-advisory')).description);
  });

  it('A.1 again: a repeated Alert is a 409 external_id_conflict naming the emergency, like a repeated externalId', async () => {
    const existing = (await api.get(`/orgs/${org.orgId}/emergencies?externalId=${encodeURIComponent('hsas@dhs.gov,43b080713727')}`)).body.items[0];
    const res = await post(example('a1-homeland-security-advisory'));
    assert.equal(res.status, 409);
    assert.equal(res.body.detail.error, 'external_id_conflict');
    assert.equal(res.body.detail.emergencyId, existing.emergencyId);
  });

  it('A.2: the event matches its mapping case-insensitively; a polygon gives its centroid; a Cancel resolves it', async () => {
    const res = await post(example('a2-severe-thunderstorm-warning'), { 'content-type': 'application/xml; charset=utf-8' });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const e = res.body;
    assert.equal(e.category.name, 'Severe Weather');
    assert.equal(e.externalId, 'KSTO@NWS.NOAA.GOV,KSTO1055887203');
    assert.equal(e.declaredBy.name, 'NATIONAL WEATHER SERVICE SACRAMENTO CA');
    assert.ok(Math.abs(e.location.latitude - 38.484) < 0.01 && Math.abs(e.location.longitude + 119.935) < 0.01, JSON.stringify(e.location));
    assert.equal(e.location.floorId, null);

    const cancel = example('a2-severe-thunderstorm-warning')
      .replace('<identifier>KSTO1055887203</identifier>', '<identifier>KSTO1055887299</identifier>')
      .replace('<sent>2003-06-17T14:57:00-07:00</sent>', '<sent>2003-06-17T15:30:00-07:00</sent>')
      .replace('<msgType>Alert</msgType>', '<msgType>Cancel</msgType>')
      .replace(
        '<scope>Public</scope>',
        '<scope>Public</scope><note>The storm has passed.</note><references>KSTO@NWS.NOAA.GOV,KSTO1055887203,2003-06-17T14:57:00-07:00</references>',
      );
    const resolved = await post(cancel);
    assert.equal(resolved.status, 201, JSON.stringify(resolved.body));
    assert.equal(resolved.body.emergencyId, e.emergencyId);
    assert.equal(resolved.body.status, 'resolved');
    assert.equal(resolved.body.resolutionNote, 'The storm has passed.');
    assert.equal(resolved.body.resolvedAt, '2003-06-17T22:30:00.000Z');
    assert.deepEqual(resolved.body.resolvedBy, { type: 'user', id: 'KSTO@NWS.NOAA.GOV', name: 'NATIONAL WEATHER SERVICE SACRAMENTO CA' });
    // Already resolved: answered like REST, 200 with the existing resolution.
    const again = await post(cancel);
    assert.equal(again.status, 200);
    assert.deepEqual(again.body, resolved.body);
    const exported = capView((await getXml(`${server.base}/orgs/${org.orgId}/emergencies/${e.emergencyId}/cap`, key)).text);
    assert.deepEqual([exported.msgType, exported.note], ['Cancel', 'The storm has passed.']);
    // An Update of a resolved emergency is refused like a PATCH.
    const late = await post(cancel.replace('<msgType>Cancel</msgType>', '<msgType>Update</msgType>').replace('KSTO1055887299', 'KSTO1055887300'));
    assert.equal(late.status, 409);
    assert.equal(late.body.detail.error, 'emergency_resolved');
  });

  it('A.3: the Update, after the Alert it references, re-categorizes that emergency; the export relays it and names every message', async () => {
    const alert = await post(earthquakeAlert());
    assert.equal(alert.status, 201, JSON.stringify(alert.body));
    assert.equal(alert.body.category.name, 'Uncategorized');
    assert.deepEqual([alert.body.location.latitude, alert.body.location.longitude], [32.9525, -115.5527]);
    const update = await post(example('a3-earthquake-update'));
    assert.equal(update.status, 200, JSON.stringify(update.body));
    assert.equal(update.body.emergencyId, alert.body.emergencyId);
    assert.equal(update.body.status, 'categorized');
    assert.equal(update.body.category.name, 'Earthquake');
    assert.equal(await categoryOf(alert.body.emergencyId), 'Earthquake');

    const exported = await getXml(`${server.base}/orgs/${org.orgId}/emergencies/${alert.body.emergencyId}/cap`, key);
    assertValidCap(exported.text, 'an ingested Alert and Update, exported');
    const cap = capView(exported.text);
    assert.equal(cap.msgType, 'Update');
    assert.equal(cap.event, 'Earthquake');
    assert.equal(cap.category, 'Geo');
    assert.deepEqual([cap.urgency, cap.severity], ['Past', 'Minor']);
    const [origin, update2, ownAlert] = cap.references!.split(' ');
    assert.equal(origin, 'trinet@caltech.edu,TRI13970876.1,2003-06-11T20:30:00-07:00');
    assert.equal(update2, 'trinet@caltech.edu,TRI13970876.2,2003-06-11T20:56:00-07:00');
    assert.match(ownAlert!, new RegExp(`^urn:uuid:${org.orgId},${alert.body.emergencyId}\\.1,`));
    assert.equal(cap.circle, '32.9525,-115.5527 0');
    assert.deepEqual(
      update.body.metadata.cap.messages.map((m: { identifier: string }) => m.identifier),
      ['TRI13970876.1', 'TRI13970876.2'],
    );
  });

  it('A.4: of a multilingual alert, the info whose event the org maps decides the category', async () => {
    const res = await post(example('a4-amber-alert-multilingual'));
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.equal(res.body.category.name, 'Lockdown');
    assert.equal(res.body.externalId, 'KARO@CLETS.DOJ.CA.GOV,KAR0-0306112239-SW');
    assert.equal(res.body.declaredBy.name, 'Los Angeles Police Dept - LAPD');
    assert.match(res.body.description, /^DATE\/TIME: 06\/11\/03, 1915 HRS\./);
  });

  it("an Update or Cancel may name this service's own alert; an unmapped event lands in Uncategorized", async () => {
    const declared = (await api.post(`/orgs/${org.orgId}/emergencies`, { categoryName: 'Fire' })).body;
    const own = capView((await getXml(`${server.base}/orgs/${org.orgId}/emergencies/${declared.emergencyId}/cap`, key)).text);
    const update = example('a3-earthquake-update')
      .replace('<identifier>TRI13970876.2</identifier>', '<identifier>partner-update-1</identifier>')
      .replace(/<references>[^<]*<\/references>/, `<references>${own.sender},${own.identifier},${own.sent}</references>`)
      .replace('<event>Earthquake</event>', '<event>Something unheard of</event>');
    const res = await post(update);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.emergencyId, declared.emergencyId);
    assert.equal(res.body.category.name, 'Uncategorized');
  });

  it('refuses what it cannot act on: other statuses, Ack and Error, missing or unknown references, invalid CAP', async () => {
    const a1 = example('a1-homeland-security-advisory').replace('43b080713727', 'refused-1');
    const expect422 = async (xml: string | Uint8Array, type: string, loc: string[] = ['body'], headers?: Record<string, string>) => {
      const res = await post(xml, headers);
      assert.equal(res.status, 422, JSON.stringify(res.body));
      assert.equal(res.body.detail[0].type, type, JSON.stringify(res.body));
      assert.deepEqual(res.body.detail[0].loc, loc);
      assert.ok(res.body.detail[0].msg.length > 10);
    };
    for (const status of ['System', 'Draft']) {
      await expect422(a1.replace('<status>Actual</status>', `<status>${status}</status>`), 'cap_status_unsupported', ['body', 'status']);
    }
    for (const msgType of ['Ack', 'Error']) {
      await expect422(a1.replace('<msgType>Alert</msgType>', `<msgType>${msgType}</msgType>`), 'cap_msgtype_unsupported', ['body', 'msgType']);
    }
    await expect422(a1.replace('<msgType>Alert</msgType>', '<msgType>Update</msgType>'), 'cap_references_missing', ['body', 'references']);
    await expect422(a1.replace('<sender>hsas@dhs.gov</sender>', ''), 'cap_invalid');
    await expect422(a1.replace('<severity>Severe</severity>', '<severity>Catastrophic</severity>'), 'cap_invalid');
    await expect422(a1.replace('<sent>2003-04-02T14:39:01-05:00</sent>', '<sent>2003-04-02T14:39:01Z</sent>'), 'cap_invalid');
    await expect422(a1.replaceAll('cap:1.2', 'cap:1.1'), 'cap_invalid');
    await expect422(a1.replace('<sender>hsas@dhs.gov</sender>', '<sender>hsas at dhs.gov</sender>'), 'cap_invalid', ['body', 'sender']);
    await expect422(a1.replace('</alert>', ''), 'xml_invalid');
    await expect422(a1.replace('</info>', '&undefined;</info>'), 'xml_invalid');
    await expect422(Buffer.concat([Buffer.from('<alert>'), Buffer.from([0xff, 0xfe]), Buffer.from('</alert>')]), 'xml_invalid');

    const unknown = await post(
      a1
        .replace('<msgType>Alert</msgType>', '<msgType>Cancel</msgType>')
        .replace('<scope>Public</scope>', '<scope>Public</scope><references>nobody@example.com,nothing,2003-04-02T14:39:01-05:00</references>'),
    );
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.detail.error, 'emergency_not_found');

    const json = await post('{"identifier":"x"}', { 'content-type': 'application/json' });
    assert.equal(json.status, 415);
    assert.equal(json.body.detail.error, 'unsupported_media_type');
    const empty = await post('');
    assert.equal(empty.status, 422);
    assert.equal((await api.get(`/orgs/${org.orgId}/emergencies?externalId=${encodeURIComponent('hsas@dhs.gov,refused-1')}`)).body.items.length, 0);
  });

  it('needs the write permission of a key that covers the org', async () => {
    const a1 = example('a1-homeland-security-advisory').replace('43b080713727', 'permission-1');
    const readKey = (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId, permissions: ['read'] })).key;
    const read = await postCap(server.base, readKey, org.orgId, a1);
    assert.equal(read.status, 403);
    assert.equal(read.body.detail.error, 'permission_denied');
    const other = await createOrgTree(server.ctx);
    const otherKey = (await mintKey(server.ctx, { subjectType: 'org', subjectId: other.orgId })).key;
    const foreign = await postCap(server.base, otherKey, org.orgId, a1);
    assert.equal(foreign.status, 403);
    assert.equal(foreign.body.detail.error, 'org_not_covered');
    assert.equal(
      (await fetch(`${server.base}/orgs/${org.orgId}/cap`, { method: 'POST', headers: { 'content-type': 'application/cap+xml' }, body: a1 })).status,
      401,
    );
  });

  it('honours Idempotency-Key: a retry replays the answer, another body under the key is refused', async () => {
    const a1 = example('a1-homeland-security-advisory').replace('43b080713727', 'idempotent-1');
    const first = await post(a1, { 'idempotency-key': 'cap-retry-1' });
    assert.equal(first.status, 201);
    assert.equal(first.headers.get('idempotent-replayed'), null);
    const retry = await post(a1, { 'idempotency-key': 'cap-retry-1' });
    assert.equal(retry.status, 201);
    assert.equal(retry.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(retry.body, first.body);
    const reused = await post(a1.replace('idempotent-1', 'idempotent-2'), { 'idempotency-key': 'cap-retry-1' });
    assert.equal(reused.status, 422);
    assert.equal(reused.body.detail.error, 'idempotency_key_reused');
  });
});
