import { timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SECRET_PATTERN, signatureHeader } from '../domain/webhooks/signing.js';
import { type CliCommand, UsageError } from './command.js';

/** How far a delivery's webhook-timestamp may be from this machine's clock (the Standard Webhooks tolerance). */
const TIMESTAMP_TOLERANCE_S = 5 * 60;

const header = (headers: IncomingHttpHeaders, name: string) => {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
};

/** `verified`, or why the delivery's signature does not check out with `secret`. */
export function checkSignature(secret: string, headers: IncomingHttpHeaders, body: string, now = Date.now()): string {
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signatures) return 'missing (webhook-id, webhook-timestamp or webhook-signature absent)';
  const seconds = Number(timestamp);
  if (!/^\d+$/.test(timestamp) || Math.abs(now / 1000 - seconds) > TIMESTAMP_TOLERANCE_S) return 'timestamp too far from this clock';
  const expected = Buffer.from(signatureHeader([secret], id, new Date(seconds * 1000), body));
  // During a secret rotation two signatures are sent: one made with this secret is enough.
  const matches = signatures.split(' ').some((given) => {
    const candidate = Buffer.from(given);
    return candidate.length === expected.length && timingSafeEqual(candidate, expected);
  });
  return matches ? 'verified' : 'does not match the secret';
}

export interface ListenOptions {
  port: number;
  host: string;
  /** The subscription's `whsec_` secret; without it signatures are not checked. */
  secret?: string;
  /** Stop after this many deliveries, verified ones when a secret is given (default: run until interrupted). */
  count?: number;
  /** One JSON line per request instead of readable lines. */
  json?: boolean;
  out?: NodeJS.WritableStream;
  err?: NodeJS.WritableStream;
}

/**
 * A local webhook receiver for trying subscriptions out: prints each delivery and whether its signature checks out, and
 * answers 204 (401 when a secret is given and the signature fails, as a real receiver would, so the delivery is retried).
 */
export function listenForWebhooks(options: ListenOptions): Promise<{ received: number }> {
  const out = options.out ?? process.stdout;
  const err = options.err ?? process.stderr;
  let received = 0;
  return new Promise<{ received: number }>((resolve, reject) => {
    const server = createServer((req, res) => {
      // Deliveries are POSTs; anything else (a script checking that the receiver is up) gets a line of text.
      if (req.method !== 'POST') {
        res.writeHead(200, { 'content-type': 'text/plain' }).end('emergency-api webhook receiver: deliveries are POSTed here\n');
        return;
      }
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const verification = options.secret ? checkSignature(options.secret, req.headers, body) : 'not checked (no --secret)';
        const status = options.secret && verification !== 'verified' ? 401 : 204;
        let event: { eventType?: string; eventId?: string; emergencyId?: string; sequence?: number } | null = null;
        try {
          event = JSON.parse(body);
        } catch {
          /* printed as text */
        }
        const receivedAt = new Date().toISOString();
        if (options.json) {
          out.write(
            `${JSON.stringify({ receivedAt, method: req.method, path: req.url, webhookId: header(req.headers, 'webhook-id') ?? null, verification, status, body: event ?? body })}\n`,
          );
        } else {
          const what = event?.eventType
            ? `${event.eventType} event ${event.eventId}${event.emergencyId ? ` emergency ${event.emergencyId} #${event.sequence}` : ''}`
            : `${body.length} bytes`;
          out.write(`[${receivedAt}] ${req.method} ${req.url} ${what}: signature ${verification}, answered ${status}\n  ${body}\n`);
        }
        // With a secret, only deliveries of that subscription count (another one may target the same port).
        if (status === 204) received++;
        // Once the answer is out, so that the sender records it as delivered rather than cut short.
        res.on('finish', () => {
          if (options.count !== undefined && received >= options.count) stop();
        });
        res.writeHead(status).end();
      });
    });
    let stopped = false;
    const stop = () => {
      if (stopped) return;
      stopped = true;
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      server.close(() => resolve({ received }));
      server.closeAllConnections();
    };
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      const { port } = server.address() as AddressInfo;
      const host = options.host.includes(':') ? `[${options.host}]` : options.host;
      err.write(
        `listening for webhooks on http://${host}:${port}/ (${options.secret ? 'signatures checked with the given secret' : 'signatures not checked: pass --secret'}); Ctrl-C stops\n`,
      );
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
  });
}

export const webhookListenCommands: Record<string, CliCommand> = {
  'webhook listen': {
    summary: 'a local webhook receiver: prints each delivery and whether its signature checks out',
    options: {
      port: { type: 'string', value: 'N', description: 'the port to listen on (default 9999; 0: any free port)' },
      host: { type: 'string', value: 'ADDR', description: 'the address to listen on (default 127.0.0.1)' },
      secret: { type: 'string', value: 'whsec_...', description: "the subscription's secret, to verify each delivery's signature" },
      count: { type: 'string', value: 'N', description: 'stop after N deliveries, N verified ones with --secret (default: run until interrupted)' },
    },
    json: 'print each delivery as one JSON line instead of readable lines, and {"received":N} at the end',
    details: [
      'Subscribe its URL (e.g. http://127.0.0.1:9999/hook) to a server that accepts local targets: `serve --demo`, or WEBHOOK_ALLOW_PRIVATE_TARGETS=true.',
      'Answers 204 to a delivery, or 401 when --secret is given and the signature does not check out (the delivery is then retried); any other request gets 200.',
    ],
    standalone: true,
    run: async ({ values }) => {
      const number = (name: string, fallback: number | undefined, min: number, max: number) => {
        const value = values[name];
        if (value === undefined) return fallback;
        if (typeof value !== 'string' || !/^\d{1,6}$/.test(value) || Number(value) < min || Number(value) > max) {
          throw new UsageError(`--${name} must be a whole number from ${min} to ${max}`);
        }
        return Number(value);
      };
      const secret = typeof values.secret === 'string' ? values.secret : undefined;
      if (secret !== undefined && !SECRET_PATTERN.test(secret)) throw new UsageError('--secret must be the whsec_... secret the subscription was created with');
      // Ends with the number of deliveries counted (`{"received":N}` with --json).
      return listenForWebhooks({
        port: number('port', 9999, 0, 65535)!,
        host: typeof values.host === 'string' && values.host !== '' ? values.host : '127.0.0.1',
        secret,
        count: number('count', undefined, 1, 1_000_000),
        json: process.argv.includes('--json'),
      });
    },
  },
};
