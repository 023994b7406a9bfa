import { Kysely } from 'kysely';
import type pg from 'pg';
import type { DatabaseTimeouts, DbHandle, FailureReport } from '../handle.js';
import { IdempotencyKeyTaken, type IdempotencyScope, idempotencyRow, isIdempotencyKeyConflict, openScope } from '../idempotency.js';
import type { Database, IdempotencyKeyTable } from '../types.js';
import { type CommittedEvent, type UnitOfWork, type Writes, WriteSet } from '../unit-of-work.js';
import { openPgPool } from './pool.js';
import { PgInsertBatcher } from './insert-batcher.js';
import { PgCommitNotifier } from './notifier.js';
import { plainInsertsOrg, writePlainInserts } from './plain-inserts.js';
import { OwnSchemaPostgresDialect } from './schema-introspector.js';
import { lockEmergency, sendWrites } from './writes.js';

/** Stores a unit's answer in its transaction; a key another request committed first fails the unit whole. */
async function storeAnswer(trx: Kysely<Database>, answer: IdempotencyKeyTable): Promise<void> {
  try {
    await trx.insertInto('idempotency_keys').values(answer).execute();
  } catch (err) {
    if (isIdempotencyKeyConflict(err)) throw new IdempotencyKeyTaken(answer.api_key_id, answer.idem_key);
    throw err;
  }
}

/** Runs a one-statement write that also stores the Idempotency-Key's answer; a key another request committed first fails it whole. */
async function withStoredAnswer<T>(
  idempotency: IdempotencyScope | undefined,
  result: unknown,
  write: (answer: IdempotencyKeyTable | null) => Promise<T>,
): Promise<T> {
  const scope = openScope(idempotency);
  const answer = idempotencyRow(scope, result);
  try {
    const written = await write(answer);
    if (scope && answer) scope.stored = true;
    return written;
  } catch (err) {
    if (scope && isIdempotencyKeyConflict(err)) throw new IdempotencyKeyTaken(scope.apiKeyId, scope.key);
    throw err;
  }
}

/** Records the writes of one set into another unit's (the same rows, in the same order). */
function replay(from: WriteSet, into: Writes): void {
  for (const row of from.emergencyInserts) into.emergencies.insert(row);
  for (const { orgId, id, change } of from.emergencyChanges) into.emergencies.update(orgId, id, change);
  for (const row of from.resolutionRows) into.resolutions.insert(row);
  for (const row of from.messageRows) {
    into.messages.insert(
      row,
      from.attachmentRows.filter((a) => a.message_id === row.id),
      from.dedupeRows.find((d) => d.message_id === row.id) ?? null,
    );
  }
  for (const row of from.auditRows) into.audit.record(row);
  for (const row of from.deadlineRows) into.deadlines.insert(row);
  for (const event of from.eventRows) into.events.append(event);
}

