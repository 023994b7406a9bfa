import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createClient, type PublicClient } from '../../clients/typescript/src/index.js';
import { createOrgTree, mintKey, type OrgFixture, startTestServer, type TestServer } from '../helpers/server.js';

/** A 1×1 PNG. */
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');

/** The client's default call reads an answer that is not JSON as its document declares it, not with JSON.parse. */
describe('TypeScript client: answers that are not JSON', () => {
  let dir: string;
  let server: TestServer;
  let org: OrgFixture;
  let api: PublicClient;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'client-bytes-'));
    server = await startTestServer({ ATTACHMENT_STORE: `file:${dir}` });
    org = await createOrgTree(server.ctx);
    api = createClient({ baseUrl: server.url, apiKey: (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId })).key });
  });
  after(async () => {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('returns attachment content as a Blob of the stored bytes, and a CAP alert as text', async () => {
    const path = { org_id: org.orgId };
    const declared = await api.POST('/orgs/{org_id}/emergencies', { params: { path }, body: { description: 'door photo' } });
    const emergency = { ...path, emergency_id: declared.data!.emergencyId };
    const posted = await api.POST('/orgs/{org_id}/emergencies/{emergency_id}/messages', {
      params: { path: emergency },
      body: { attachments: [{ src: PNG.toString('base64') }] },
    });
    const attachmentId = posted.data!.attachments[0]!.attachmentId;

    const content = await api.GET('/orgs/{org_id}/emergencies/{emergency_id}/attachments/{attachment_id}/content', {
      params: { path: { ...emergency, attachment_id: attachmentId } },
    });
    assert.equal(content.response.status, 200);
    assert.ok(content.data instanceof Blob, `data is ${typeof content.data}`);
    const blob: Blob = content.data;
    assert.equal(blob.type, 'image/png');
    assert.deepEqual(Buffer.from(await blob.arrayBuffer()), PNG);

    const cap = await api.GET('/orgs/{org_id}/emergencies/{emergency_id}/cap', { params: { path: emergency } });
    assert.equal(typeof cap.data, 'string');
    assert.match(cap.data!, /<alert xmlns="urn:oasis:names:tc:emergency:cap:1\.2">/);
  });

  it('returns the event stream as the body stream, without waiting for its end', async () => {
    const controller = new AbortController();
    const stream = await api.GET('/orgs/{org_id}/stream', { params: { path: { org_id: org.orgId } }, signal: controller.signal });
    assert.equal(stream.response.status, 200);
    // openapi-fetch's answer types map object types member by member, which leaves a stream's methods untyped.
    const reader = (stream.data as unknown as ReadableStream<Uint8Array>).getReader();
    const first = await reader.read();
    assert.match(new TextDecoder().decode(first.value), /^: after \d+/);
    controller.abort();
    await reader.cancel().catch(() => undefined);
  });
});
