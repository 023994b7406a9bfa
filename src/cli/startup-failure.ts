import { constants } from 'node:fs';
import { access, mkdir, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { DatabaseDirectoryMissingError } from '../db/handle.js';
import type { Config } from '../config.js';

/**
 * Exit codes of `serve` by the kind of start-up failure, so that a supervisor or a script can tell them apart
 * ("Start-up" in docs/operations.md). 78 (invalid configuration) is set in main.ts; anything else exits 1.
 */
export const STARTUP_EXIT_CODES = {
  databaseUnreachable: 80,
  databaseMissing: 81,
  databaseCredentials: 82,
  dataDirectory: 83,
  addressUnresolvable: 84,
  portInUse: 85,
  portPermission: 86,
  roleNeedsPostgres: 87,
} as const;

/** A start-up failure explained in a line or two that name the setting: printed without a stack trace. */
export class StartupFailure extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

/**
 * A role of a fleet (src/roles.ts), or several processes of any role (`--processes`), run beside other processes
 * on one database, which SQLite does not support: such a start is refused before anything is opened.
 */
export function checkRoleDatabase(role: string, config: Config, processes = 1): void {
  if (!config.DATABASE_URL.startsWith('sqlite:')) return;
  if (processes > 1) {
    throw new StartupFailure(
      `--processes ${processes} (or PROCESSES) runs ${processes} processes sharing one database, but DATABASE_URL=${config.DATABASE_URL} is SQLite.\n` +
        'Set DATABASE_URL=postgres://... to run several processes, or run one process (--processes 1, the default).',
      STARTUP_EXIT_CODES.roleNeedsPostgres,
    );
  }
  if (role === 'all') return;
  throw new StartupFailure(
    `role ${role} (--role or ROLE) runs as one process of a fleet sharing one PostgreSQL database, but DATABASE_URL=${config.DATABASE_URL} is SQLite.\n` +
      'Set DATABASE_URL=postgres://... for every process of the fleet, or run one process with --role all (the default).',
    STARTUP_EXIT_CODES.roleNeedsPostgres,
  );
}

/** What `serve` was doing when it failed: it tells which setting a system error is about. */
export type StartupStep = 'database' | 'attachments' | 'listen';

interface SystemError {
  code?: string;
  message?: string;
  syscall?: string;
  path?: string;
  name?: string;
  cause?: unknown;
}

/** Why a directory could not be created or used, from mkdir's error. */
function notADirectory(err: SystemError, fallback: string): string {
  const path = err.path ?? fallback;
  return err.code === 'EEXIST' ? `${path} is a file, not a directory` : `${path} cannot be a directory: a part of its path is a file`;
}

/** DATABASE_URL without its password, to be printed. */
function shownDatabaseUrl(url: string): string {
  if (url.startsWith('sqlite:')) return url;
  try {
    const parsed = new URL(url);
    parsed.password = '';
    return parsed.toString();
  } catch {
    return 'postgres://...';
  }
}

function databaseFailure(err: SystemError, config: Config): StartupFailure | null {
  if (err instanceof DatabaseDirectoryMissingError) {
    return new StartupFailure(
      `DATABASE_URL=${config.DATABASE_URL}: the directory ${err.directory} does not exist, so this would start a new, empty database.\n` +
        `Check the path (a typo?), or create the directory first (mkdir -p ${err.directory}) to start a new database there.`,
      STARTUP_EXIT_CODES.dataDirectory,
    );
  }
  const code = err.code ?? '';
  const message = err.message ?? '';
  const url = shownDatabaseUrl(config.DATABASE_URL);
  if (config.DATABASE_URL.startsWith('sqlite:')) {
    const file = config.DATABASE_URL.slice('sqlite:'.length);
    const directory = dirname(resolve(file));
    if (code === 'EEXIST' || code === 'ENOTDIR') {
      return new StartupFailure(
        `DATABASE_URL=${url}: ${notADirectory(err, directory)}.\nPoint DATABASE_URL at a file in a directory this process can write (e.g. sqlite:./data/emergency.db).`,
        STARTUP_EXIT_CODES.dataDirectory,
      );
    }
    if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS' || code.startsWith('SQLITE_CANTOPEN') || code.startsWith('SQLITE_READONLY')) {
      return new StartupFailure(
        `DATABASE_URL=${url}: cannot create or write the database in ${directory} (${code}).\nGive this process write access to that directory, or point DATABASE_URL elsewhere.`,
        STARTUP_EXIT_CODES.dataDirectory,
      );
    }
    return null;
  }
  if (code === '3D000') {
    const parsed = new URL(config.DATABASE_URL);
    const name = decodeURIComponent(parsed.pathname.slice(1)) || '(none)';
    // A socket directory may be given as ?host=/path instead of a host name.
    const host = parsed.hostname || parsed.searchParams.get('host') || 'localhost';
    const port = parsed.port || '5432';
    const user = parsed.username ? ` -U ${decodeURIComponent(parsed.username)}` : '';
    return new StartupFailure(
      `DATABASE_URL=${url}: the database "${name}" does not exist on ${host}:${port}.\nCreate it (createdb -h ${host} -p ${port}${user} ${name}) or fix DATABASE_URL.`,
      STARTUP_EXIT_CODES.databaseMissing,
    );
  }
  if (code === '28P01' || code === '28000') {
    return new StartupFailure(
      `DATABASE_URL=${url}: PostgreSQL refused the credentials (${message}).\nFix the user or password in DATABASE_URL, or the server's pg_hba.conf.`,
      STARTUP_EXIT_CODES.databaseCredentials,
    );
  }
  const unreachable =
    /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|EAI_AGAIN)$/.test(code) ||
    /^(57P03|08...)$/.test(code) ||
    /^(timeout exceeded when trying to connect|Connection terminated)/.test(message);
  if (unreachable) {
    const why =
      code && !/^(57P03|08...)$/.test(code)
        ? code
        : /timeout/.test(message)
          ? `no answer within DB_CONNECT_TIMEOUT_MS=${config.DB_CONNECT_TIMEOUT_MS}`
          : message;
    return new StartupFailure(
      `DATABASE_URL=${url}: cannot reach the database (${why}).\nStart PostgreSQL or fix the host and port in DATABASE_URL.`,
      STARTUP_EXIT_CODES.databaseUnreachable,
    );
  }
  return null;
}

