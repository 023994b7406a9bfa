import WebSocket from 'ws';

export interface SimulatorOptions {
  url: string;
  token: string;
  /** Resume position for the first connection; later ones use the last offset received. */
  after?: number;
  /** Print each event frame as one JSON line instead of a human-readable alert. */
  json?: boolean;
  out?: NodeJS.WritableStream;
  err?: NodeJS.WritableStream;
}

const FIRST_RETRY_MS = 500;
const MAX_RETRY_MS = 30_000;
/** Pings arrive every 25 s; hearing nothing for this long means the connection is dead even if TCP says otherwise. */
const SERVER_SILENCE_MS = 75_000;

interface EmergencyView {
  status?: string;
  description?: string | null;
  externalId?: string | null;
  category?: { name?: string; severity?: number; color?: string };
  location?: { floorId?: string; latitude?: number; longitude?: number } | null;
}

/** The data of emergency.delivery_overdue and emergency.delivery_completed (acknowledgement deadlines). */
interface DeliveryView {
  eventOffset?: number;
  eventType?: string;
  deadlineSeconds?: number;
  targeted?: number;
  silentDevices?: { name?: string; online?: boolean }[];
  silentDevicesTotal?: number;
  completedAfterMs?: number;
}

/** The data of drill.completed: a drill run's report. */
interface DrillReportView {
  acknowledged?: number;
  passed?: boolean;
  ackMs?: { p95?: number | null };
}

type AlertEvent = {
  eventType?: string;
  sandbox?: boolean;
  emergencyId?: string;
  createdAt?: string;
  data?: { emergency?: EmergencyView; exercise?: boolean } & DeliveryView & DrillReportView;
};

/** "declared #41": the watched event a deadline event is about. */
function watchedEvent(d: DeliveryView): string {
  return `${(d.eventType ?? 'event').replace(/^emergency\./, '')} #${d.eventOffset ?? '?'}`;
}

/** A deadline event: which base stations stayed silent past the deadline, or that they all acknowledged since. */
function formatDelivery(head: string, event: AlertEvent): string {
  const d = event.data ?? {};
  const emergency = `emergency ${event.emergencyId ?? '?'}`;
  if (event.eventType === 'emergency.delivery_completed') {
    const after = d.completedAfterMs === undefined ? '' : `, ${(d.completedAfterMs / 1000).toFixed(1)} s after the overdue`;
    return [`${head} DELIVERY COMPLETED: all ${d.targeted ?? '?'} acknowledged`, `${watchedEvent(d)}${after}`, emergency].join(' | ');
  }
  const listed = d.silentDevices ?? [];
  const total = d.silentDevicesTotal ?? listed.length;
  const names = listed.map((s) => `${s.name ?? '?'}${s.online === false ? ' (offline)' : ''}`);
  if (total > listed.length) names.push(`and ${total - listed.length} more`);
  return [
    `${head} DELIVERY OVERDUE: ${total} of ${d.targeted ?? '?'} silent: ${names.join(', ')}`,
    `${watchedEvent(d)} not acknowledged within ${d.deadlineSeconds ?? '?'} s`,
    emergency,
  ].join(' | ');
}

/** A drill's report, on one line: whether every station acknowledged, how fast, and how many stayed silent. */
function formatDrillReport(head: string, event: AlertEvent): string {
  const d = event.data ?? {};
  const p95 = d.ackMs?.p95 === null || d.ackMs?.p95 === undefined ? 'no acknowledgement' : `p95 ${d.ackMs.p95} ms`;
  return [
    `${head} DRILL COMPLETED: ${d.passed ? 'passed' : 'failed'}, ${d.acknowledged ?? '?'} of ${d.targeted ?? '?'} acknowledged`,
    `${p95}, ${d.silentDevicesTotal ?? '?'} silent`,
    `emergency ${event.emergencyId ?? '?'}`,
  ].join(' | ');
}