/** PostgreSQL: a pool of at most `poolSize` connections; several instances may share the database. */
export function openPostgres(url: string, timeouts: DatabaseTimeouts, options: { poolSize?: number } = {}): DbHandle {
  const parsed = new URL(url);
  // `?schema=NAME` selects a PostgreSQL schema (created on first use); tests use it to isolate runs.
  const schema = parsed.searchParams.get('schema');
  parsed.searchParams.delete('schema');
  // The server ends overlong statements and idle transactions (a dead client must not hold its locks); the pool's
  // read timeout covers a server that stops answering. A timeout of 0 leaves statements unbounded, for migrations.
  const bounded = timeouts.statementTimeoutMs > 0;
  const settings = bounded
    ? [`-c statement_timeout=${timeouts.statementTimeoutMs}`, `-c idle_in_transaction_session_timeout=${Math.max(10_000, 4 * timeouts.statementTimeoutMs)}`]
    : [];
  if (schema) {
    if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) throw new Error('DATABASE_URL schema must be a lowercase identifier');
    settings.push(`-c search_path=${schema}`);
  }
  const clientConfig: pg.ClientConfig = {
    connectionString: parsed.toString(),
    options: settings.join(' '),
    connectionTimeoutMillis: timeouts.connectTimeoutMs,
    keepAlive: true,
  };
  let report: FailureReport = () => undefined;
  const pool = openPgPool(
    clientConfig,
    (err) => report(err, 'an idle PostgreSQL connection ended; the pool opens a new one'),
    bounded ? timeouts.statementTimeoutMs + 1000 : 0,
    options.poolSize,
  );
  const db = new Kysely<Database>({ dialect: new OwnSchemaPostgresDialect({ pool }) });
  const describe = `postgres://${parsed.host}${parsed.pathname}${schema ? `?schema=${schema}` : ''}`;
  let committedListener: (event: CommittedEvent) => void = () => undefined;
  // Other instances hear of a commit by a NOTIFY sent after it, off the caller's path (notifier.ts).
  const notifier = new PgCommitNotifier(pool, (err, consequence) => report(err, consequence), schema ?? undefined);
  /** Once committed: this process's readers at once, then (queued, never awaited) the other instances. */
  const announce = (events: CommittedEvent[]) => {
    for (const event of events) committedListener(event);
    notifier.notify(events);
  };
  const target = { db, dialect: 'postgres' as const, pgPool: pool };
  const batcher = new PgInsertBatcher(target);
  const unitOfWork = async <T>(fn: (uow: UnitOfWork) => Promise<T>, idempotency?: IdempotencyScope): Promise<T> => {
    const scope = openScope(idempotency);
    const callbacks: (() => void)[] = [];
    let committed: CommittedEvent[] = [];
    const result = await db.transaction().execute(async (trx) => {
      const writes = new WriteSet();
      const value = await fn(
        writes.unitOfWork({
          db: trx,
          lockForChange: (orgId, id) => lockEmergency(trx, orgId, id),
          afterCommit: (cb) => callbacks.push(cb),
          skipLocked: (query) => query.forUpdate().skipLocked() as typeof query,
        }),
      );
      committed = await sendWrites(trx, writes);
      const answer = idempotencyRow(scope, value);
      if (answer) await storeAnswer(trx, answer);
      return value;
    });
    if (scope && idempotencyRow(scope, result)) scope.stored = true;
    announce(committed);
    for (const cb of callbacks) cb();
    return result;
  };
  return {
    db,
    dialect: 'postgres',
    describe,
    pgConfig: clientConfig,
    pgPool: pool,
    pgSchema: schema ?? undefined,
    pgNotifier: notifier,
    unitOfWork,
    unbounded: () => openPostgres(url, { ...timeouts, statementTimeoutMs: 0 }, options),
    async commit(record, result, idempotency) {
      const writes = new WriteSet();
      record(writes);
      const orgs = writes.eventsByOrg();
      // A declare (new rows and events of one org) shares one statement with that org's concurrent ones.
      const [orgId] = orgs.keys();
      if (writes.insertsOnly && orgs.size === 1 && writes.messageRows.length === 0 && writes.rowsAllOf(orgId!)) {
        const offset = await withStoredAnswer(idempotency, result, (answer) => batcher.write(orgId!, writes, answer));
        announce([{ orgId: orgId!, offset, written: writes.eventRows }]);
        return;
      }
      // New rows of one org without events (a message post): one statement, no BEGIN and COMMIT of its own.
      const plainOrg = plainInsertsOrg(writes);
      if (plainOrg) {
        await withStoredAnswer(idempotency, result, (answer) => writePlainInserts(target, plainOrg, writes, answer));
        return;
      }
      await unitOfWork(async (uow) => {
        replay(writes, uow);
        return result;
      }, idempotency);
    },
    onCommitted(listener) {
      committedListener = listener;
    },
    reportFailures(to) {
      report = to;
    },
    async close() {
      // Wake-ups of the last commits go out before the pool closes.
      await notifier.close();
      await db.destroy();
    },
  };
}
