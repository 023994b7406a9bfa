import { isIP } from 'node:net';
import { availableParallelism } from 'node:os';
import proxyaddr from '@fastify/proxy-addr';
import { z } from 'zod';
import { editDistance } from './text/edit-distance.js';
import { isLoopbackHost } from './edge/loopback-host.js';
import { MAX_PROCESSES, PROCESS_ROLES } from './roles.js';

const booleanFlag = z
  .enum(['true', 'false', '1', '0', ''])
  .optional()
  .transform((v) => v === 'true' || v === '1');

/** `ip`, `ip:port` or `[ipv6]:port`, as dns.Resolver#setServers takes them. */
function isNameServer(entry: string): boolean {
  const bracketed = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(entry);
  const v4WithPort = /^([\d.]+):(\d{1,5})$/.exec(entry);
  const [host, port] = bracketed ? [bracketed[1]!, bracketed[2]] : v4WithPort ? [v4WithPort[1]!, v4WithPort[2]] : [entry, undefined];
  const family = isIP(host);
  if (family === 0 || (bracketed && family !== 6)) return false;
  return port === undefined || (Number(port) >= 1 && Number(port) <= 65535);
}

const retrySchedule = z
  .string()
  .regex(/^\s*\d+(\.\d+)?\s*(,\s*\d+(\.\d+)?\s*)*$/, 'a comma-separated list of seconds, e.g. "5,300,1800"')
  .transform((s) => s.split(',').map((x) => Number(x.trim())));

/** A comma-separated list, empty entries dropped. */
const commaList = z
  .string()
  .default('')
  .transform((v) =>
    v
      .split(',')
      .map((item) => item.trim())
      .filter(Boolean),
  );

/** TRUST_PROXY: a hop count (`1`), or addresses, CIDRs and proxy-addr's names (`loopback`, `uniquelocal`); empty: no proxy trusted. */
const trustProxy = commaList.transform((entries, ctx): TrustedProxies | null => {
  if (entries.length === 0) return null;
  if (entries.length === 1 && /^\d+$/.test(entries[0]!)) return { hops: Number(entries[0]) };
  try {
    proxyaddr.compile(entries);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: `a hop count or a comma list of addresses and CIDRs (e.g. 10.0.0.0/8,fd00::/8): ${(err as Error).message}` });
    return z.NEVER;
  }
  return { addresses: entries };
});

/** Who may name the client in X-Forwarded-For/Forwarded: the nearest `hops` proxies, or the peers at these addresses. */
export type TrustedProxies = { hops: number } | { addresses: string[] };

/** The embedded database of a first start: its directory is created when missing (any other path's must exist). */
export const DEFAULT_SQLITE_PATH = './data/emergency.db';

