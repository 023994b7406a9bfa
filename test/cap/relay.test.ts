import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CAP_1_2 } from '@dec112/cap-ts';
import { XmlDocument, type XmlElement } from 'libxml2-wasm';
import { client } from '../helpers/http.js';
import { createOrgTree, mintKey, type OrgFixture, startTestServer, type TestServer } from '../helpers/server.js';
import { assertValidCap, atomView, CAP_NS, example, getXml, postCap } from './support.js';

type ExampleName = Parameters<typeof example>[0];

/** The elements the relay re-issues (extensions §12); `references` is compared on its own: it names more than the original. */
const REISSUED = ['identifier', 'sender', 'sent'];

/** An alert as an outside parser reads it (@dec112/cap-ts), as plain data: its enums as numbers, its integers as strings. */
async function outsideReading(xml: string): Promise<Record<string, unknown>> {
  const alert = await CAP_1_2.Alert.fromXML(xml);
  return JSON.parse(JSON.stringify(alert, (_k, v) => (typeof v === 'bigint' ? String(v) : v)));
}

interface Tree {
  name: string;
  text: string | null;
  children: Tree[];
}

/**
 * A second, independent reading with libxml2: every element (in any namespace) by name and text, in document order. It
 * catches what a parser that maps the schema might drop or reorder.
 */
function elementTree(xml: string): Tree[] {
  const doc = XmlDocument.fromString(xml);
  try {
    const walk = (element: XmlElement): Tree[] => {
      const out: Tree[] = [];
      for (let node = element.firstChild; node !== null; node = node.next) {
        if (!('firstChild' in node)) continue;
        const el = node as XmlElement;
        const children = walk(el);
        out.push({ name: `${el.namespaceUri} ${el.name}`, text: children.length === 0 ? el.content : null, children });
      }
      return out;
    };
    assert.equal(doc.root.namespaceUri, CAP_NS);
    return walk(doc.root);
  } finally {
    doc.dispose();
  }
}

const without = (tree: Tree[], names: string[]) => tree.filter((t) => !names.some((n) => t.name === `${CAP_NS} ${n}`));
const textOf = (tree: Tree[], name: string) => tree.find((t) => t.name === `${CAP_NS} ${name}`)?.text ?? null;

