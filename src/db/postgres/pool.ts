import type pg from 'pg';
import { pgDriver } from './driver.js';

/**
 * pg gives up on a query after query_timeout but keeps its connection, with the abandoned statement
 * still in progress on it: back in the pool, the connection would make the next query wait behind a
 * server that may never answer. A connection whose query timed out is ended instead; the pool drops it.
 */
function clientEndingTimedOutConnections(Client: typeof pg.Client): typeof pg.Client {
  return class extends Client {
    override query(...args: unknown[]): any {
      const result = (super.query as (...a: unknown[]) => unknown)(...args);
      // Registered before the caller awaits the promise, so the connection is ending before the caller
      // releases it to the pool.
      if (result instanceof Promise) {
        result.catch((err: unknown) => {
          if ((err as Error)?.message === 'Query read timeout') this.end().catch(() => undefined);
        });
      }
      return result;
    }
  };
}

/**
 * The service's pool: at most `max` connections. `onIdleError` hears of an idle connection that ended
 * under the pool (PostgreSQL restarted, an administrator or an idle timeout on the way ended it);
 * unheard, that event would end the process, while the next query simply opens a new connection.
 */
export function openPgPool(config: pg.ClientConfig, onIdleError: (err: Error) => void, max = 10): pg.Pool {
  const driver = pgDriver();
  const pool = new driver.Pool({ ...config, max, Client: clientEndingTimedOutConnections(driver.Client) });
  pool.on('error', onIdleError);
  pool.on('connect', (client) => {
    // A connection that breaks while checked out (a query in flight when PostgreSQL stops) fails that
    // query, which its caller hears of; the pool listens for errors only on idle connections, and an
    // 'error' event nobody listens to would end the process.
    client.on('error', () => undefined);
  });
  return pool;
}
