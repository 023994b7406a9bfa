import { isIP } from 'node:net';
import { z } from 'zod';
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

const configSchema = z
  .object({
    PORT: z.coerce.number().int().min(0).max(65535).default(8080),
    HOST: z.string().min(1).default('127.0.0.1'),
    DATABASE_URL: z
      .string()
      .regex(/^(sqlite:.+|postgres(ql)?:\/\/.+)$/, 'sqlite:PATH, sqlite::memory: or postgres://...')
      .default('sqlite:./data/emergency.db'),
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
    /** Message bodies over 1 MiB received at once; beyond it 503 unavailable with Retry-After. */
    MAX_CONCURRENT_LARGE_BODIES: z.coerce.number().int().min(1).max(1000).default(4),
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
    /** Event streams (SSE) one key may hold open at once on one instance; beyond it 429 too_many_streams. */
    STREAMS_PER_KEY: z.coerce.number().int().min(1).max(100_000).default(20),
    /**
     * Event streams (SSE) one instance holds open; beyond it 503 with Retry-After, so REST and /healthz keep answering.
     * Streams and device sockets together also stay below the open-file limit (src/edge/connection-budget.ts).
     */
    MAX_STREAMS: z.coerce.number().int().min(1).max(1_000_000).default(1000),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    /** `auto`: readable lines on a terminal, JSON lines otherwise; `json` or `pretty` to force one. */
    LOG_FORMAT: z.enum(['auto', 'json', 'pretty']).default('auto'),
    /** A listener of its own for GET /metrics (0: any free port); set, the API port answers 404 for /metrics. */
    METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
    /** The metrics listener's address: loopback unless the monitoring network needs another. */
    METRICS_HOST: z.string().min(1).default('127.0.0.1'),
    /** A bearer token for GET /metrics: the API port serves it with this token only (the metrics listener requires it too). */
    METRICS_TOKEN: z
      .string()
      .min(16, 'at least 16 characters (e.g. openssl rand -hex 32)')
      .max(256)
      .regex(/^[\x21-\x7E]+$/, 'printable ASCII without spaces')
      .optional(),
    /** Origins allowed to call the APIs from a browser (comma list, or `*`); empty: no CORS headers at all. */
    CORS_ORIGINS: commaList.refine(
      (origins) => origins.every((o) => o === '*' || /^https?:\/\/[^/\s]+$/.test(o)),
      'must be * or a comma list of origins like https://console.example.com',
    ),
  })
  .superRefine((c, ctx) => {
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
  /** DATABASE_URL is set, rather than left to its default. */
  databaseUrlSet: boolean;
}

export function loadCliSettings(env: Record<string, string | undefined> = process.env): CliSettings {
  const value = (name: string) => (env[name] === undefined || env[name] === '' ? undefined : env[name]);
  return { apiUrl: value('EMERGENCY_API_URL'), adminKey: value('EMERGENCY_API_ADMIN_KEY'), databaseUrlSet: value('DATABASE_URL') !== undefined };
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
