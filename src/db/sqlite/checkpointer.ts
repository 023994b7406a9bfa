import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

// Runs in its own thread with its own connection: PASSIVE checkpoints never block writers or
// readers, and the fsyncs they need no longer stall the request thread.
const WORKER_SOURCE = `
const { workerData, parentPort } = require('node:worker_threads');
const Database = require(workerData.modulePath);
const db = new Database(workerData.path);
db.pragma('busy_timeout = 5000');
const timer = setInterval(() => {
  try { db.pragma('wal_checkpoint(PASSIVE)'); } catch { /* busy: the next tick retries */ }
}, workerData.intervalMs);
parentPort.on('message', () => {
  clearInterval(timer);
  try { db.pragma('wal_checkpoint(PASSIVE)'); } catch {}
  db.close();
  parentPort.close();
});
`;

/**
 * SQLite's automatic checkpoint runs inside whichever commit crosses the threshold, copying the WAL
 * into the database file and fsyncing on the request path. The service turns it off on its writing
 * connection and checkpoints from this background thread instead. Should the thread fail (it cannot
 * open the file, it runs out of memory), `onFailure` is told and the service goes on: an error of a
 * worker with no listener would otherwise end the whole process.
 */
export function startSqliteCheckpointer(path: string, onFailure: (err: Error) => void, intervalMs = 1000): () => Promise<void> {
  const modulePath = createRequire(import.meta.url).resolve('better-sqlite3');
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { path, modulePath, intervalMs } });
  worker.unref();
  let exited = false;
  const exit = new Promise<void>((done) =>
    worker.once('exit', () => {
      exited = true;
      done();
    }),
  );
  worker.on('error', onFailure);
  return async () => {
    if (exited) return;
    worker.ref(); // keep the process alive until the final checkpoint is done
    worker.postMessage('stop');
    const timer = setTimeout(() => void worker.terminate(), 2000);
    await exit;
    clearTimeout(timer);
  };
}
