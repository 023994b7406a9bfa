import { readFileSync } from 'node:fs';
import { type CliSettings, ConfigError, loadCliSettings, loadConfig, unknownSettingWarnings } from '../config.js';
import type { AppContext } from '../context.js';
import { AdminApi, type AdminTarget } from './admin-api.js';
import { type CliArgs, type CliCommand, isAdminCommand, UsageError } from './command.js';
import { isLoopbackHost } from '../edge/loopback-host.js';
import { CommandFailure } from './failure.js';
import { redactSecrets } from './redact.js';

/** Exit code when a command that must not create a database finds no SQLite file (sysexits' EX_NOINPUT). */
export const EXIT_NO_DATABASE = 66;

/**
 * `--url URL`, `--admin-key-file PATH` and `--insecure`: the server an admin command runs on, over its admin API.
 * `--admin-key KEY` is still read for old scripts, with a warning: a key on the command line is visible to every
 * user of the machine (ps) and stays in shell history.
 */
export interface RemoteFlags {
  url?: string;
  adminKey?: string;
  adminKeyFile?: string;
  insecure?: boolean;
}

const REMOTE_FLAGS: Record<string, keyof RemoteFlags> = {
  '--url': 'url',
  '--admin-key': 'adminKey',
  '--admin-key-file': 'adminKeyFile',
  '--insecure': 'insecure',
};

/**
 * Takes the remote flags (`--url X` or `--url=X`, `--insecure`) out of the arguments: before the command words only
 * (`leading`), or anywhere except where the command has an option of that name (`admin webhook create --url`
 * is the receiver's URL: there the server's goes before the command words).
 */
export function takeRemoteFlags(args: string[], options: { leading?: boolean; own?: string[] } = {}): { rest: string[]; flags: RemoteFlags } {
  const rest: string[] = [];
  const flags: RemoteFlags = {};
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const [name, inline] = arg.startsWith('--') && arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    const field = REMOTE_FLAGS[name];
    if (!field || options.own?.includes(name.slice(2))) {
      if (options.leading) return { rest: [...rest, ...args.slice(i)], flags };
      rest.push(arg);
      continue;
    }
    if (field === 'insecure') {
      if (inline !== undefined) throw new UsageError('--insecure takes no value');
      flags.insecure = true;
      continue;
    }
    const value = inline ?? args[++i];
    if (value === undefined || value === '') throw new UsageError(`${name} needs a value`);
    flags[field] = value;
  }
  return { rest, flags };
}

/** Any remote flag given: a command without an admin route refuses them. */
export const hasRemoteFlags = (flags: RemoteFlags) => Object.values(flags).some((v) => v !== undefined);

/** The admin key and the setting that gave it: the flags win over the environment; a key file is read here. */
function adminKeyOf(flags: RemoteFlags, settings: CliSettings): { adminKey: string | undefined; keySetting: string } {
  if (flags.adminKeyFile !== undefined && flags.adminKey !== undefined) {
    throw new ConfigError('give the admin key once: --admin-key-file PATH (or EMERGENCY_API_ADMIN_KEY), not --admin-key as well.');
  }
  if (flags.adminKeyFile !== undefined) return { adminKey: readKeyFile(flags.adminKeyFile, '--admin-key-file'), keySetting: '--admin-key-file' };
  if (flags.adminKey !== undefined) return { adminKey: flags.adminKey, keySetting: '--admin-key' };
  if (settings.adminKey !== undefined && settings.adminKeyFile !== undefined) {
    throw new ConfigError('EMERGENCY_API_ADMIN_KEY and EMERGENCY_API_ADMIN_KEY_FILE are both set: unset one of them.');
  }
  if (settings.adminKeyFile !== undefined) {
    return { adminKey: readKeyFile(settings.adminKeyFile, 'EMERGENCY_API_ADMIN_KEY_FILE'), keySetting: 'EMERGENCY_API_ADMIN_KEY_FILE' };
  }
  return { adminKey: settings.adminKey, keySetting: 'EMERGENCY_API_ADMIN_KEY' };
}

