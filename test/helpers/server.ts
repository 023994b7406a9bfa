import { type Config, loadConfig } from '../../src/config.js';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createCategory } from '../../src/domain/categories/service.js';
import { createApiKey, type KeySpec } from '../../src/domain/keys/service.js';
import { createEnterprise, createOrg, createPartner } from '../../src/domain/orgs/service.js';
import { createUser } from '../../src/domain/users/service.js';
import type { AppContext } from '../../src/context.js';
import { type RunningServer, type ServerOptions, startServer } from '../../src/server.js';
import { freshDatabaseUrl } from './db.js';
import { client } from './http.js';

export interface TestServer extends RunningServer {
  /** REST base, ending in /api/public/v1 */
  base: string;
  config: Config;
  databaseUrl: string;
  close(): Promise<void>;
}

/** Configuration shared by every test server: loopback, quiet, private webhook targets allowed. */
export const TEST_ENV: Record<string, string> = {
  PORT: '0',
  HOST: '127.0.0.1',
  LOG_LEVEL: 'silent',
  WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  // Suites fire requests faster than a client would; the rate-limit suite sets its own limit.
  RATE_LIMIT_PER_KEY: '100000',
  // /metrics is served to this token only (see scrapeMetrics); METRICS_TOKEN: '' unsets it.
  METRICS_TOKEN: 'test-metrics-token-0123456789',
};

/** The Prometheus text of a test server's GET /metrics (on the API port, with the test token). */
export async function scrapeMetrics(url: string): Promise<string> {
  const res = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${TEST_ENV.METRICS_TOKEN}` } });
  if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}`);
  return res.text();
}

/** A real server on a random loopback port, on its own fresh database. */
export async function startTestServer(env: Record<string, string> = {}, options: ServerOptions = {}): Promise<TestServer> {
  const database = freshDatabaseUrl();
  const config = loadConfig({ ...TEST_ENV, DATABASE_URL: database.url, ...env });
  const server = await startServer(config, undefined, options);
  return {
    ...server,
    base: `${server.url}/api/public/v1`,
    config,
    databaseUrl: database.url,
    async close() {
      await server.stop();
      await database.drop();
    },
  };
}

export interface OrgFixture {
  partnerId: string;
  enterpriseId: string;
  orgId: string;
  categories: Record<string, string>;
}

let counter = 0;

/** A partner → enterprise → org tree with a couple of categories; `extraOrgs` adds siblings in the same enterprise. */
export async function createOrgTree(ctx: AppContext, options: { partnerId?: string; enterpriseId?: string } = {}): Promise<OrgFixture> {
  const n = ++counter;
  const partnerId = options.partnerId ?? (await createPartner(ctx, operatorCaller(), { name: `Partner ${n}` })).partnerId;
  const enterpriseId = options.enterpriseId ?? (await createEnterprise(ctx, operatorCaller(), partnerId, { name: `Enterprise ${n}` })).enterpriseId;
  const orgId = (await createOrg(ctx, operatorCaller(), enterpriseId, { name: `Org ${n}` })).orgId;
  const fire = await createCategory(ctx, operatorCaller(), orgId, { name: 'Fire', color: '#D32F2F', severity: 5, responseLevel: 'evacuate' });
  const medical = await createCategory(ctx, operatorCaller(), orgId, { name: 'Medical', color: '#1976d2', severity: 3, responseLevel: 'medical' });
  return { partnerId, enterpriseId, orgId, categories: { Fire: fire.categoryId, Medical: medical.categoryId } };
}

/** A real server on a fresh database with one org tree and an HTTP client holding a read/write key of the org. */
export async function startOrgServer(): Promise<{ server: TestServer; org: OrgFixture; api: ReturnType<typeof client> }> {
  const server = await startTestServer();
  const org = await createOrgTree(server.ctx);
  return { server, org, api: await orgApi(server, org.orgId) };
}

/** An HTTP client holding a read/write key of the org. */
export async function orgApi(server: TestServer, orgId: string): Promise<ReturnType<typeof client>> {
  return client(server.base, (await mintKey(server.ctx, { subjectType: 'org', subjectId: orgId })).key);
}

export async function mintKey(ctx: AppContext, spec: Partial<KeySpec> & Pick<KeySpec, 'subjectType' | 'subjectId'>): Promise<{ id: string; key: string }> {
  const { id, key } = await createApiKey(ctx, operatorCaller(), { name: 'test key', permissions: ['read', 'write'], ...spec });
  return { id, key };
}

export async function addUser(ctx: AppContext, orgId: string, firstName: string, lastName: string) {
  return createUser(ctx, operatorCaller(), orgId, { firstName, lastName, email: `${firstName}.${lastName}@example.test`.toLowerCase() });
}
