import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

// Its own thread and connection: PASSIVE checkpoints never block writers or readers, and their fsyncs stay off the request thread.
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
 * Checkpoints the WAL from a background thread, so no commit on the request path copies and fsyncs it.
 * A thread failure goes to `onFailure`: a worker error nobody listens to would end the process.
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
