import type pg from 'pg';
import { pgDriver } from './driver.js';

/**
 * The service's pool: at most `max` connections. `onIdleError` hears of an idle connection that ended
 * under the pool (PostgreSQL restarted, an administrator or an idle timeout on the way ended it);
 * unheard, that event would end the process, while the next query simply opens a new connection.
 * `readTimeoutMs` bounds how long a query waits for an answer: a server that stops answering
 * altogether (frozen, unreachable) never sends the statement timeout's error, so without it a request
 * would wait for as long as TCP takes to notice.
 */
export function openPgPool(config: pg.ClientConfig, onIdleError: (err: Error) => void, readTimeoutMs = 0, max = 10): pg.Pool {
  const driver = pgDriver();
  const pool = new driver.Pool({ ...config, max, ...(readTimeoutMs > 0 ? { query_timeout: readTimeoutMs } : {}) });
  pool.on('error', onIdleError);
  pool.on('connect', (client) => {
    // A connection that breaks while checked out (a query in flight when PostgreSQL stops) fails that
    // query, which its caller hears of; the pool listens for errors only on idle connections, and an
    // 'error' event nobody listens to would end the process.
    client.on('error', () => undefined);
  });
  return pool;
}
