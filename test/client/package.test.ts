import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFile, lstat, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { operatorCaller } from '../../src/domain/access/principal.js';
import { createAdminKey } from '../../src/domain/admin-keys/service.js';
import { startDeliveryServer } from '../delivery/helpers.js';
import { createOrgTree, mintKey, type TestServer } from '../helpers/server.js';

const ROOT = resolve(import.meta.dirname, '../..');
const CLIENT_DIR = join(ROOT, 'clients/typescript');
const CONSUMER_SOURCE = join(import.meta.dirname, 'package-consumer/consumer.ts');

/**
 * The environment of a child npm or node: without the npm_* variables that `npm test` sets, which a
 * child npm would read as its own configuration (e.g. the repository as its prefix).
 */
function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) if (!/^npm_/i.test(name) && name !== 'INIT_CWD') env[name] = value;
  return { ...env, ...extra };
}

async function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = childEnv()): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    execFile(command, args, { cwd, env, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${command} ${args.join(' ')} failed in ${cwd}: ${error.message}\n${stdout}\n${stderr}`));
      else resolvePromise(stdout);
    });
  });
}

/** The version the root package-lock.json pins, so the consumer uses the same compiler and Node types. */
async function lockedVersion(name: string): Promise<string> {
  const lock = JSON.parse(await readFile(join(ROOT, 'package-lock.json'), 'utf8'));
  const version = lock.packages[`node_modules/${name}`]?.version;
  assert.ok(version, `${name} is not in package-lock.json`);
  return version;
}

/** A strict consumer project on Node's types alone (no DOM library): NodeNext modules, declarations checked too. */
const CONSUMER_TSCONFIG = {
  compilerOptions: {
    target: 'ES2022',
    lib: ['ES2022'],
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    strict: true,
    skipLibCheck: false,
    noEmitOnError: true,
    types: ['node'],
    rootDir: 'src',
    outDir: 'out',
  },
  include: ['src'],
};

describe('TypeScript client as an npm package', () => {
  let work: string;
  let server: TestServer;
  before(async () => {
    work = await mkdtemp(join(tmpdir(), 'emergency-api-client-'));
    server = await startDeliveryServer();
  });
  after(async () => {
    await server?.close();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('builds alone: its own npm ci (a few packages, not the whole service install) and npm run build, outside the repository', async () => {
    const alone = join(work, 'alone');
    await mkdir(alone);
    for (const file of ['package.json', 'package-lock.json', 'tsconfig.json', 'README.md']) await copyFile(join(CLIENT_DIR, file), join(alone, file));
    await run('cp', ['-r', join(CLIENT_DIR, 'src'), join(alone, 'src')], alone);
    await run('npm', ['ci', '--prefer-offline', '--no-audit', '--no-fund'], alone);
    await run('npm', ['run', 'build'], alone);
    const built = await readdir(join(alone, 'dist'));
    for (const file of ['index.js', 'index.d.ts', 'follow-events.js', 'device-stream.js']) assert.ok(built.includes(file), `dist/${file} is built`);
    const installed = await readdir(join(alone, 'node_modules'));
    assert.ok(!installed.includes('fastify') && !installed.includes('better-sqlite3'), "none of the service's dependencies");
  });

  it('packs, installs into an empty project, type-checks a strict consumer and runs it against a live server', async () => {
    // npm pack builds the package (its prepack script) and writes the tarball.
    const packDir = join(work, 'pack');
    await mkdir(packDir);
    await run('npm', ['pack', '--pack-destination', packDir], CLIENT_DIR);
    const [tarball, ...others] = await readdir(packDir);
    assert.equal(tarball, 'emergency-api-client-1.0.0.tgz');
    assert.deepEqual(others, []);
    const contents = (await run('tar', ['-tzf', join(packDir, tarball)], work)).split('\n').filter(Boolean);
    for (const file of ['package/package.json', 'package/README.md', 'package/dist/index.js', 'package/dist/index.d.ts', 'package/dist/device-stream.js']) {
      assert.ok(contents.includes(file), `${file} is in the tarball: ${contents.join(', ')}`);
    }
    assert.deepEqual(
      contents.filter((f) => !f.startsWith('package/dist/') && !['package/package.json', 'package/README.md'].includes(f)),
      [],
      'nothing but the build, README.md and package.json',
    );

    // An empty project elsewhere, with the tarball, the compiler and Node's types (nothing from the repository).
    const project = join(work, 'consumer');
    await mkdir(join(project, 'src'), { recursive: true });
    await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
    await writeFile(join(project, 'tsconfig.json'), JSON.stringify(CONSUMER_TSCONFIG, null, 2));
    const source = await readFile(CONSUMER_SOURCE, 'utf8');
    const specifiers = [...source.matchAll(/\bfrom '([^']+)'/g)].map((m) => m[1]!);
    assert.deepEqual([...new Set(specifiers.filter((s) => !s.startsWith('node:')))], ['@emergency-api/client'], 'the consumer imports only the package');
    await copyFile(CONSUMER_SOURCE, join(project, 'src/consumer.ts'));
    const [typescript, nodeTypes] = [await lockedVersion('typescript'), await lockedVersion('@types/node')];
    await run(
      'npm',
      ['install', join(packDir, tarball), `typescript@${typescript}`, `@types/node@${nodeTypes}`, '--prefer-offline', '--no-audit', '--no-fund'],
      project,
    );
    const installed = join(project, 'node_modules/@emergency-api/client');
    assert.ok((await lstat(installed)).isDirectory(), 'installed as a copy, not a link into the repository');
    const manifest = JSON.parse(await readFile(join(project, 'package.json'), 'utf8'));
    assert.match(manifest.dependencies['@emergency-api/client'], /^file:.*emergency-api-client-1\.0\.0\.tgz$/);

    // Type-checked by the project's own compiler; a type error fails here with tsc's message.
    await run(process.execPath, [join(project, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], project);

    const org = await createOrgTree(server.ctx);
    const apiKey = (await mintKey(server.ctx, { subjectType: 'org', subjectId: org.orgId })).key;
    const adminKey = (await createAdminKey(server.ctx, operatorCaller(), { name: 'package test', subject: { type: 'instance' } })).key;
    const stdout = await run(
      process.execPath,
      ['out/consumer.js'],
      project,
      childEnv({ EMERGENCY_API_URL: server.url, EMERGENCY_API_KEY: apiKey, EMERGENCY_ADMIN_KEY: adminKey, ORG_ID: org.orgId }),
    );
    const result = JSON.parse(stdout.trim().split('\n').at(-1)!);

    const emergencyId = result.declared.emergencyId;
    assert.deepEqual(result.declared, { emergencyId, status: 'declared', category: 'Fire' });
    assert.deepEqual(result.readBack, { emergencyId, status: 'declared', description: 'Smoke on floor 2' });

    assert.equal(result.validation.status, 422);
    assert.equal(result.validation.data, null);
    assert.equal(result.validation.code, 'validation_error');
    assert.equal(result.validation.loc[0], 'body');
    assert.equal(result.validation.type, 'category_not_found');

    assert.equal(result.webhook.eventType, 'emergency.declared');
    assert.equal(result.webhook.emergencyId, emergencyId);
    assert.equal(result.webhook.description, 'Smoke on floor 2');
    assert.equal(result.webhook.eventId, result.webhook.webhookIdHeader);
    assert.equal(result.webhook.tamperedRejected, true);

    const { device } = result;
    assert.deepEqual(device.first, { offset: 1, eventType: 'emergency.declared', emergencyId });
    assert.deepEqual(device.firstEnd, { reason: 'closed' });
    assert.equal(device.lastOffset, 1);
    assert.notEqual(device.missedEmergencyId, emergencyId);
    assert.deepEqual(device.resumed, { offset: 2, eventType: 'emergency.declared', emergencyId: device.missedEmergencyId });
    assert.equal(device.resumedCount, 1);
    assert.deepEqual(device.resumedEnd, { reason: 'closed' });

    // The server holds what the consumer reported.
    const res = await fetch(`${server.base}/orgs/${org.orgId}/emergencies/${device.missedEmergencyId}`, { headers: { authorization: `Bearer ${apiKey}` } });
    assert.equal(res.status, 200);
    assert.equal((await res.json()).description, 'Declared while the station was offline');
  });
});
