import type pg from 'pg';
import type { FailureReport } from '../../db/connect.js';
import { pgDriver } from '../../db/pg-module.js';
import type { AppContext } from '../../context.js';
import { type CommittedEvent, PG_EVENT_CHANNEL } from './bus.js';

const RECONNECT_DELAY_MS = 1_000;

/**
 * On PostgreSQL, forwards the NOTIFY sent by every committing writer (any instance) to this
 * process's EventBus. It holds one dedicated connection and reconnects after a failure; readers
 * also poll, so a notification lost while reconnecting only delays them.
 */
export function startPgEventListener(ctx: AppContext, report: FailureReport = () => undefined): () => Promise<void> {
  if (ctx.db.dialect !== 'postgres' || !ctx.db.pgConfig) return async () => undefined;
  let client: pg.Client | null = null;
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;

  const connect = async () => {
    if (stopped) return;
    const next = new (pgDriver().Client)(ctx.db.pgConfig);
    next.on('notification', (msg) => {
      if (msg.channel !== PG_EVENT_CHANNEL || !msg.payload) return;
      try {
        ctx.bus.committed(JSON.parse(msg.payload) as CommittedEvent);
      } catch {
        /* a malformed payload is not ours */
      }
    });
    next.on('error', (err) => {
      if (stopped) return;
      report(err, 'the PostgreSQL LISTEN connection failed; reconnecting (other instances\' events reach this one by polling meanwhile)');
      scheduleReconnect();
    });
    try {
      await next.connect();
      await next.query(`LISTEN ${PG_EVENT_CHANNEL}`);
      if (stopped) {
        await next.end().catch(() => undefined);
        return;
      }
      client = next;
    } catch (err) {
      await next.end().catch(() => undefined);
      if (stopped) return;
      report(err as Error, 'opening the PostgreSQL LISTEN connection failed; trying again in 1 s');
      scheduleReconnect();
    }
  };

  const scheduleReconnect = () => {
    if (stopped || timer) return;
    const old = client;
    client = null;
    old?.end().catch(() => undefined);
    timer = setTimeout(() => {
      timer = null;
      void connect();
    }, RECONNECT_DELAY_MS);
  };

  void connect();
  return async () => {
    stopped = true;
    if (timer) clearTimeout(timer);
    await client?.end().catch(() => undefined);
  };
}
