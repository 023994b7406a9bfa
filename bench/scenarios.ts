/**
 * The scenarios `npm run bench` runs, in order. Each one is a script run in its own process (so one failure
 * does not stop the rest) that hands back raw results as JSON (the file named by BENCH_JSON, or on stdout);
 * `rows` turns them into table rows, with the targets of the performance issue. Adding a benchmark is
 * adding an entry here.
 */
import type { Database, RowInput, Target } from './lib/report.js';
import type { Result } from './lib/harness.js';

export interface RunOptions {
  database: Database;
  quick: boolean;
  /** Seconds of measured load per measurement (BENCH_DURATION). */
  duration: number;
}

export interface Scenario {
  id: string;
  /** Script path relative to the repository root; a scenario whose file is absent is skipped with a note. */
  file: string;
  /** The databases the scenario measures (default: every one); on the others it is skipped with a note. */
  databases?: Database[];
  args?(o: RunOptions): string[];
  env?(o: RunOptions): Record<string, string>;
  /** Raw results come from the BENCH_JSON file; `stdout-json` scripts print one JSON document instead. */
  output: 'bench-json' | 'stdout-json';
  /** When the script wrote no JSON, the raw results read from its printed output. */
  parseStdout?(stdout: string): unknown;
  rows(raw: any, o: RunOptions): RowInput[];
  timeoutSeconds(o: RunOptions): number;
}

const atLeast = (threshold: number, on: Target['on'] = 'ratio'): Target => ({ on, op: '>=', threshold });
const below = (threshold: number): Target => ({ on: 'value', op: '<', threshold });

/** A load result as bench/lib/harness.ts reports it. */
type LoadResult = Pick<Result, 'name' | 'requestsPerSec' | 'p50' | 'p99' | 'errors' | 'non2xx'>;

const isLoadResult = (x: any): x is LoadResult => x && typeof x === 'object' && typeof x.name === 'string' && typeof x.requestsPerSec === 'number';

/** Every harness load result anywhere in a JSON document (the declare script's JSON layout is its own). */
function findLoadResults(raw: unknown): LoadResult[] {
  const found: LoadResult[] = [];
  const walk = (x: unknown) => {
    if (isLoadResult(x)) found.push(x);
    else if (Array.isArray(x)) x.forEach(walk);
    else if (x && typeof x === 'object') Object.values(x).forEach(walk);
  };
  walk(raw);
  return found;
}

/** The table printed by bench/lib/harness.ts printTable: name, req/s, p50, p99, errors, non2xx. */
function parseHarnessTable(stdout: string): LoadResult[] {
  const results: LoadResult[] = [];
  for (const line of stdout.split('\n')) {
    const m = /^(\S.*?)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+(\d+)\s+(\d+)\s*$/.exec(line);
    if (m) results.push({ name: m[1]!, requestsPerSec: Number(m[2]), p50: Number(m[3]), p99: Number(m[4]), errors: Number(m[5]), non2xx: Number(m[6]) });
  }
  return results;
}

/** A row comparing two load results' throughput; errors or non-2xx answers under load make it fail. */
function throughput(metric: string, service: LoadResult | undefined, baseline: LoadResult | undefined, target?: Target, missing?: string): RowInput {
  const bad = [service, baseline].filter((r): r is LoadResult => !!r && r.errors + r.non2xx > 0).map((r) => `${r.name}: ${r.errors + r.non2xx} errors/non-2xx`);
  return {
    metric,
    value: service?.requestsPerSec ?? null,
    unit: 'req/s',
    baseline: baseline?.requestsPerSec ?? null,
    baselineLabel: baseline?.name.replace(/^baseline: /, ''),
    target,
    note: !baseline && missing ? missing : service && baseline ? `p99 ${service.p99} vs ${baseline.p99} ms` : !service ? 'not measured' : undefined,
    invalid: bad.length ? bad.join(', ') : undefined,
  };
}

/** `throughput` with both latencies and, when measured, the servers' CPU time per request in the note. */
function throughputWithLatency(metric: string, service: LoadResult | undefined, baseline: LoadResult | undefined): RowInput {
  const row = throughput(metric, service, baseline);
  if (!service || !baseline) return row;
  const cpu = (r: LoadResult) => (r as Result).cpuUsPerRequest;
  const cpuNote = cpu(service) && cpu(baseline) ? `; server CPU/request ${cpu(service)} vs ${cpu(baseline)} µs` : '';
  return { ...row, note: `p50 ${service.p50} vs ${baseline.p50} ms, p99 ${service.p99} vs ${baseline.p99} ms${cpuNote}` };
}

/** Seconds of each of the fair-share benchmark's measurements: long enough for a p99 of a few hundred declares. */
const fairnessSeconds = (o: RunOptions) => (o.quick ? 3 : Math.max(10, o.duration));

const find = (results: LoadResult[], test: (name: string) => boolean) => results.find((r) => test(r.name));
const isBaseline = (n: string) => /baseline/i.test(n);
const isPg = (n: string) => /\bpg\b|postgres/i.test(n);

