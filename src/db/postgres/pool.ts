import type pg from 'pg';
import { pgDriver } from './driver.js';

/**
 * `onIdleError` hears of idle connections ending under the pool, which unheard would end the process. `readTimeoutMs`
 * bounds a query's wait, since a frozen or unreachable server never sends the statement timeout's error.
 */
export function openPgPool(config: pg.ClientConfig, onIdleError: (err: Error) => void, readTimeoutMs = 0, max = 10): pg.Pool {
  const driver = pgDriver();
  const pool = new driver.Pool({ ...config, max, ...(readTimeoutMs > 0 ? { query_timeout: readTimeoutMs } : {}) });
  pool.on('error', onIdleError);
  pool.on('connect', (client) => {
    // A checked-out connection's failure reaches its query's caller; an unheard 'error' event would end the process.
    client.on('error', () => undefined);
  });
  return pool;
}
