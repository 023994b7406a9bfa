import type pg from 'pg';
import { pgDriver } from './driver.js';

/**
 * A connection that tells how long its oldest unanswered query has waited. pg's own query_timeout
 * arms a timer per query whose closure holds the query and its bound values until it is cleared;
 * under declare load on PostgreSQL that kept each batch's escaped arrays alive across scavenges
 * (620 KB promoted per scavenge against 150 KB without it, 11.5 against 8.4 µs of GC per declare,
 * `node --trace-gc-nvp` under bench/declare.ts load). One watchdog per pool reads this instead.
 */
/** A pooled connection as the watchdog reads it. */
type WatchedClient = pg.PoolClient & { busySince: number };

function watchedClient(Client: typeof pg.Client): typeof pg.Client {
  return class extends Client {
    /** When the oldest query still waiting for its answer was sent (or the one before it answered); 0 when idle. */
    busySince = 0;
    private unanswered = 0;

    /** Callbacks of the callback-style queries sent, in order: a connection answers its queries in the order sent. */
    private readonly callbacks: ((err: unknown, res: unknown) => void)[] = [];

    override query(...args: unknown[]): any {
      const last = args.length - 1;
      const callback = args[last];
      if (typeof callback === 'function') {
        // One bound function per connection stands for every query's callback: a closure per query
        // holding the caller's callback kept the pool's query closure, and with it the bound values,
        // alive into old space (the same 620 KB per scavenge as pg's own query_timeout).
        args[last] = this.answer;
        const taken = (super.query as (...a: unknown[]) => unknown)(...args);
        this.callbacks.push(callback as (err: unknown, res: unknown) => void);
        this.started();
        return taken;
      }
      const result = (super.query as (...a: unknown[]) => unknown)(...args);
      if (result instanceof Promise) {
        this.started();
        result.then(this.answered, this.answered);
      }
      return result;
    }

    private readonly answer = (err: unknown, res: unknown): void => {
      this.answered();
      this.callbacks.shift()!(err, res);
    };

    private started(): void {
      if (this.unanswered++ === 0) this.busySince = Date.now();
    }

    // One bound function per connection, not a closure per query.
    private readonly answered = (): void => {
      this.unanswered -= 1;
      // Queries on one connection are answered in order: the next one's wait starts now.
      this.busySince = this.unanswered === 0 ? 0 : Date.now();
    };
  };
}

/**
 * The service's pool: at most `max` connections. `onIdleError` hears of an idle connection that ended
 * under the pool (PostgreSQL restarted, an administrator or an idle timeout on the way ended it);
 * unheard, that event would end the process, while the next query simply opens a new connection.
 */
export function openPgPool(config: pg.ClientConfig, onIdleError: (err: Error) => void, readTimeoutMs = 0, max = 10): pg.Pool {
  const driver = pgDriver();
  const pool = new driver.Pool({ ...config, max, Client: watchedClient(driver.Client) });
  const clients = new Set<WatchedClient>();
  pool.on('error', onIdleError);
  pool.on('connect', (client) => {
    // A connection that breaks while checked out (a query in flight when PostgreSQL stops) fails that
    // query, which its caller hears of; the pool listens for errors only on idle connections, and an
    // 'error' event nobody listens to would end the process.
    client.on('error', () => undefined);
    clients.add(client as WatchedClient);
  });
  pool.on('remove', (client) => clients.delete(client as WatchedClient));
  if (readTimeoutMs > 0) {
    // A server that stops answering altogether (frozen, unreachable) never sends the statement
    // timeout's error: a connection whose query has waited past the read timeout is destroyed, which
    // fails its queries with "Query read timeout" (503 unavailable) and takes it out of the pool, so
    // no later query waits behind a statement the server may never finish.
    const watchdog = setInterval(
      () => {
        const now = Date.now();
        for (const client of clients) {
          if (client.busySince !== 0 && now - client.busySince > readTimeoutMs) {
            client.busySince = 0;
            (client as unknown as { connection: { stream: { destroy(err: Error): void } } }).connection.stream.destroy(new Error('Query read timeout'));
          }
        }
      },
      Math.max(100, Math.min(1000, readTimeoutMs / 4)),
    );
    // Unreferenced: it never keeps the process alive, and once the pool has ended it has no client to read.
    watchdog.unref();
  }
  return pool;
}
