import type pg from 'pg';
import type { DbHandle, FailureReport } from '../handle.js';
import type { CommittedEvent } from '../unit-of-work.js';
import { pgDriver } from './driver.js';
import { PG_EVENT_CHANNEL } from './events.js';

const RECONNECT_DELAY_MS = 1_000;

/**
 * Forwards other instances' post-commit NOTIFYs to `onEvent`, skipping this instance's own (its commits woke its
 * readers already). Reconnects after a failure; readers also poll, so a lost notification only delays them.
 */
export function startPgEventListener(handle: DbHandle, onEvent: (event: CommittedEvent) => void, report: FailureReport = () => undefined): () => Promise<void> {
  const config = handle.pgConfig;
  if (handle.dialect !== 'postgres' || !config) return async () => undefined;
  const ownSenderId = handle.pgNotifier?.senderId;
  // Named so that other instances' notifiers see that this one listens (notifier.ts).
  const name = handle.pgNotifier?.listenerApplicationName;
  const clientConfig = name ? { ...config, application_name: name } : config;
  let client: pg.Client | null = null;
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;

  const connect = async () => {
    if (stopped) return;
    const next = new (pgDriver().Client)(clientConfig);
    next.on('notification', (msg) => {
      if (msg.channel !== PG_EVENT_CHANNEL || !msg.payload) return;
      try {
        const { orgId, offset, from } = JSON.parse(msg.payload) as CommittedEvent & { from?: string };
        if (ownSenderId !== undefined && from === ownSenderId) return;
        onEvent({ orgId, offset });
      } catch {
        /* a malformed payload is not ours */
      }
    });
    next.on('error', (err) => {
      if (stopped) return;
      report(err, "the PostgreSQL LISTEN connection failed; reconnecting (other instances' events reach this one by polling meanwhile)");
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