function attachmentFailure(err: SystemError, config: Config): StartupFailure | null {
  const code = err.code ?? '';
  if (code === 'EEXIST' || code === 'ENOTDIR') {
    return new StartupFailure(
      `ATTACHMENT_STORE=${config.ATTACHMENT_STORE}: ${notADirectory(err, config.ATTACHMENT_STORE.slice('file:'.length))}.\nPoint ATTACHMENT_STORE at a directory this process can write (e.g. file:./data/attachments).`,
      STARTUP_EXIT_CODES.dataDirectory,
    );
  }
  if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') {
    return new StartupFailure(
      `ATTACHMENT_STORE=${config.ATTACHMENT_STORE}: ${err.path ?? 'its directory'} is not writable (${code}).\nGive this process write access to it, or point ATTACHMENT_STORE elsewhere.`,
      STARTUP_EXIT_CODES.dataDirectory,
    );
  }
  return null;
}

function listenFailure(err: SystemError, config: Config): StartupFailure | null {
  // The metrics listener's failure carries the system error as its cause (src/server.ts).
  const metrics = err.name === 'MetricsListenerError';
  const cause = (metrics ? err.cause : err) as SystemError | undefined;
  const code = cause?.code ?? '';
  const [hostVar, portVar] = metrics ? ['METRICS_HOST', 'METRICS_PORT'] : ['HOST', 'PORT'];
  const host = metrics ? config.METRICS_HOST : config.HOST;
  const port = metrics ? config.METRICS_PORT : config.PORT;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_NONAME') {
    return new StartupFailure(
      `${hostVar}=${host}: the name cannot be resolved (${code}).\nSet ${hostVar} to an address of this machine, e.g. 127.0.0.1 (or 0.0.0.0 in a container).`,
      STARTUP_EXIT_CODES.addressUnresolvable,
    );
  }
  if (code === 'EADDRNOTAVAIL') {
    return new StartupFailure(
      `${hostVar}=${host}: not an address of this machine (${code}).\nSet ${hostVar} to an address of this machine, e.g. 127.0.0.1 (or 0.0.0.0 in a container).`,
      STARTUP_EXIT_CODES.addressUnresolvable,
    );
  }
  if (code === 'EADDRINUSE') {
    return new StartupFailure(
      `${portVar}=${port}: the port is already in use on ${host}.\nStop the process that holds it, or choose another port (e.g. ${portVar}=${Number(port) === 8081 ? 8082 : 8081}).`,
      STARTUP_EXIT_CODES.portInUse,
    );
  }
  if (code === 'EACCES' || code === 'EPERM') {
    return new StartupFailure(
      `${portVar}=${port} on ${hostVar}=${host}: no permission to listen there (${code}).\nPorts below 1024 need privileges: choose ${portVar}=1024 or above (e.g. 8080), or another ${hostVar}.`,
      STARTUP_EXIT_CODES.portPermission,
    );
  }
  return null;
}

/** The explanation of a failure of one start-up step, or null for a failure of no known kind. */
export function explainStartupFailure(step: StartupStep, err: unknown, config: Config): StartupFailure | null {
  if (err instanceof StartupFailure) return err;
  if (!err || typeof err !== 'object') return null;
  const e = err as SystemError;
  if (step === 'database') return databaseFailure(e, config);
  if (step === 'attachments') return attachmentFailure(e, config);
  return listenFailure(e, config);
}

/** Runs one start-up step; a failure of a known kind is replaced by its explanation. */
export async function startupStep<T>(step: StartupStep, config: Config, run: () => T | Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    throw explainStartupFailure(step, err, config) ?? err;
  }
}

/**
 * A `file:` attachment store's directory, created when missing and checked writable at start rather than at the
 * first upload, which would fail a message long after the start was reported as successful.
 */
export async function prepareAttachmentDirectory(config: Config): Promise<void> {
  if (!config.ATTACHMENT_STORE.startsWith('file:')) return;
  const root = resolve(config.ATTACHMENT_STORE.slice('file:'.length));
  await mkdir(root, { recursive: true });
  if (!(await stat(root)).isDirectory()) throw Object.assign(new Error(`${root} is not a directory`), { code: 'EEXIST', path: root });
  await access(root, constants.W_OK);
}