const configSchema = z
  .object({
    PORT: z.coerce.number().int().min(0).max(65535).default(8080),
    HOST: z.string().min(1).default('127.0.0.1'),
    DATABASE_URL: z
      .string()
      .regex(/^(sqlite:.+|postgres(ql)?:\/\/.+)$/, 'sqlite:PATH, sqlite::memory: or postgres://...')
      .default(`sqlite:${DEFAULT_SQLITE_PATH}`),
    /** A statement may run this long (PostgreSQL), or a write wait this long for a lock (SQLite), before a 503. */
    DB_STATEMENT_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(5000),
    /** Getting a PostgreSQL connection (from the pool, connecting included) may take this long before a 503. */
    DB_CONNECT_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(2000),
    /** PostgreSQL connections one process's pool opens at most (plus its LISTEN connection); a fleet multiplies them by its processes. */
    DB_POOL_SIZE: z.coerce.number().int('a whole number of connections').min(1).max(1000).default(10),
    ATTACHMENT_STORE: z
      .string()
      .regex(/^(file:.+|s3:\/\/.+)$/, 'file:PATH or s3://bucket/prefix')
      .default('file:./data/attachments'),
    ATTACHMENT_PUBLIC_BASE_URL: z.url({ protocol: /^https?$/ }).optional(),
    // Only S3-compatible stores other than AWS need an endpoint; credentials come from the AWS SDK's standard chain.
    ATTACHMENT_S3_ENDPOINT: z.url({ protocol: /^https?$/ }).optional(),
    ATTACHMENT_S3_REGION: z
      .string()
      .regex(/^[a-z0-9-]{1,32}$/, 'an AWS region name, e.g. eu-west-1')
      .default('us-east-1'),
    /** Path-style addressing (endpoint/bucket/key); defaults to on when ATTACHMENT_S3_ENDPOINT is set. */
    ATTACHMENT_S3_FORCE_PATH_STYLE: z
      .enum(['true', 'false', '1', '0'])
      .optional()
      .transform((v) => (v === undefined ? undefined : v === 'true' || v === '1')),
    /** Days the event stream (and the device ack history) is kept: replay, the event feed and receipts reach this far back. */
    EVENT_RETENTION_DAYS: z.coerce.number().int().min(7).max(3650).default(30),
    /** Hours after its deadline an overdue event is watched for emergency.delivery_completed; after it, the overdue event stays the last word. */
    ACK_WATCH_HOURS: z.coerce.number().int().min(1).max(720).default(24),
    /** Half-way re-sends of unacknowledged events one base station gets per minute at most; more wait for the overdue event. */
    ACK_RESENDS_PER_DEVICE_PER_MINUTE: z.coerce.number().int().min(1).max(6000).default(12),
    /** Message bodies over 1 MiB received at once; beyond it 503 unavailable with Retry-After. */
    MAX_CONCURRENT_LARGE_BODIES: z.coerce.number().int().min(1).max(1000).default(4),
    /** Worker threads for heavy work off the event loop (CAP XML, the Atom feed, large bodies); default: cores − 1, 1 to 4. */
    OFFLOAD_THREADS: z.coerce
      .number()
      .int('a whole number of threads')
      .min(1)
      .max(64)
      .default(() => Math.max(1, Math.min(4, availableParallelism() - 1))),
    /** Heavy jobs waiting for a worker thread, the whole process together; beyond it 503 unavailable with Retry-After. */
    OFFLOAD_QUEUE: z.coerce.number().int('a whole number of jobs').min(1).max(100_000).default(64),
    /** Heavy jobs one key may have in flight at once; beyond it 429 rate_limited with Retry-After. */
    OFFLOAD_PER_KEY: z.coerce.number().int('a whole number of jobs').min(1).max(1000).default(2),
    MESSAGE_DEDUPE_WINDOW_SECONDS: z.coerce
      .number()
      .int()
      .min(0)
      .max(7 * 24 * 3600)
      .default(600),
    WEBHOOK_ALLOW_PRIVATE_TARGETS: booleanFlag,
    WEBHOOK_RETRY_SCHEDULE: retrySchedule.default([5, 300, 1800, 7200, 18000, 36000, 36000]),
    /** A webhook attempt succeeds on a 2xx within this time; a claimed delivery's lease is 2× this + 15 s. */
    WEBHOOK_TIMEOUT_SECONDS: z.coerce.number().positive().max(120).default(15),
    /** Requests one subscription may have in flight from one process (also its keep-alive connections). */
    WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION: z.coerce.number().int('a whole number of requests').min(1).max(1000).default(64),
    /** Requests in flight from one process, every subscription together. */
    WEBHOOK_MAX_IN_FLIGHT: z.coerce.number().int('a whole number of requests').min(1).max(100_000).default(512),
    /** Deliveries of one subscription claimed per database round, kept in reserve beyond those in flight. */
    WEBHOOK_CLAIM_BATCH: z.coerce.number().int('a whole number of deliveries').min(1).max(5000).default(128),
    /** Name servers for webhook targets (comma list of ip, ip:port or [ipv6]:port); empty: the system's. */
    WEBHOOK_DNS_SERVERS: commaList.refine((servers) => servers.every(isNameServer), 'a comma list of ip, ip:port or [ipv6]:port, e.g. 10.0.0.2,10.0.0.3:5353'),
    /** Deadline of one webhook target name's lookup; a delivery attempt that hits it fails with dns_timeout. */
    WEBHOOK_DNS_TIMEOUT_MS: z.coerce.number().int('a whole number of milliseconds').min(100).max(60_000).default(3000),
    /** Webhook target names looked up at once in one process; more wait for a slot within their deadline. */
    WEBHOOK_DNS_MAX_IN_FLIGHT: z.coerce.number().int('a whole number of lookups').min(1).max(10_000).default(32),
    /** What `serve` runs (src/roles.ts): all, or one role of a fleet (api, gateway, worker; PostgreSQL only). `--role` overrides it. */
    ROLE: z.enum(PROCESS_ROLES).default('all'),
    /** Processes of that role `serve` runs on one port (one a core, say), under a supervisor; more than 1 needs PostgreSQL. `--processes` overrides it. */
    PROCESSES: z.coerce.number().int('a whole number of processes').min(1).max(MAX_PROCESSES).default(1),
    /** `serve` delivers webhooks itself; false when only separate `emergency-api worker` processes should. */
    WEBHOOK_DELIVERY_IN_SERVE: z
      .enum(['true', 'false', '1', '0'])
      .optional()
      .transform((v) => v === undefined || v === 'true' || v === '1'),
    RATE_LIMIT_PER_KEY: z.coerce.number().positive().default(50),
    /** Failed authentications allowed per client address and second (burst 5×); beyond it 429 and no key lookup. */
    AUTH_FAILURES_PER_ADDRESS: z.coerce.number().positive().default(20),
    /** A client has this long to send its request headers (and PROXY header) or to complete a WebSocket upgrade; then it is closed. */
    HEADERS_TIMEOUT_MS: z.coerce.number().int('a whole number of milliseconds').min(100).max(600_000).default(10_000),
    /** Connections one client address may hold before one of them carries an authenticated request; more are closed at once. */
    UNAUTHENTICATED_CONNECTIONS_PER_ADDRESS: z.coerce.number().int().min(1).max(1_000_000).default(64),
    /** Proxies whose X-Forwarded-For/Forwarded name the client: a hop count, or a comma list of addresses and CIDRs; empty: none. */
    TRUST_PROXY: trustProxy,
    /** Every connection starts with a PROXY protocol header (v1 or v2) naming the client; connections without one are closed. */
    PROXY_PROTOCOL: booleanFlag,
    /** Event streams (SSE) one key may hold open at once on one instance; beyond it 429 too_many_streams. */
    STREAMS_PER_KEY: z.coerce.number().int().min(1).max(100_000).default(20),
    /**
     * Event streams (SSE) one instance holds open; beyond it 503 with Retry-After, so REST and /healthz keep answering.
     * Streams and device sockets together also stay below the open-file limit (src/edge/connection-budget.ts).
     */
    MAX_STREAMS: z.coerce.number().int().min(1).max(1_000_000).default(1000),
    /** Device sockets one org may hold on one instance unless the admin API gives it its own quota; beyond it 429 too_many_devices. */
    DEVICES_PER_ORG: z.coerce.number().int().min(0).max(1_000_000).default(10_000),
    /** Device sockets all orgs of one partner may hold on one instance unless the admin API gives the partner its own quota. */
    DEVICES_PER_PARTNER: z.coerce.number().int().min(0).max(1_000_000).default(50_000),
    /** Event streams (SSE) one org may hold on one instance unless the admin API gives it its own quota; beyond it 429 too_many_streams. */
    STREAMS_PER_ORG: z.coerce.number().int().min(0).max(1_000_000).default(200),
    /** Event streams (SSE) all orgs of one partner may hold on one instance unless the admin API gives the partner its own quota. */
    STREAMS_PER_PARTNER: z.coerce.number().int().min(0).max(1_000_000).default(500),
    /**
     * The most of an instance's long-lived connections (device sockets, streams, and both against the open-file budget) one org or one
     * partner may hold whatever its quota, so the rest stays free for the others; beyond it 503. 1 turns the reserve off.
     */
    TENANT_CONNECTION_SHARE: z.coerce.number().min(0.05).max(1).default(0.8),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    /** `auto`: readable lines on a terminal, JSON lines otherwise; `json` or `pretty` to force one. */
    LOG_FORMAT: z.enum(['auto', 'json', 'pretty']).default('auto'),
    /** A listener of its own for GET /metrics (0: any free port); set, the API port answers 404 for /metrics. */
    METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
    /** The metrics listener's address: loopback unless the monitoring network needs another (then METRICS_TOKEN is required). */
    METRICS_HOST: z.string().min(1).default('127.0.0.1'),
    /** A bearer token for GET /metrics: the API port serves it with this token only (the metrics listener requires it too). */
    METRICS_TOKEN: z
      .string()
      .min(16, 'at least 16 characters (e.g. openssl rand -hex 32)')
      .max(256)
      .regex(/^[\x21-\x7E]+$/, 'printable ASCII without spaces')
      .optional(),
    /** The origin clients reach this server at (scheme, host and port, e.g. https://alerts.example.com): the tool server's own origin. */
    PUBLIC_BASE_URL: z
      .url({ protocol: /^https?$/ })
      .optional()
      .transform((url) => (url === undefined ? undefined : new URL(url).origin)),
    /** Browser origins the tool server answers besides its own (comma list); a request from any other Origin is 403 (DNS rebinding). */
    /** Tool server sessions one key holds on one instance; opening one more ends the key's least recently used one. */
    MCP_SESSIONS_PER_KEY: z.coerce.number().int().min(1).max(10_000).default(16),
    /** Tool server sessions one instance holds; beyond it `initialize` is 503 with Retry-After (stateless calls keep working). */
    MCP_SESSIONS_MAX: z.coerce.number().int().min(1).max(1_000_000).default(1000),
    /** A tool server session without a request or an open stream for this long ends (its client gets 404 and initializes again). */
    MCP_SESSION_IDLE_SECONDS: z.coerce
      .number()
      .int()
      .min(10)
      .max(7 * 24 * 3600)
      .default(1800),
    /** Resource subscriptions one tool server session holds. */
    MCP_SUBSCRIPTIONS_PER_SESSION: z.coerce.number().int().min(1).max(10_000).default(100),
    /**
     * A sandbox instance (extensions §11, `serve --sandbox`): API keys are minted as enk_test_ and only those are taken, and every
     * event, frame, webhook, CAP document and console page says sandbox. Give it a database of its own.
     */
    SANDBOX: z
      .enum(['true', 'false', '1', '0', ''])
      .optional()
      .transform((v) => v === 'true' || v === '1'),
    /** The tool server's embedded authorization server (OAuth 2.1 sign-in with an API key on a consent page); false turns it off. */
    OAUTH_ENABLED: z
      .enum(['true', 'false', '1', '0', ''])
      .optional()
      .transform((v) => v !== 'false' && v !== '0'),
    /** Lifetime of an OAuth access token; at most an hour. */
    OAUTH_ACCESS_TOKEN_SECONDS: z.coerce.number().int().min(60).max(3600).default(3600),
    /** Lifetime of an OAuth refresh token (each use replaces it with a new one). */
    OAUTH_REFRESH_TOKEN_DAYS: z.coerce.number().int().min(1).max(365).default(30),
    /** Requests per second one client address (or /64) may make to the authorization server's endpoints, with a burst of ten times it. */
    /** An enterprise's own authorization server whose JWT access tokens the tool server also takes (with OAUTH_JWKS_URL and PUBLIC_BASE_URL). */
    OAUTH_ISSUER: z.url({ protocol: /^https?$/ }).optional(),
    /** Where OAUTH_ISSUER publishes its signing keys (a JWKS). */
    OAUTH_JWKS_URL: z.url({ protocol: /^https?$/ }).optional(),
    /** The claim of an OAUTH_ISSUER token that names the org (its id) the token acts in. */
    OAUTH_ORG_CLAIM: z.string().min(1).max(200).default('emergency_api_org_id'),
    OAUTH_REQUESTS_PER_ADDRESS: z.coerce.number().int().min(1).max(10_000).default(5),
    MCP_ALLOWED_ORIGINS: commaList.refine(
      (origins) => origins.every((o) => /^https?:\/\/[^/\s]+$/.test(o)),
      'a comma list of origins like https://agent.example.com',
    ),
    /** Origins allowed to call the APIs from a browser (comma list, or `*`); empty: no CORS headers at all. */
    CORS_ORIGINS: commaList.refine(
      (origins) => origins.every((o) => o === '*' || /^https?:\/\/[^/\s]+$/.test(o)),
      'must be * or a comma list of origins like https://console.example.com',
    ),
  })
  .superRefine((c, ctx) => {
    // An external issuer's tokens must name this server as their audience, which only PUBLIC_BASE_URL says.
    if (c.OAUTH_ISSUER !== undefined && (c.OAUTH_JWKS_URL === undefined || c.PUBLIC_BASE_URL === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: ['OAUTH_ISSUER'],
        message: "needs OAUTH_JWKS_URL (its signing keys) and PUBLIC_BASE_URL (this server's origin: tokens must name PUBLIC_BASE_URL/mcp as their audience)",
      });
    }
    // Metrics name every tenant's orgs: a listener other machines can reach serves them to the token's holder only.
    if (c.METRICS_PORT !== undefined && c.METRICS_TOKEN === undefined && !isLoopbackHost(c.METRICS_HOST)) {
      ctx.addIssue({
        code: 'custom',
        path: ['METRICS_TOKEN'],
        message: `required when METRICS_HOST (${c.METRICS_HOST}) is not a loopback address: the metrics listener of METRICS_PORT (each process's with --processes) would answer anyone who reaches it. Set METRICS_TOKEN (e.g. openssl rand -hex 32), or METRICS_HOST=127.0.0.1`,
      });
    }
    if (c.WEBHOOK_MAX_IN_FLIGHT < c.WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION) {
      ctx.addIssue({
        code: 'custom',
        path: ['WEBHOOK_MAX_IN_FLIGHT'],
        message: `must be at least WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION (${c.WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION}): one subscription could never use its concurrency`,
      });
    }
  });