/** One alert as a base station would show it. */
export function formatAlert(offset: number, event: AlertEvent): string {
  // A sandbox's events and exercises say so first, as a base station must: never mistaken for a real alarm.
  const marks = `${event.sandbox === true ? ' SANDBOX' : ''}${event.data?.exercise === true ? ' EXERCISE' : ''}`;
  const head = `[${event.createdAt ?? new Date().toISOString()}] #${offset}${marks}`;
  if (event.eventType === 'emergency.delivery_overdue' || event.eventType === 'emergency.delivery_completed') return formatDelivery(head, event);
  if (event.eventType === 'drill.completed') return formatDrillReport(head, event);
  const e = event.data?.emergency ?? {};
  const kind = (event.eventType ?? 'event').replace(/^emergency\./, '').toUpperCase();
  const parts = [`${head} EMERGENCY ${kind}`];
  if (e.category?.name) parts.push(`${e.category.name} (severity ${e.category.severity ?? '?'}, ${e.category.color ?? ''})`.replace(', )', ')'));
  if (e.description) parts.push(JSON.stringify(e.description));
  const where: string[] = [];
  if (e.location?.floorId) where.push(`floor ${e.location.floorId}`);
  if (e.location?.latitude !== undefined && e.location?.longitude !== undefined) where.push(`${e.location.latitude},${e.location.longitude}`);
  if (where.length) parts.push(`at ${where.join(' ')}`);
  parts.push(`emergency ${event.emergencyId ?? '?'}${e.externalId ? ` (${e.externalId})` : ''}`);
  return parts.join(' | ');
}

/**
 * A reference device client: prints and acknowledges alerts, answers pings, and reconnects with `after=<last offset>` so nothing
 * is missed. Runs until SIGINT/SIGTERM; a refused or revoked credential ends it with an error.
 */
export function simulateDevice(options: SimulatorOptions): Promise<void> {
  const out = options.out ?? process.stdout;
  const err = options.err ?? process.stderr;
  let lastOffset = options.after;
  let retryMs = FIRST_RETRY_MS;
  let stopped = false;
  let current: WebSocket | null = null;

  return new Promise<void>((resolve, reject) => {
    const stop = () => {
      stopped = true;
      current?.close(1000, 'simulator stopped');
      resolve();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);

    const connect = () => {
      if (stopped) return;
      const url = new URL(options.url);
      if (lastOffset !== undefined) url.searchParams.set('after', String(lastOffset));
      const ws = new WebSocket(url, { headers: { authorization: `Bearer ${options.token}` }, handshakeTimeout: 10_000 });
      current = ws;
      let watchdog: NodeJS.Timeout | undefined;
      const heard = () => {
        if (watchdog) clearTimeout(watchdog);
        watchdog = setTimeout(() => ws.terminate(), SERVER_SILENCE_MS);
      };
      ws.on('unexpected-response', (_req, res) => {
        if (res.statusCode === 401) {
          stopped = true;
          reject(new Error('the device token was refused (401): it is unknown or revoked'));
        } else {
          err.write(`connection refused with HTTP ${res.statusCode}; retrying\n`);
        }
        res.resume();
        ws.terminate();
      });
      ws.on('open', () => {
        retryMs = FIRST_RETRY_MS;
        heard();
        err.write(`connected to ${url.origin}${url.pathname}${lastOffset !== undefined ? ` (resuming after offset ${lastOffset})` : ''}\n`);
      });
      ws.on('message', (data) => {
        heard();
        let frame: { type?: string; offset?: number; event?: AlertEvent };
        try {
          frame = JSON.parse(data.toString());
        } catch {
          return;
        }
        if (frame.type === 'ping') {
          ws.send('{"type":"pong"}');
        } else if (frame.type === 'event' && typeof frame.offset === 'number') {
          // An offset already handled (sent again because its acknowledgement deadline is near, or a replay
          // overlap): not shown twice, but acknowledged again so the service stops waiting for this device.
          if (lastOffset !== undefined && frame.offset <= lastOffset) {
            ws.send(JSON.stringify({ type: 'ack', offset: frame.offset }));
            return;
          }
          lastOffset = frame.offset;
          out.write(options.json ? `${JSON.stringify(frame)}\n` : `${formatAlert(frame.offset, frame.event ?? {})}\n`);
          ws.send(JSON.stringify({ type: 'ack', offset: frame.offset }));
        }
      });
      ws.on('error', () => undefined);
      ws.on('close', (code, reason) => {
        if (watchdog) clearTimeout(watchdog);
        if (stopped) return;
        if (code === 4401) {
          stopped = true;
          reject(new Error('the device credential was revoked'));
          return;
        }
        // Full jitter (docs/devices.md): the devices of a gateway that went away do not all come back at once.
        const wait = Math.round(Math.random() * retryMs);
        err.write(`disconnected (${code}${reason.length ? ` ${reason.toString()}` : ''}); reconnecting in ${wait} ms\n`);
        retryMs = Math.min(retryMs * 2, MAX_RETRY_MS);
        setTimeout(connect, wait);
      });
    };
    connect();
  });
}