/** The rows of a fairness run (bench/fairness.ts), for one process or a fleet. */
function fairnessRows(raw: any): RowInput[] {
  const rows: RowInput[] = [];
  const faults = raw.faults.length ? raw.faults.join('; ') : undefined;
  for (const p of raw.phases) {
    const q = p.quiet;
    const a = p.abused;
    const refused = Object.entries(a.statuses as Record<string, number>).filter(([status]) => status !== '201');
    const lost: string[] = [
      refused.length ? `B's declares answered ${refused.map(([status, n]) => `${status} ×${n}`).join(', ')}` : '',
      a.missingFrames ? `${a.missingFrames} frames missing` : '',
    ].filter(Boolean);
    // A server error (503 aside, the designed refusal) means the abuse did not run as it should: its figure proves nothing.
    const broken = Object.keys(p.abuse.statuses).filter((status) => Number(status) >= 500 && Number(status) !== 503);
    if (broken.length) lost.push(`A's requests answered ${broken.join(', ')}`);
    const abuse = Object.entries(p.abuse.statuses as Record<string, number>)
      .map(([status, n]) => `${status} ×${n}`)
      .join(', ');
    rows.push({
      metric: `tenant B declare → frame p99 ${p.label}`,
      value: a.n ? a.p99 : null,
      unit: 'ms',
      baseline: q.n ? q.p99 : null,
      baselineLabel: 'B quiet, same run',
      // Extensions §13: at most 2× the quiet p99 of the same run, and never above 250 ms.
      target: q.n ? below(Math.min(2 * q.p99, 250)) : undefined,
      note: `p50 ${a.p50} vs ${q.p50} ms; ${a.n} of ${a.declares} declares timed${abuse ? `; A's answers ${abuse}` : ''}`,
      invalid: [...lost, faults].filter(Boolean).join('; ') || undefined,
    });
    if (p.id === 'bad-keys') {
      rows.push({
        metric: "tenant B's declares answered 201 on a key first used under the flood of unknown keys",
        value: a.declares ? Math.round((1000 * (a.statuses['201'] ?? 0)) / a.declares) / 10 : null,
        unit: '%',
        target: atLeast(100, 'value'),
        note: `${a.statuses['201'] ?? 0} of ${a.declares}`,
      });
    }
    if (p.freshStations) {
      const f = p.freshStations;
      rows.push({
        metric: `tenant B's new base stations connected ${p.label}`,
        value: Math.round((1000 * f.accepted) / f.attempts) / 10,
        unit: '%',
        target: atLeast(100, 'value'),
        note: `${f.accepted} of ${f.attempts}, answers ${JSON.stringify(f.statuses)}${f.accepted ? `; upgrade p50 ${f.p50} ms, max ${f.max} ms` : ''}`,
      });
    }
    if (p.streamOfB !== undefined) {
      rows.push({
        metric: `tenant B's event stream opened ${p.label}`,
        value: p.streamOfB === 200 ? 100 : 0,
        unit: '%',
        target: atLeast(100, 'value'),
        note: `answered ${p.streamOfB}`,
      });
    }
    if (p.health) {
      const h = p.health;
      rows.push({
        metric: `/healthz answered 200 within 2 s on a new connection ${p.label}`,
        value: h.attempts ? Math.round((1000 * h.ok) / h.attempts) / 10 : null,
        unit: '%',
        target: atLeast(100, 'value'),
        note: `${h.ok} of ${h.attempts}${h.ok ? `; p50 ${h.p50} ms, p99 ${h.p99} ms` : ''}`,
      });
    }
  }
  return rows;
}