export type Config = z.infer<typeof configSchema>;

export class ConfigError extends Error {}

/** What the `emergency-api` CLI reads besides the server's settings: the server its admin commands go to. */
export interface CliSettings {
  /** EMERGENCY_API_URL: a server whose admin API runs the admin commands (with EMERGENCY_API_ADMIN_KEY). */
  apiUrl: string | undefined;
  /** EMERGENCY_API_ADMIN_KEY: an admin key of that server (enk_adm_...). */
  adminKey: string | undefined;
  /** EMERGENCY_API_ADMIN_KEY_FILE: a file holding that key, so that it appears in no environment listing either. */
  adminKeyFile: string | undefined;
  /** DATABASE_URL is set, rather than left to its default. */
  databaseUrlSet: boolean;
}

export function loadCliSettings(env: Record<string, string | undefined> = process.env): CliSettings {
  const value = (name: string) => (env[name] === undefined || env[name] === '' ? undefined : env[name]);
  return {
    apiUrl: value('EMERGENCY_API_URL'),
    adminKey: value('EMERGENCY_API_ADMIN_KEY'),
    adminKeyFile: value('EMERGENCY_API_ADMIN_KEY_FILE'),
    databaseUrlSet: value('DATABASE_URL') !== undefined,
  };
}

/** The only reader of the environment: a bad value stops the process with a message naming the variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const picked: Record<string, string> = {};
  for (const key of Object.keys(configSchema.shape)) {
    const value = env[key];
    if (value !== undefined && value !== '') picked[key] = value;
  }
  const result = configSchema.safeParse(picked);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  return result.data;
}

/** Variables of the CLI that are not settings of the service. */
const CLI_VARIABLES = ['EMERGENCY_API_URL', 'EMERGENCY_API_ADMIN_KEY', 'EMERGENCY_API_ADMIN_KEY_FILE'];

/**
 * Variables that look meant for this service but that it does not read: any EMERGENCY_* one it does not know, and any one
 * a letter or two away from a setting (DATABSE_URL). Each is named with the setting it is probably meant to be, so a typo
 * is not silently ignored.
 */
export function unknownSettingWarnings(env: Record<string, string | undefined> = process.env): string[] {
  const known = [...Object.keys(configSchema.shape), ...CLI_VARIABLES];
  const closest = (name: string) =>
    known.map((k) => ({ k, d: editDistance(name, k) })).reduce((best, c) => (c.d < best.d ? c : best), { k: '', d: Number.POSITIVE_INFINITY });
  const warnings: string[] = [];
  for (const name of Object.keys(env).sort()) {
    if (known.includes(name) || !/^[A-Z][A-Z0-9_]{3,}$/.test(name)) continue;
    const near = closest(name);
    const typo = near.d <= (near.k.length >= 10 ? 2 : 1) && name.includes('_');
    if (!typo && !name.startsWith('EMERGENCY_')) continue;
    const hint = near.d <= 3 ? ` (did you mean ${near.k}?)` : '';
    warnings.push(`${name} is set but is not a setting of emergency-api, so it is ignored${hint}`);
  }
  return warnings;
}
