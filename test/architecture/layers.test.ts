import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { SRC, sourceFiles } from './source-files.js';

/** The layering docs/architecture.md describes, checked on the source itself. */

/** Every relative import of a file, as a path under src/ (e.g. `db/connect.ts`). */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const match of text.matchAll(/^\s*(?:import|export)\s[^'"]*?from\s+'(\.[^']+)'/gm)) {
    const target = join(file, '..', match[1]!.replace(/\.js$/, '.ts'));
    out.push(relative(SRC, target));
  }
  return out;
}

const layerOf = (path: string) => path.split('/')[0]!;
const SURFACES = ['http', 'mcp', 'devices', 'delivery', 'cli'];
/** The commands that start a process's surfaces: they compose, so they may import one. */
const COMPOSERS = ['cli/serve.ts', 'cli/worker.ts'];

/** Where the event log's storage may be named: the log itself, and the storage adapters that implement it. */
const LOG_STORAGE = ['log/', 'db/sqlite/', 'db/postgres/', 'db/migrations/', 'db/types.ts', 'db/insert-columns.ts'];

/**
 * How a file reaches the event log's storage, if it does: a statement on the events table (a Kysely call or SQL text), or
 * a statement on the orgs table that names its stream's head (event_offset, pruned_offset) or reads the whole row. Read
 * statement by statement: ack_deadlines has an event_offset of its own (the watched event's), which is no head.
 */
function logStorageReads(text: string): string[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const found = new Set<string>();
  const kyselyOnEvents =
    /\b(?:selectFrom|insertInto|replaceInto|updateTable|deleteFrom|mergeInto|innerJoin|leftJoin|rightJoin|fullJoin|crossJoin|innerJoinLateral|leftJoinLateral)\(\s*['"`]events(?:\s+as\s+\w+)?['"`]/;
  const sqlOnEvents = /\bsql(?:<[^>]*>)?`[^`]*\b(?:from|join|into|update)\s+events\b/i;
  if (kyselyOnEvents.test(code) || sqlOnEvents.test(code)) found.add('names the events table');
  for (const statement of code.split(';')) {
    const onOrgs = /['"`]orgs(?:\s+as\s+\w+)?['"`]|\bOrgTable\b|\bsql(?:<[^>]*>)?`[^`]*\borgs\b/.test(statement);
    if (onOrgs && /\b(?:event_offset|pruned_offset)\b/.test(statement)) found.add("names an org's head offset");
    else if (onOrgs && /\.selectAll\(\s*\)/.test(statement)) found.add("reads an org's whole row, head offset included");
  }
  return [...found];
}

describe('architecture', () => {
  const files = sourceFiles();

  it('nothing under src/domain branches on the dialect, holds SQL text, uses the speed machinery or imports a driver', () => {
    const offences: string[] = [];
    for (const { path, text } of files.filter((f) => f.path.startsWith('domain/'))) {
      const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
      const checks: [RegExp, string][] = [
        [/\bdialect\b/, 'names the dialect'],
        [/\bpreparedQuery\b|db\/prepared\.js/, 'uses prepared statements'],
        [/groupCommit|sqlite\/group-commit|insert-batcher|sqliteDirect|pgPool|eventOffsets/, 'uses group commit or batching machinery'],
        [/from 'pg'|from 'better-sqlite3'|postgres\/driver/, 'imports a database driver'],
        [/\bsql(<[^>]*>)?`|sql\.raw|sql\.lit/, 'holds raw SQL'],
        [
          /['"`]\s*(select\s+[\w*,\s.]+\sfrom\s|insert\s+into\s|update\s+\w+\s+set\s|delete\s+from\s|with\s+\w+\s+as\s*\()/i,
          'holds a SQL statement in a string',
        ],
        [/from '\.\.\/\.\.\/db\/(sqlite|postgres)\//, 'reaches into a storage adapter'],
      ];
      for (const [pattern, what] of checks) if (pattern.test(code)) offences.push(`${path} ${what}`);
    }
    assert.deepEqual(offences, []);
  });

  it('surfaces (REST, tool server, device gateway, webhook dispatcher, CLI) never import one another', () => {
    const offences: string[] = [];
    for (const { file, path } of files) {
      const from = layerOf(path);
      if (!SURFACES.includes(from) || COMPOSERS.includes(path)) continue;
      for (const target of importsOf(file)) {
        const to = layerOf(target);
        if (SURFACES.includes(to) && to !== from) offences.push(`${path} -> ${target}`);
      }
    }
    assert.deepEqual(offences, []);
  });

  it('the domain imports no surface, no worker and no storage adapter; storage imports no domain', () => {
    const offences: string[] = [];
    for (const { file, path } of files) {
      const from = layerOf(path);
      for (const target of importsOf(file)) {
        const to = layerOf(target);
        if (from === 'domain' && [...SURFACES, 'edge', 'app.ts', 'server.ts'].includes(to)) offences.push(`${path} -> ${target}`);
        if (from === 'domain' && /^db\/(sqlite|postgres)\//.test(target)) offences.push(`${path} -> ${target}`);
        if (from === 'db' && ['domain', 'edge', 'delivery', 'log', ...SURFACES].includes(to)) offences.push(`${path} -> ${target}`);
        // The event log sits on the storage: it may use db/, the trace channels and the domain's pure helpers only.
        if (from === 'log' && !(['db', 'log', 'observability'].includes(to) || target.startsWith('domain/shared/'))) {
          offences.push(`${path} -> ${target}`);
        }
        if (from === 'edge' && [...SURFACES, 'delivery'].includes(to)) offences.push(`${path} -> ${target}`);
      }
    }
    assert.deepEqual(offences, []);
  });

  it('the webhook queue is read and written in domain/webhooks/queue.ts alone, which imports only db/ and the event log', () => {
    const QUEUE = 'domain/webhooks/queue.ts';
    const queueTable = /['"](webhook_deliveries|webhook_attempts|delivery_workers)['"]/;
    const offences: string[] = [];
    for (const { file, path, text } of files) {
      if (path === QUEUE) {
        for (const target of importsOf(file)) if (!['db', 'log'].includes(layerOf(target))) offences.push(`${path} -> ${target}`);
        continue;
      }
      if (path.startsWith('db/')) continue;
      if (queueTable.test(text)) offences.push(`${path} names a queue table`);
      // The fan-out's cursors over the event stream are the log's (log/cursors.ts).
      if (/['"]webhook_cursors\b/.test(text) && path !== 'log/cursors.ts') offences.push(`${path} names the fan-out cursors`);
      if (path.startsWith('delivery/') && /\.(selectFrom|insertInto|updateTable|deleteFrom)\(/.test(text)) offences.push(`${path} holds a statement`);
    }
    assert.deepEqual(offences, []);
  });

  it("the events table and an org's head offset are read only in src/log/ and the storage adapters", () => {
    // The check must see what it judges: the log's own reads, and not the watched event's offset of a deadline.
    const text = (path: string) => files.find((f) => f.path === path)!.text;
    assert.deepEqual(logStorageReads(text('log/reads.ts')).sort(), ["names an org's head offset", 'names the events table']);
    assert.deepEqual(logStorageReads(text('domain/deadlines/repo.ts')), []);
    const offences = files
      .filter(({ path }) => !LOG_STORAGE.some((place) => path === place || (place.endsWith('/') && path.startsWith(place))))
      .flatMap(({ path, text }) => logStorageReads(text).map((what) => `${path} ${what}`));
    assert.deepEqual(offences, []);
  });

  it("no file reads a library object's underscore-prefixed (private) member", () => {
    const offences: string[] = [];
    for (const { path, text } of files) {
      const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
      for (const match of code.matchAll(/[\w)\]]\??\.(_[A-Za-z]\w*)|\[['"](_[A-Za-z]\w*)['"]\]|\b(_[A-Za-z]\w*)\??:\s*\{/g)) {
        offences.push(`${path}: ${match[1] ?? match[2] ?? match[3]}`);
      }
    }
    assert.deepEqual(offences, []);
  });

  it('migrations are frozen: they import nothing of the service', () => {
    const offences = files
      .filter((f) => f.path.startsWith('db/migrations/'))
      .flatMap(({ file, path }) =>
        importsOf(file)
          .filter((t) => !t.startsWith('db/migrations/'))
          .map((t) => `${path} -> ${t}`),
      );
    assert.deepEqual(offences, []);
  });

  it('the checks above see the imports they judge', () => {
    // A guard for the guards: the scanner must find known imports, or every check above passes vacuously.
    const context = files.find((f) => f.path === 'create-context.ts')!;
    assert.ok(importsOf(context.file).includes('db/connect.ts'));
    assert.ok(files.filter((f) => f.path.startsWith('domain/')).length > 30);
  });
});