export const scenarios: Scenario[] = [
  {
    id: 'declare',
    file: 'bench/declare.ts',
    output: 'bench-json',
    parseStdout: parseHarnessTable,
    timeoutSeconds: (o) => 120 + 8 * (o.duration + 2),
    rows(raw, o) {
      const results = findLoadResults(raw);
      const declare = find(results, (n) => !isBaseline(n) && /declare/i.test(n) && !/idempotency/i.test(n));
      const keyed = find(results, (n) => !isBaseline(n) && /idempotency/i.test(n));
      const get = find(results, (n) => !isBaseline(n) && /\bGET\b/.test(n) && !/list/i.test(n));
      const twoInsert = find(results, (n) => isBaseline(n) && /insert/i.test(n) && !isPg(n));
      const echo = find(results, (n) => isBaseline(n) && /echo/i.test(n));
      const pgInsert = find(results, (n) => isBaseline(n) && isPg(n));
      const rows: RowInput[] = [];
      if (o.database === 'sqlite') {
        rows.push(throughput('POST declare vs bare two-insert', declare, twoInsert, atLeast(0.8)));
      } else {
        rows.push(
          throughput('POST declare vs bare pg insert', declare, pgInsert, atLeast(0.7), 'no pg insert baseline in this tree (bench/baselines/pg-insert.ts)'),
        );
        rows.push(throughput('POST declare vs bare SQLite two-insert', declare, twoInsert));
      }
      // The GET target belongs to the embedded default, like the declare target it sits next to; on
      // PostgreSQL only declare has one. The PostgreSQL ratio is reported for information.
      rows.push(throughput('GET emergency vs bare echo', get, echo, o.database === 'sqlite' ? atLeast(0.5) : undefined));
      rows.push(throughput('POST declare with Idempotency-Key vs plain declare', keyed, declare));
      return rows;
    },
  },
  {
    id: 'pg-notify',
    file: 'bench/pg-notify.ts',
    output: 'bench-json',
    parseStdout: parseHarnessTable,
    databases: ['postgres'],
    env: () => ({ BENCH_ORGS: process.env.BENCH_ORGS ?? '16' }),
    timeoutSeconds: (o) => 180 + 12 * (o.duration + 2),
    // The service's declares at 50 and 200 connections, alone (no NOTIFY: nobody else listens) and
    // with another instance listening (a NOTIFY after each commit), next to a bare two-insert
    // transaction that sends its NOTIFY after the commit: the cost of a NOTIFY inside the commit
    // shows in the bare pair.
    rows(raw) {
      const results = findLoadResults(raw);
      const rows: RowInput[] = [];
      for (const c of raw.connections as number[]) {
        const inside = find(results, (n) => n === `bare 2 pg inserts, NOTIFY in txn, c${c}`);
        const afterCommit = find(results, (n) => n === `bare 2 pg inserts, NOTIFY after, c${c}`);
        rows.push(throughput(`bare two-insert, NOTIFY after commit vs in the transaction, c${c}`, afterCommit, inside));
        for (const layout of ['1 org', `${raw.orgs} orgs`]) {
          const listened = find(results, (n) => n === `service: POST declare, ${layout}, c${c}, another instance listening`);
          const alone = find(results, (n) => n === `service: POST declare, ${layout}, c${c}, alone`);
          rows.push(throughput(`POST declare, ${layout}, c${c}, another instance listening vs bare two-insert (NOTIFY after)`, listened, afterCommit));
          rows.push(throughput(`POST declare, ${layout}, c${c}, alone (no NOTIFY) vs another instance listening`, alone, listened));
        }
      }
      return rows;
    },
  },
  {
    id: 'list+message',
    file: 'bench/list-and-message.ts',
    output: 'bench-json',
    env: (o) => ({ BENCH_LIST_SIZE: o.quick ? '200' : '500' }),
    timeoutSeconds: (o) => 150 + 8 * (o.duration + 2),
    rows(raw) {
      const results = findLoadResults(raw);
      const named = (n: string) => find(results, (x) => x === n);
      return [
        throughput(`GET list limit 50 (${raw.listSize} in org) vs bare echo`, named('service: GET list limit 50'), named('baseline: fastify JSON echo')),
        throughput('POST message, text vs bare two-insert', named('service: POST message, text'), named('baseline: 2 inserts, text body')),
        throughput(`POST message + ${raw.pngBytes} B PNG vs bare two-insert`, named('service: POST message, PNG'), named('baseline: 2 inserts, PNG body')),
      ];
    },
  },
  {
    id: 'mcp',
    file: 'bench/mcp.ts',
    output: 'bench-json',
    // Alternating rounds of REST and MCP on one server; the ratio is taken on the medians.
    args: (o) => [
      '--duration',
      String(o.quick ? o.duration : 2 * o.duration),
      '--rounds',
      o.quick ? '1' : '2',
      '--connections',
      process.env.BENCH_CONNECTIONS ?? '50',
    ],
    timeoutSeconds: (o) => 120 + 6 * (o.duration + 2),
    rows(raw) {
      const bad = raw.rest.bad + raw.mcp.bad;
      return [
        {
          metric: 'MCP create_emergency vs REST declare',
          value: raw.mcp.rps,
          unit: 'req/s',
          baseline: raw.rest.rps,
          baselineLabel: 'REST declare',
          target: atLeast(0.5),
          note: `p99 ${raw.mcp.p99} vs ${raw.rest.p99} ms; server CPU/request ${(raw.mcp.cpu / raw.rest.cpu).toFixed(2)}×`,
          invalid: bad ? `${bad} errors/non-2xx` : undefined,
        },
      ];
    },
  },
  {
    id: 'devices',
    file: 'bench/devices.ts',
    output: 'bench-json',
    env: (o) => ({
      BENCH_PARTS: process.env.BENCH_PARTS ?? 'latency',
      ...(o.quick ? { BENCH_LATENCY_DEVICES: '100,200', BENCH_DECLARES: '50', BENCH_IDLE_DEVICES: '1000' } : {}),
    }),
    // Two subscriber counts, each with three floors, the gateway and three peers.
    timeoutSeconds: () => 600,
    rows(raw) {
      const rows: RowInput[] = [];
      // One entry per subscriber count (latencyBySize); older reports had only `latency`.
      const sizes: any[] = raw.latencyBySize ?? (raw.latency ? [raw.latency] : []);
      for (const l of sizes) {
        const notAcked =
          l.acked !== undefined && l.acked < l.devices ? `${l.devices - l.acked} devices' acks of the last event not recorded within 15 s` : undefined;
        const missing = [l.missing ? `${l.missing} declares not delivered to every device` : undefined, notAcked].filter(Boolean).join('; ') || undefined;
        // Arrival at the device's socket (kernel receive timestamp); the co-located readers' own read time is in the note.
        const read = l.everyDeliveryReadMs ? `read by the co-located readers: p99 ${l.everyDeliveryReadMs.p99.toFixed(2)} ms` : undefined;
        const acking = raw.devicesAck ? ', devices acking' : '';
        const fanOut = l.serverCommitToAllWrittenMs
          ? `; fan-out alone: server commit → written to all sockets p99 <= ${l.serverCommitToAllWrittenMs.p99AtMostMs} ms (histogram bucket)${
              l.spreadMs ? `, first → last device p99 ${l.spreadMs.p99.toFixed(2)} ms` : ''
            }`
          : '';
        rows.push({
          metric: `push p99, declare→frame (${l.devices} devices${acking})`,
          value: l.everyDeliveryMs.p99,
          unit: 'ms',
          baseline: l.singleDeviceFrameMs.p99,
          baselineLabel: '1 device',
          target: below(5),
          invalid: missing,
          note: read ? `${read}${fanOut}` : undefined,
        });
        rows.push({
          metric: `push p50, declare→frame (${l.devices} devices${acking})`,
          value: l.everyDeliveryMs.p50,
          unit: 'ms',
          baseline: l.singleDeviceFrameMs.p50,
          baselineLabel: '1 device',
        });
        if (l.bareTcpFanOutMs) {
          rows.push({
            metric: `push p99 vs bare node:net fan-out (${l.devices} sockets)`,
            value: l.everyDeliveryMs.p99,
            unit: 'ms',
            baseline: l.bareTcpFanOutMs.p99,
            baselineLabel: 'bare TCP writes',
          });
        }
        for (const [name, label] of [
          ['c1', 'C write(2) loop, 1 thread'],
          ['c2', 'C write(2) loop, 2 threads'],
        ] as const) {
          const floor = l.floorsMs?.[name];
          if (floor)
            rows.push({
              metric: `push p99 vs ${label} (${l.devices} sockets)`,
              value: l.everyDeliveryMs.p99,
              unit: 'ms',
              baseline: floor.arrived.p99,
              baselineLabel: label,
            });
        }
        if (l.baselineGateway) {
          const b = l.baselineGateway;
          rows.push({
            metric: `push p99 vs the same-run baseline gateway, ${b.label} (${l.devices} devices)`,
            value: l.everyDeliveryMs.p99,
            unit: 'ms',
            baseline: b.everyDeliveryMs.p99,
            baselineLabel: b.label,
            note: `p50 ${l.everyDeliveryMs.p50.toFixed(2)} vs ${b.everyDeliveryMs.p50.toFixed(2)} ms; first → last device p50 ${l.spreadMs?.p50.toFixed(2)} vs ${b.spreadMs.p50.toFixed(2)} ms`,
            invalid: b.missing ? `${b.missing} declares not delivered to every device (baseline gateway)` : undefined,
          });
        }
        // The design's reference: a bare server that commits and writes, nothing else (bench/baselines/commit-fan-out.ts).
        const bare = l.bareGateway;
        if (bare) {
          rows.push({
            metric: `push p99 vs bare HTTP POST + commit + fan-out (${l.devices} sockets)`,
            value: l.everyDeliveryMs.p99,
            unit: 'ms',
            baseline: bare.everyDeliveryMs.p99,
            baselineLabel: 'bare POST → commit → node:net writes',
            note: `p50 ${l.everyDeliveryMs.p50.toFixed(2)} vs ${bare.everyDeliveryMs.p50.toFixed(2)} ms${
              l.firstDeviceMs ? `; first device p50 ${l.firstDeviceMs.p50.toFixed(2)} vs ${bare.firstMs.p50.toFixed(2)} ms` : ''
            }; the difference is the product's own work before the first write`,
            invalid: bare.missing ? `${bare.missing} POSTs not delivered to every socket (bare server)` : undefined,
          });
        }
        // The issue's target: the gateway's p99 at least as good as the best peer's (peer p99 ÷ gateway p99 >= 1).
        const measuredPeers = Object.entries((l.peers ?? {}) as Record<string, any>).filter(([, p]) => !p.skipped && !p.missing);
        if (measuredPeers.length > 0) {
          const [bestName, best] = measuredPeers.reduce((a, b) => (b[1].everyDeliveryMs.p99 < a[1].everyDeliveryMs.p99 ? b : a));
          rows.push({
            metric: `best peer's p99 vs push p99 (${l.devices} subscribers)`,
            value: best.everyDeliveryMs.p99,
            unit: 'ms',
            baseline: l.everyDeliveryMs.p99,
            baselineLabel: 'gateway, declare → frame',
            target: atLeast(1),
            note: `best peer: ${bestName}; ratio = peer p99 ÷ gateway p99, >= 1: the gateway is at least as good`,
          });
          if (bare)
            rows.push({
              metric: `best peer's p99 vs bare HTTP POST + commit + fan-out p99 (${l.devices} subscribers)`,
              value: best.everyDeliveryMs.p99,
              unit: 'ms',
              baseline: bare.everyDeliveryMs.p99,
              baselineLabel: 'bare POST → commit → node:net writes',
              note: `best peer: ${bestName}; ratio = peer p99 ÷ bare server p99, < 1: a server that only commits and writes is already behind the peer`,
            });
        }
        // The peers: the same subscribers reading the same number of messages of the frame's size through a
        // broker. The table's ratio is gateway p99 ÷ peer p99: at most 1 means the gateway is at least as good.
        for (const [name, peer] of Object.entries((l.peers ?? {}) as Record<string, any>)) {
          if (peer.skipped) {
            rows.push({ metric: `push p99 vs ${peer.label} (${l.devices} subscribers)`, value: null, unit: 'ms', note: `peer not measured: ${peer.skipped}` });
            continue;
          }
          const p = peer.everyDeliveryMs;
          const g = l.everyDeliveryMs;
          rows.push({
            metric: `push p99 vs ${peer.label} (${l.devices} subscribers)`,
            value: g.p99,
            unit: 'ms',
            baseline: p.p99,
            baselineLabel: `${name}, sent → frame`,
            note: `ratio = gateway ÷ ${name}; p50 ${g.p50.toFixed(2)} vs ${p.p50.toFixed(2)} ms, max ${g.max?.toFixed(2)} vs ${p.max.toFixed(2)} ms; peer p99 ÷ gateway p99 = ${(p.p99 / g.p99).toFixed(2)}${
              peer.missing ? `; ${peer.missing} messages not delivered to every subscriber` : ''
            }`,
            invalid: peer.missing ? `${peer.missing} messages not delivered to every subscriber` : undefined,
          });
        }
      }
      if (raw.idle) {
        rows.push({
          metric: `idle devices per GiB (${raw.idle.devices} connected)`,
          value: raw.idle.devicesPerGiB,
          unit: 'devices',
          target: atLeast(20_000, 'value'),
        });
      }
      return rows;
    },
  },
  {
    id: 'receipts',
    file: 'bench/receipts.ts',
    output: 'bench-json',
    env: (o): Record<string, string> => (o.quick ? { BENCH_RECEIPT_DEVICES: '200', BENCH_RECEIPT_EVENTS: '200' } : {}),
    // Setup (devices connected, events made and acknowledged) takes under a minute; then four measurements.
    timeoutSeconds: (o) => 240 + 4 * (o.duration + 2),
    rows(raw) {
      const results = findLoadResults(raw);
      const named = (n: string) => find(results, (x) => x === n);
      const echo = named('baseline: fastify JSON echo');
      const org = `${raw.devices} acking devices, ${raw.events} events in the org`;
      // Acks the server received but did not record make the devices ack again before the load: a fault of the
      // service's ack path, reported next to the figures (which are measured once every ack is recorded).
      const unrecorded = raw.devicesWithUnrecordedAcks ? `; ${raw.devicesWithUnrecordedAcks} devices' acks were not recorded and were sent again` : '';
      const rows = [
        throughputWithLatency(`GET receipts, ${raw.emergencyEvents} events (${org}) vs bare echo`, named('service: GET receipts'), echo),
        throughputWithLatency(`GET events, page of ${raw.pageLimit} (${org}) vs bare echo`, named(`service: GET events limit ${raw.pageLimit}`), echo),
        throughputWithLatency(
          `GET receipts ?detail=devices, ${raw.detailConnections} connections vs bare echo`,
          named(`service: GET receipts detail=devices, ${raw.detailConnections} connections`),
          echo,
        ),
      ];
      if (unrecorded) rows[0]!.note = `${rows[0]!.note ?? ''}${unrecorded}`;
      return rows;
    },
  },
  {
    // The same devices and declares without and then with an acknowledgement deadline, one server (bench/deadlines.ts).
    id: 'deadlines',
    file: 'bench/deadlines.ts',
    output: 'bench-json',
    env: (o): Record<string, string> => (o.quick ? { BENCH_DEADLINE_DEVICES: '200', BENCH_DEADLINE_DECLARES: '30', BENCH_DEADLINE_IDLE_SECONDS: '3' } : {}),
    // Setup, two phases of about 20 s and two quiet stretches of 10 s.
    timeoutSeconds: () => 420,
    rows(raw) {
      const a = raw.withoutDeadline;
      const b = raw.withDeadline;
      const faults = [...a.faults, ...b.faults];
      const invalid = faults.length ? faults.slice(0, 3).join('; ') : undefined;
      const fleet = `${raw.devices} devices, ${raw.silentDevices} silent, ${raw.declares} declares at ${raw.declaresPerSecond}/s`;
      const late = b.overdueLatenessMs;
      return [
        {
          metric: `server CPU per declare, ${raw.deadlineSeconds} s deadline vs none (${fleet})`,
          value: b.serverCpuMsPerDeclare,
          unit: 'ms',
          baseline: a.serverCpuMsPerDeclare,
          baselineLabel: 'no deadline, same devices',
          note: `with the re-sends (${b.resentFrames} frames) and the ${b.overdueEvents} overdue events, fanned out and acknowledged`,
          invalid,
        },
        {
          metric: `declare p99, ${raw.deadlineSeconds} s deadline vs none (${fleet})`,
          value: b.declareMs.p99,
          unit: 'ms',
          baseline: a.declareMs.p99,
          baselineLabel: 'no deadline, same devices',
          note: `p50 ${b.declareMs.p50} vs ${a.declareMs.p50} ms`,
          invalid,
        },
        {
          metric: 'overdue event lateness p99 (createdAt − deadline)',
          value: late?.createdAt.p99 ?? null,
          unit: 'ms',
          note: late
            ? `p50 ${late.createdAt.p50} ms; first frame at a device − deadline p50 ${late.firstFrame.p50} ms, p99 ${late.firstFrame.p99} ms`
            : undefined,
          invalid,
        },
        {
          metric: `idle server CPU watching ${b.overdueEvents} incomplete overdue deliveries vs none`,
          value: raw.idleCpuMsPerSecond.watchingOverdue,
          unit: 'ms/s',
          baseline: raw.idleCpuMsPerSecond.withoutDeadlines,
          baselineLabel: 'before the deadline phase',
        },
      ];
    },
  },
  {
    id: 'webhooks',
    file: 'bench/webhooks.ts',
    output: 'stdout-json',
    env: (o) => ({ DURATION: String(o.quick ? Math.max(3, o.duration) : Math.max(10, 2 * o.duration)) }),
    timeoutSeconds: (o) => 180 + 2 * o.duration,
    // Targets on SQLite (the webhooks issue's terms); PostgreSQL is reported for information.
    rows(raw, o) {
      const onSqlite = o.database === 'sqlite';
      const failed = raw.failedAttempts?.reduce((n: number, f: { count: number }) => n + f.count, 0);
      return [
        {
          metric: 'deliveries/s',
          value: raw.deliveriesPerSecondInWindow,
          unit: 'deliveries/s',
          baseline: raw.baselineBarePostsPerSecond,
          baselineLabel: 'bare undici POSTs',
          target: onSqlite ? atLeast(2_000, 'value') : undefined,
          note: `${raw.eventsPerSecondAchieved} events/s × ${raw.subscriptions} subscriptions offered`,
          invalid: failed ? `${failed} failed attempts` : undefined,
        },
        {
          metric: 'commit→first attempt p99',
          value: raw.commitToFirstAttemptMs.p99,
          unit: 'ms',
          target: onSqlite ? below(50) : undefined,
          note: `p50 ${raw.commitToFirstAttemptMs.p50} ms`,
        },
      ];
    },
  },
  {
    // The probe's terms: the real server, one subscription, one receiver, declares over HTTP.
    id: 'webhooks-http',
    file: 'bench/webhooks-http.ts',
    output: 'bench-json',
    // Each of its phases lasts BENCH_DURATION unless BENCH_WEBHOOK_SECONDS says otherwise (60 for the README figures).
    env: (o) => ({ BENCH_WEBHOOK_SECONDS: process.env.BENCH_WEBHOOK_SECONDS ?? String(o.duration) }),
    timeoutSeconds: (o) => 240 + 5 * Number(process.env.BENCH_WEBHOOK_SECONDS ?? o.duration),
    rows(raw) {
      const s = raw.saturation;
      const f = raw.fixedRate;
      const faults = [
        raw.lost ? `${raw.lost} lost` : '',
        raw.duplicated ? `${raw.duplicated} duplicated` : '',
        raw.declareErrors ? `${raw.declareErrors} declare errors` : '',
      ]
        .filter(Boolean)
        .join(', ');
      const invalid = faults || undefined;
      const window = `${raw.secondsPerPhase} s`;
      return [
        {
          metric: `webhooks at saturation (${window}, 1 receiver): deliveries/s vs declares/s acknowledged`,
          value: s.deliveriesPerSecond,
          unit: 'deliveries/s',
          baseline: s.declaresPerSecond,
          baselineLabel: 'declares/s acknowledged, same window',
          // Keeping up: as many arrivals as acknowledgements in the window, to within counting noise.
          target: atLeast(0.99),
          note: `backlog at the end ${s.backlogAtEnd}, drained in ${s.drainSeconds} s; ${raw.lost} lost, ${raw.duplicated} duplicated`,
          invalid,
        },
        {
          metric: `declares/s at saturation with a webhook subscription vs none (${window})`,
          value: s.declaresPerSecond,
          unit: 'req/s',
          baseline: raw.baseline.declaresPerSecondWithoutSubscription,
          baselineLabel: 'no subscription, same server',
        },
        {
          metric: 'webhook deliveries/s at saturation vs bare undici POSTs to the receiver',
          value: s.deliveriesPerSecond,
          unit: 'deliveries/s',
          baseline: raw.baseline.barePostsPerSecond,
          baselineLabel: `bare POSTs, ${raw.connections} connections`,
        },
        {
          metric: `webhook ack → delivery p99 at ${f.offeredPerSecond} declares/s offered (${window})`,
          value: f.ackToDeliveryMs.p99,
          unit: 'ms',
          baseline: raw.baseline.barePostAtRateMs.p99,
          baselineLabel: `bare POST round trip p99 at ${f.offeredPerSecond}/s`,
          target: below(100),
          note: `${f.achievedPerSecond} declares/s achieved; p50 ${f.ackToDeliveryMs.p50} ms, max ${f.ackToDeliveryMs.max} ms`,
          invalid,
        },
      ];
    },
  },
  {
    id: 'rss',
    file: 'bench/rss.ts',
    output: 'bench-json',
    timeoutSeconds: (o) => 180 + 4 * (o.duration + 2),
    rows(raw) {
      const invalid =
        raw.service.load.errors + raw.service.load.non2xx ? `${raw.service.load.errors + raw.service.load.non2xx} errors/non-2xx under load` : undefined;
      return [
        {
          metric: `service RSS idle (${raw.idleSeconds ?? 3} s without requests)`,
          value: raw.service.idleMB,
          unit: 'MB',
          baseline: raw.baseline.idleMB,
          baselineLabel: 'bare two-insert server',
          target: below(150),
        },
        ...(raw.service.startedMB === undefined
          ? []
          : [
              {
                metric: 'service RSS just started (3 s after it answers)',
                value: raw.service.startedMB,
                unit: 'MB',
                baseline: raw.baseline.startedMB,
                baselineLabel: 'bare two-insert server',
                note: 'start-up grows the young generation; V8 gives it back once the process is idle',
              },
            ]),
        {
          metric: 'service RSS peak under declare load',
          value: raw.service.peakUnderLoadMB,
          unit: 'MB',
          baseline: raw.baseline.peakUnderLoadMB,
          baselineLabel: 'bare two-insert server',
          target: below(300),
          note: `${raw.service.load.requestsPerSec} req/s`,
          invalid,
        },
      ];
    },
  },
  {
    id: 'large-messages',
    file: 'bench/large-messages.ts',
    output: 'bench-json',
    timeoutSeconds: () => 240,
    rows(raw) {
      return [
        {
          metric: 'service RSS peak, eight 53 MiB message posts at once',
          value: raw.many.peakMB,
          unit: 'MB',
          baseline: raw.one.peakMB,
          baselineLabel: 'one post alone',
          target: below(600),
          note: `answers ${JSON.stringify(raw.many.statuses)}`,
        },
        { metric: 'service RSS 10 s after the eight posts', value: raw.many.afterMB, unit: 'MB', target: below(200) },
      ];
    },
  },
  {
    id: 'admin-devices',
    file: 'bench/admin-devices.ts',
    output: 'bench-json',
    env: (o) => ({ BENCH_DEVICES: o.quick ? '200' : '1000', BENCH_CLI_DEVICES: o.quick ? '20' : '100' }),
    timeoutSeconds: (o) => (o.quick ? 240 : 600),
    rows(raw) {
      const [fleet, singles, viaCli] = raw.rows as { path: string; devices: number; seconds: number; perSecond: number }[];
      return [
        { metric: `${raw.devices} devices through the admin API, one request`, value: fleet!.perSecond, unit: 'devices/s', note: `${fleet!.seconds} s` },
        {
          metric: `${raw.devices} devices through the admin API, one request each`,
          value: singles!.perSecond,
          unit: 'devices/s',
          baseline: fleet!.perSecond,
          baselineLabel: 'one request',
          note: `${singles!.seconds} s`,
        },
        {
          metric: `${raw.cliDevices ?? raw.devices} devices through the admin CLI, one process each`,
          value: viaCli!.perSecond,
          unit: 'devices/s',
          baseline: fleet!.perSecond,
          baselineLabel: 'one request',
          note: `${viaCli!.seconds} s`,
        },
      ];
    },
  },
  {
    id: 'fleet',
    file: 'bench/fleet.ts',
    output: 'bench-json',
    databases: ['postgres'],
    env: (o): Record<string, string> => (o.quick ? { BENCH_FLEET_DEVICES: '200,1000', BENCH_DECLARES: '20', BENCH_FLEET_BURST: '10' } : {}),
    timeoutSeconds: () => 1_200,
    // Per device count: the fleet with two gateway processes against one, and the fleet with one against
    // today's single process (role all), in the same interleaved rounds; then the bursts' frame rates.
    rows(raw) {
      const rows: RowInput[] = [];
      for (const size of raw.bySize) {
        const { single, fleet1, fleet2 } = size.deployments;
        const at = `${size.devices} devices of one org`;
        const missing = [single, fleet1, fleet2].filter((d) => d.missing > 0 || d.burst.frames < d.burst.expectedFrames).map((d) => d.label);
        const invalid = missing.length ? `frames missing: ${missing.join(', ')}` : undefined;
        const p99Note = (a: any, b: any) =>
          `p50 ${a.lastMs.p50} vs ${b.lastMs.p50} ms; gateway CPU/declare ${a.gatewayCpuMsPerDeclare} vs ${b.gatewayCpuMsPerDeclare} ms`;
        rows.push(
          {
            metric: `fleet, declare → last device p99, 2 gateway processes vs 1 (${at})`,
            value: fleet2.lastMs.p99,
            unit: 'ms',
            baseline: fleet1.lastMs.p99,
            baselineLabel: 'fleet, 1 gateway process',
            note: p99Note(fleet2, fleet1),
            invalid,
          },
          {
            metric: `fleet (1 gateway process), declare → last device p99 vs one process (${at})`,
            value: fleet1.lastMs.p99,
            unit: 'ms',
            baseline: single.lastMs.p99,
            baselineLabel: 'one process, role all',
            note: p99Note(fleet1, single),
            invalid,
          },
          {
            metric: `fleet (2 gateway processes), declare → last device p99 vs one process (${at})`,
            value: fleet2.lastMs.p99,
            unit: 'ms',
            baseline: single.lastMs.p99,
            baselineLabel: 'one process, role all',
            note: p99Note(fleet2, single),
            invalid,
          },
          {
            metric: `fleet, frames/s in a burst of ${size.burst} declares, 2 gateway processes vs 1 (${at})`,
            value: fleet2.burst.framesPerSecond,
            unit: 'frames/s',
            baseline: fleet1.burst.framesPerSecond,
            baselineLabel: 'fleet, 1 gateway process',
            note: `one process: ${single.burst.framesPerSecond} frames/s; frames per gateway CPU-second ${fleet2.burst.framesPerCpuSecond} vs ${fleet1.burst.framesPerCpuSecond}; load generator ${Math.round(fleet2.burst.generatorShare.share * 100)} % and ${Math.round(fleet1.burst.generatorShare.share * 100)} % of the busy CPU`,
            invalid,
          },
        );
      }
      const largest = raw.bySize.at(-1);
      if (largest) {
        rows.push({
          metric: `gateway RSS per idle device socket (${largest.devices} devices, 1 gateway process)`,
          value: largest.deployments.fleet1.rssPerSocketKiB,
          unit: 'KiB',
          note: `one process (role all): ${largest.deployments.single.rssPerSocketKiB} KiB; gateway RSS with them ${largest.deployments.fleet1.gatewayRssMiB.join(' + ')} MiB`,
        });
      }
      return rows;
    },
  },
  {
    id: 'console-stream',
    file: 'bench/console-stream.ts',
    output: 'bench-json',
    env: (o): Record<string, string> => (o.quick ? { BENCH_CONSOLES: '20', BENCH_DEVICES: '20', BENCH_DECLARES: '50' } : {}),
    timeoutSeconds: () => 300,
    rows(raw) {
      return [
        {
          metric: `console stream (SSE), ${raw.consoles} watchers of one org, declare sent → frame, p99`,
          value: raw.console.p99,
          unit: 'ms',
          baseline: raw.device.p99,
          baselineLabel: `${raw.devices} base stations (WebSocket), same run`,
          note: `p50 ${raw.console.p50} ms vs ${raw.device.p50} ms; ${raw.console.missing} frames missing`,
          invalid: raw.console.missing > 0 || raw.device.missing > 0 ? 'frames missing' : undefined,
        },
      ];
    },
  },
  {
    // Tenant B's declare → frame latency quiet and while tenant A abuses the service, one abuse after another (bench/fairness.ts).
    id: 'fairness',
    file: 'bench/fairness.ts',
    output: 'bench-json',
    env: (o): Record<string, string> => ({
      BENCH_FAIRNESS_SECONDS: String(fairnessSeconds(o)),
      ...(o.quick ? { BENCH_FAIRNESS_OPEN_EMERGENCIES: '500' } : {}),
    }),
    // Setup, then nine phases of two measurements each.
    timeoutSeconds: (o) => 300 + 30 * fairnessSeconds(o),
    rows: fairnessRows,
  },
  {
    // The same abuses against a fleet (api, gateway and worker processes on one PostgreSQL database).
    id: 'fairness-fleet',
    file: 'bench/fairness.ts',
    databases: ['postgres'],
    output: 'bench-json',
    env: (o): Record<string, string> => ({
      BENCH_FAIRNESS_DEPLOYMENT: 'fleet',
      BENCH_FAIRNESS_SECONDS: String(fairnessSeconds(o)),
      ...(o.quick ? { BENCH_FAIRNESS_OPEN_EMERGENCIES: '500' } : {}),
    }),
    timeoutSeconds: (o) => 300 + 30 * fairnessSeconds(o),
    rows: fairnessRows,
  },
];
