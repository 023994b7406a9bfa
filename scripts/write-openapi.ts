// Writes the service's two OpenAPI documents (public.json, admin.json) into a folder, built in-process
// from the route table (no server, no database on disk).
// Usage: node --import tsx scripts/write-openapi.ts [DIR]   (default ./openapi)
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildApp, createContext } from '../src/app.js';
import { loadConfig } from '../src/config.js';

const dir = process.argv[2] ?? 'openapi';
const ctx = createContext(loadConfig({ DATABASE_URL: 'sqlite::memory:', LOG_LEVEL: 'silent' }));
const app = await buildApp(ctx);
await app.ready();
mkdirSync(dir, { recursive: true });
for (const api of ['public', 'admin']) {
  const res = await app.inject({ url: `/api/${api}/v1/openapi.json` });
  writeFileSync(join(dir, `${api}.json`), `${JSON.stringify(JSON.parse(res.body), null, 2)}\n`);
}
await app.close();
await ctx.db.close();
console.log(`wrote ${join(dir, 'public.json')} and ${join(dir, 'admin.json')}`);