/** Ingest → export of the CAP 1.2 specification's examples keeps every element but identifier, sender and sent. */
describe('CAP faithful relay', () => {
  let server: TestServer;
  let org: OrgFixture;
  let key: string;
  let api: ReturnType<typeof client>;
  const capOf = async (id: string) => {
    const res = await getXml(`${server.base}/orgs/${org.orgId}/emergencies/${id}/cap`, key);
    assert.equal(res.status, 200, res.text);
    return res.text;
  };

  /** The A.3 earthquake Update references TRI13970876.1, which the specification does not show: this is that Alert. */
  const earthquakeAlert = () =>
    example('a3-earthquake-update')
      .replace('<identifier>TRI13970876.2</identifier>', '<identifier>TRI13970876.1</identifier>')
      .replace('<sent>2003-06-11T20:56:00-07:00</sent>', '<sent>2003-06-11T20:30:00-07:00</sent>')
      .replace('<msgType>Update</msgType>', '<msgType>Alert</msgType>')
      .replace(/<references>[^<]*<\/references>/, '')
      .replace('<urgency>Past</urgency>', '<urgency>Immediate</urgency>')
      .replace('<severity>Minor</severity>', '<severity>Moderate</severity>');

  before(async () => {
    server = await startTestServer();
    org = await createOrgTree(server.ctx);
    key = (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId })).key;
    api = client(server.base, key);
  });
  after(() => server.close());

  /** Field by field, by both readings: everything but the re-issued elements equal; references name the original and what it named. */
  async function assertRelayed(original: string, exported: string, what: string) {
    assertValidCap(exported, what);
    const [sent, relayed] = [await outsideReading(original), await outsideReading(exported)];
    for (const name of [...REISSUED, 'references']) {
      delete sent[name];
      delete relayed[name];
    }
    assert.deepEqual(relayed, sent, `${what}: every field but identifier, sender, sent (and references) as sent`);

    const [a, b] = [elementTree(original), elementTree(exported)];
    assert.deepEqual(without(b, [...REISSUED, 'references']), without(a, [...REISSUED, 'references']), `${what}: every element, read by libxml2`);
    const groups = (textOf(b, 'references') ?? '').split(/\s+/);
    assert.ok(groups.includes(`${textOf(a, 'sender')},${textOf(a, 'identifier')},${textOf(a, 'sent')}`), `${what}: references name the original`);
    for (const group of (textOf(a, 'references') ?? '').split(/\s+/).filter(Boolean)) {
      assert.ok(groups.includes(group), `${what}: references name ${group}, which the original named`);
    }
    assert.match(textOf(b, 'identifier')!, /^[0-9a-f-]{36}\.\d+$/);
    assert.equal(textOf(b, 'sender'), `urn:uuid:${org.orgId}`);
    assert.notEqual(textOf(b, 'sent'), textOf(a, 'sent'));
  }

  for (const name of ['a1-homeland-security-advisory', 'a2-severe-thunderstorm-warning', 'a4-amber-alert-multilingual'] as ExampleName[]) {
    it(`${name}: an ingested Alert exports as it was sent`, async () => {
      const res = await postCap(server.base, key, org.orgId, example(name));
      assert.equal(res.status, 201, JSON.stringify(res.body));
      await assertRelayed(example(name), await capOf(res.body.emergencyId), name);
    });
  }

  it('a3-earthquake-update: after the Alert it references, the Update is relayed and named in references and metadata.cap', async () => {
    const alert = await postCap(server.base, key, org.orgId, earthquakeAlert());
    assert.equal(alert.status, 201, JSON.stringify(alert.body));
    const id = alert.body.emergencyId as string;
    await assertRelayed(earthquakeAlert(), await capOf(id), 'the TRI13970876.1 Alert');

    const update = await postCap(server.base, key, org.orgId, example('a3-earthquake-update'));
    assert.equal(update.status, 200, JSON.stringify(update.body));
    assert.equal(update.body.emergencyId, id);
    const exported = await capOf(id);
    await assertRelayed(example('a3-earthquake-update'), exported, 'a3-earthquake-update');
    const relayed = await outsideReading(exported);
    // Past and Minor, as the Update says: not the category's urgency and severity.
    assert.deepEqual(
      [(relayed.info_list as { urgency: number; severity: number }[])[0]!.urgency, (relayed.info_list as { severity: number }[])[0]!.severity],
      [CAP_1_2.Alert_info_list_info_urgency.past, CAP_1_2.Alert_info_list_info_severity.minor],
    );
    const groups = (relayed.references as string).split(' ');
    assert.ok(groups.includes('trinet@caltech.edu,TRI13970876.2,2003-06-11T20:56:00-07:00'), relayed.references as string);
    assert.ok(groups.includes('trinet@caltech.edu,TRI13970876.1,2003-06-11T20:30:00-07:00'), relayed.references as string);
    assert.ok(
      groups.some((g) => g.startsWith(`urn:uuid:${org.orgId},${id}.1,`)),
      'and the service’s own Alert',
    );

    const emergency = (await api.get(`/orgs/${org.orgId}/emergencies/${id}`)).body;
    assert.deepEqual(
      emergency.metadata.cap.messages.map((m: { identifier: string; msgType: string }) => [m.msgType, m.identifier]),
      [
        ['Alert', 'TRI13970876.1'],
        ['Update', 'TRI13970876.2'],
      ],
    );
    assert.equal(emergency.metadata.cap.identifier, 'TRI13970876.1');
  });

  it('keeps one document per emergency: an Update or Cancel replaces the earlier one; each message stays named', async () => {
    const base = example('a2-severe-thunderstorm-warning').replaceAll('KSTO1055887203', 'chain-1');
    const alert = await postCap(server.base, key, org.orgId, base);
    assert.equal(alert.status, 201, JSON.stringify(alert.body));
    const id = alert.body.emergencyId as string;
    const next = (identifier: string, msgType: string, extra: string) =>
      base
        .replace('<identifier>chain-1</identifier>', `<identifier>${identifier}</identifier>`)
        .replace('<msgType>Alert</msgType>', `<msgType>${msgType}</msgType>`)
        .replace('<scope>Public</scope>', `<scope>Public</scope>${extra}<references>KSTO@NWS.NOAA.GOV,chain-1,2003-06-17T14:57:00-07:00</references>`)
        .replace('<instruction>TAKE COVER IN A SUBSTANTIAL SHELTER UNTIL THE STORM PASSES.</instruction>', `<instruction>${identifier}</instruction>`);
    // Two Updates of the same event (the same category): each is a message of its own.
    for (const identifier of ['chain-2', 'chain-3']) {
      const res = await postCap(server.base, key, org.orgId, next(identifier, 'Update', ''));
      assert.equal(res.status, 200, JSON.stringify(res.body));
      await assertRelayed(next(identifier, 'Update', ''), await capOf(id), identifier);
    }
    // A retry of the last Update changes nothing.
    const before = await capOf(id);
    assert.equal((await postCap(server.base, key, org.orgId, next('chain-3', 'Update', ''))).status, 200);
    assert.equal(await capOf(id), before);

    const cancel = next('chain-4', 'Cancel', '<note>The storm has passed.</note>');
    const resolved = await postCap(server.base, key, org.orgId, cancel);
    assert.equal(resolved.status, 201, JSON.stringify(resolved.body));
    const exported = await capOf(id);
    await assertRelayed(cancel, exported, 'the Cancel');
    const groups = (await outsideReading(exported)).references as string;
    for (const n of [1, 2, 3, 4]) assert.match(groups, new RegExp(`KSTO@NWS\\.NOAA\\.GOV,chain-${n},`));
    const kept = await server.ctx.db.db
      .selectFrom('cap_originals')
      .select('identifier')
      .where('org_id', '=', org.orgId)
      .where('identifier', 'like', 'chain-%')
      .execute();
    assert.deepEqual(
      kept.map((r) => r.identifier),
      ['chain-4'],
    );
  });

  it('after a resolve through the API, the relay is the service’s Cancel with the original audience and info blocks', async () => {
    const a4 = example('a4-amber-alert-multilingual').replaceAll('KAR0-0306112239-SW', 'resolved-by-api');
    const declared = await postCap(server.base, key, org.orgId, a4);
    assert.equal(declared.status, 201);
    const id = declared.body.emergencyId as string;
    assert.equal((await api.post(`/orgs/${org.orgId}/emergencies/${id}/resolutions`, { resolutionNote: 'Child found safe' })).status, 201);
    const exported = await capOf(id);
    assertValidCap(exported, 'an ingested alert resolved through the API');
    const [sent, relayed] = [await outsideReading(a4), await outsideReading(exported)];
    assert.equal(relayed.msgType, CAP_1_2.Alert_msgType.cancel);
    assert.equal(relayed.note, 'Child found safe');
    assert.deepEqual([relayed.scope, relayed.source, relayed.info_list], [sent.scope, sent.source, sent.info_list]);
    assert.match(relayed.references as string, /KARO@CLETS\.DOJ\.CA\.GOV,resolved-by-api,2003-06-11T22:39:00-07:00/);
  });

  it('the Atom feed carries the relayed alerts and stays valid', async () => {
    const res = await getXml(`${server.base}/orgs/${org.orgId}/cap/feed`, key);
    assert.equal(res.status, 200);
    const feed = atomView(res.text);
    assert.ok(feed.entries.length >= 4);
    for (const entry of feed.entries) {
      assertValidCap(entry.alertXml, `feed entry ${entry.id}`);
      const linked = await getXml(new URL(entry.capLink, `${server.base}/orgs/${org.orgId}/cap/feed`).href, key);
      assert.deepEqual(await outsideReading(entry.alertXml), await outsideReading(linked.text));
    }
    const a1 = feed.entries
      .map((e) => elementTree(e.alertXml))
      .find((t) => t.some((el) => el.name === `${CAP_NS} info` && JSON.stringify(el).includes('HSAS')));
    assert.ok(a1, 'the A.1 entry relays its parameter');
  });
});