/** The key a file holds (surrounding whitespace and a final newline ignored); its content is never shown. */
function readKeyFile(path: string, setting: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as { code?: string }).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : code === 'EISDIR' ? 'a directory' : (code ?? 'unreadable');
    throw new ConfigError(`${setting} names ${path}, which cannot be read (${why}): it must be a file holding an admin key of the server (enk_adm_...).`);
  }
  const key = text.trim();
  if (key === '') throw new ConfigError(`${setting} names ${path}, which is empty: it must hold an admin key of the server (enk_adm_...).`);
  return key;
}

/** Whether a value looks like a key or token of this service rather than a URL (the most likely mix-up of two arguments). */
const looksLikeSecret = (value: string) => /enk_[a-z]{2,8}_/i.test(value);

/** The server admin commands go to: flags win over the environment; null when neither names one. */
export function remoteTarget(flags: RemoteFlags, settings: CliSettings): AdminTarget | null {
  const url = flags.url ?? settings.apiUrl;
  const urlSetting = flags.url ? '--url' : 'EMERGENCY_API_URL';
  if (
    url === undefined &&
    flags.adminKey === undefined &&
    flags.adminKeyFile === undefined &&
    settings.adminKey === undefined &&
    settings.adminKeyFile === undefined
  ) {
    return null;
  }
  if (url !== undefined && looksLikeSecret(url)) {
    throw new ConfigError(
      `${urlSetting} holds a key, not a URL (not shown): give the server's base URL there, e.g. https://emergency.example.org, ` +
        'and the admin key in EMERGENCY_API_ADMIN_KEY or in a file named by --admin-key-file.',
    );
  }
  const { adminKey, keySetting } = adminKeyOf(flags, settings);
  if (url === undefined) {
    throw new ConfigError(
      `${keySetting} is set but no server is named: set EMERGENCY_API_URL (or give --url before the command words) to run over the admin API, or unset ${keySetting} to work on the database.`,
    );
  }
  if (adminKey === undefined) {
    throw new ConfigError(
      `${urlSetting} names a server but no admin key is given: set EMERGENCY_API_ADMIN_KEY or EMERGENCY_API_ADMIN_KEY_FILE (or give --admin-key-file PATH), an admin key of that server (enk_adm_...).`,
    );
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ConfigError(`${urlSetting} must be the server's base URL, e.g. http://127.0.0.1:8080 (got "${redactSecrets(url)}").`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new ConfigError(`${urlSetting} must be an http:// or https:// URL, e.g. http://127.0.0.1:8080.`);
  }
  // Over plain HTTP the key would cross the network readable by anyone on the way; only this machine is safe without TLS.
  if (parsed.protocol === 'http:' && !isLoopbackHost(parsed.hostname) && !flags.insecure) {
    throw new ConfigError(
      `${urlSetting} is http:// to ${parsed.hostname}, another machine: the admin key would cross the network unencrypted. ` +
        'Use https://, or give --insecure to send it over plain HTTP anyway (a network you trust).',
    );
  }
  if (!adminKey.startsWith('enk_adm_')) {
    throw new ConfigError(`${keySetting} must be an admin key (enk_adm_...)${adminKey.startsWith('enk_live_') ? ', not an API key of the public API' : ''}.`);
  }
  // The base URL, or the admin API's own URL: both name the server.
  const base = `${parsed.origin}${parsed.pathname}`.replace(/\/+$/, '').replace(/\/api\/admin\/v1$/, '');
  return { url: base, adminKey, urlSetting, keySetting, plainHttpElsewhere: parsed.protocol === 'http:' && !isLoopbackHost(parsed.hostname) };
}

/** Where a command's messages for the operator go: stderr (with `--json`, one JSON object a line `{"note",...fields}`), never stdout. */
export interface CommandIo {
  json: boolean;
  note(text: string, fields?: Record<string, unknown>): void;
}

/**
 * Runs a command where it belongs: an admin command over the admin API when a server and admin key are given,
 * otherwise on the database; a command without an admin route on the database (or standalone).
 */
export async function runCommand(name: string, command: CliCommand, args: CliArgs, flags: RemoteFlags, io: CommandIo): Promise<unknown> {
  const settings = loadCliSettings();
  for (const warning of unknownSettingWarnings()) io.note(`warning: ${warning}`);
  if (isAdminCommand(command)) {
    // Parsed first: a usage error is reported before anything is opened or sent.
    const input = command.input(args);
    const target = remoteTarget(flags, settings);
    if (target) {
      if (target.keySetting === '--admin-key') {
        io.note(
          'warning: --admin-key puts the admin key on the command line, where other users of this machine can read it (ps) and shell history keeps it; ' +
            'set EMERGENCY_API_ADMIN_KEY or EMERGENCY_API_ADMIN_KEY_FILE, or give --admin-key-file PATH, instead',
        );
      }
      if (target.plainHttpElsewhere) io.note(`warning: --insecure: the admin key goes to ${target.url} over plain HTTP, unencrypted`);
      return command.remote(new AdminApi(target), input);
    }
    return onDatabase(name, command, settings, io, true, (ctx) => command.local(ctx, input));
  }
  if (hasRemoteFlags(flags)) {
    throw new UsageError(`"${name}" has no admin API route: it takes no --url, --admin-key-file or --insecure`);
  }
  if (command.standalone) {
    if (settings.apiUrl) io.note(`note: EMERGENCY_API_URL is set, but "${name}" does not use it: only the admin commands run over the admin API`);
    return command.run(args);
  }
  if (settings.apiUrl) {
    // The default SQLite file would be a new, empty database next to wherever the command was typed.
    if (!settings.databaseUrlSet) {
      throw new CommandFailure(
        `"${name}" works on a database, never over the admin API, and EMERGENCY_API_URL names a server while DATABASE_URL is unset: ` +
          `set DATABASE_URL to the database "${name}" should work on (the server's), or unset EMERGENCY_API_URL to use the default database.`,
        2,
      );
    }
    io.note(`note: EMERGENCY_API_URL is set, but "${name}" works on the database of DATABASE_URL, not on that server`);
  }
  return onDatabase(name, command, settings, io, command.migrateFirst !== false, (ctx) => command.run({ ...args, ctx }));
}

/** Opens the database of DATABASE_URL (saying which on stderr), applies pending migrations unless told not to, runs `fn`, closes it. */
async function onDatabase<R>(
  name: string,
  command: CliCommand,
  settings: CliSettings,
  io: CommandIo,
  migrateFirst: boolean,
  fn: (ctx: AppContext) => Promise<R>,
): Promise<R> {
  // Loaded only now: help, usage errors and remote commands answer without the database layer.
  const [{ createContext }, { migrateToLatest }, { DatabaseMissingError, DatabaseDirectoryMissingError }] = await Promise.all([
    import('../create-context.js'),
    import('../db/migrate.js'),
    import('../db/connect.js'),
  ]);
  const config = loadConfig();
  const source = settings.databaseUrlSet ? 'DATABASE_URL' : 'DATABASE_URL unset: the default';
  let ctx: AppContext;
  try {
    ctx = createContext(config, { createDatabase: command.createsDatabase === true });
  } catch (err) {
    if (err instanceof DatabaseDirectoryMissingError) {
      throw new CommandFailure(
        `the directory ${err.directory} of ${err.location} (${source}) does not exist, so this would start a new, empty database.\n` +
          `Check DATABASE_URL (a typo?), or create the directory first (mkdir -p ${err.directory}).`,
        EXIT_NO_DATABASE,
        { database: err.location },
      );
    }
    if (!(err instanceof DatabaseMissingError)) throw err;
    throw new CommandFailure(
      `no database at ${err.location} (${source}), and "${name}" does not create one.\n` +
        "Set DATABASE_URL to the server's database, or set EMERGENCY_API_URL and EMERGENCY_API_ADMIN_KEY (or give --url and --admin-key-file) " +
        'to run the command over the server\'s admin API; "emergency-api migrate" creates a new database.',
      EXIT_NO_DATABASE,
      { database: err.location },
    );
  }
  try {
    io.note(`using database ${ctx.db.describe} (${source})`, { database: ctx.db.describe });
    if (migrateFirst) {
      const applied = await migrateToLatest(ctx.db);
      if (applied.length > 0 && !io.json) io.note(`note: applied ${applied.length} pending database migration(s) first`);
    }
    return await fn(ctx);
  } finally {
    await ctx.db.close();
  }
}
