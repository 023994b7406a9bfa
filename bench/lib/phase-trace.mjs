// Loaded into the gateway's server child with `node --import` by bench/devices.ts (BENCH_PHASES=1, plain
// JavaScript so the child needs no loader). Per declare it records, on CLOCK_MONOTONIC (the clock of
// process.hrtime() and of the benchmark's readers), four moments of the alert's path inside the server:
//   received   Node's HTTP server has parsed the request's head (`http.server.request.start`);
//   handler    Fastify calls the route's handler: key checked, body read and validated
//              (`tracing:fastify.request.handler:start`);
//   committed  its event's transaction has committed (`emergency-api.events.committed`);
//   written    its frame is written to every live device socket of the org (`emergency-api.device.frame-written`).
// One line per declare whose frame went out: "ORG OFFSET RECEIVED HANDLER COMMITTED WRITTEN SOCKETS" (ms),
// kept in memory and appended to PHASE_TRACE_FILE on SIGUSR2 (sent by the benchmark after its rounds) and at
// exit, so no file write falls inside a measured round.
// Declares of one org are taken one at a time, as the benchmark makes them.
import { subscribe } from 'node:diagnostics_channel';
import { appendFileSync } from 'node:fs';

const file = process.env.PHASE_TRACE_FILE;
if (!file) throw new Error('PHASE_TRACE_FILE is not set');

const now = () => Number(process.hrtime.bigint()) / 1e6;
const DECLARE_PATH = /^\/api\/public\/v1\/orgs\/([^/?]+)\/emergencies(?:\?|$)/;
/** The declare of each org in progress. */
const inProgress = new Map();
let lines = [];

function flush() {
  if (lines.length === 0) return;
  appendFileSync(file, lines.join(''));
  lines = [];
}

subscribe('http.server.request.start', ({ request }) => {
  if (request.method !== 'POST') return;
  const match = DECLARE_PATH.exec(request.url);
  if (match) inProgress.set(match[1].toLowerCase(), { received: now(), handler: 0, committed: 0, offset: 0 });
});

subscribe('tracing:fastify.request.handler:start', ({ request }) => {
  const orgId = request.params?.org_id;
  const declare = typeof orgId === 'string' ? inProgress.get(orgId.toLowerCase()) : undefined;
  if (declare && declare.handler === 0) declare.handler = now();
});

subscribe('emergency-api.events.committed', (event) => {
  const declare = inProgress.get(event.orgId);
  if (declare && declare.handler !== 0 && declare.committed === 0) {
    declare.committed = now();
    declare.offset = event.offset;
  }
});

subscribe('emergency-api.device.frame-written', ({ orgId, offset, sockets }) => {
  const declare = inProgress.get(orgId);
  if (!declare || declare.offset !== offset) return;
  const written = now();
  inProgress.delete(orgId);
  lines.push(`${orgId} ${offset} ${declare.received} ${declare.handler} ${declare.committed} ${written} ${sockets}\n`);
});

process.on('SIGUSR2', flush);
process.on('exit', flush);
