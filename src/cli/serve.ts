import { createContext } from '../create-context.js';
import { type Config, loadConfig } from '../config.js';
import { migrateToLatest, migrationsSummary } from '../db/migrate.js';
import { migrations } from '../db/migrations/index.js';
import { type CliCommand, databaseCommand, UsageError } from './command.js';
import { provisionDemo, provisionDemoKeys, withDemoDefaults } from './demo.js';
import { isProcessRole, MAX_PROCESSES, PROCESS_ROLES } from '../roles.js';
import { isSupervisedProcess, processCount, reportListening, superviseProcesses } from './serve-processes.js';
import { checkRoleDatabase, prepareAttachmentDirectory, startupStep } from './startup-failure.js';

const SHUTDOWN_TIMEOUT_MS = 10_000;

const plural = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`;

/** What `serve --demo` prints once it listens: the keys (shown once), the console and a first request. */
function demoBanner(url: string, database: string, config: Config, { demo, revoked }: Awaited<ReturnType<typeof provisionDemoKeys>>): string {
  const base = `${url}/api/public/v1`;
  return `${[
    '',
    `emergency-api is listening on ${url} (database ${database})`,
    `  demo org id : ${demo.orgId}`,
    `  demo API key: ${demo.key}   (shown once)`,
    `  admin key   : ${demo.adminKey}   (shown once; the admin API at ${url}/api/admin/v1)`,
    `  console     : ${url}/console   (sign in with either key)`,
    '',
    'For the commands of the README and docs/, in the shell you run them from:',
    `  export BASE=${base} ORG=${demo.orgId} KEY=${demo.key}`,
    `  export ADMIN=${url}/api/admin/v1 AK=${demo.adminKey} EMERGENCY_API_URL=${url} EMERGENCY_API_ADMIN_KEY=${demo.adminKey}`,
    revoked.apiKeyIds.length + revoked.adminKeyIds.length > 0
      ? `  earlier demo keys: ${plural(revoked.apiKeyIds.length, 'API key')} and ${plural(revoked.adminKeyIds.length, 'admin key')} revoked; only the keys above work`
      : null,
    config.WEBHOOK_ALLOW_PRIVATE_TARGETS
      ? '  webhooks    : local receivers (http://127.0.0.1:...) accepted in demo mode; WEBHOOK_ALLOW_PRIVATE_TARGETS=false to refuse them'
      : '  webhooks    : public https receivers only (WEBHOOK_ALLOW_PRIVATE_TARGETS=false)',
    '',
    'Declare an emergency:',
    `  curl -s -X POST ${base}/orgs/${demo.orgId}/emergencies \\`,
    `    -H "Authorization: Bearer ${demo.key}" -H "Content-Type: application/json" \\`,
    `    -d '{"categoryName":"Fire","description":"Smoke on floor 2"}'`,
    '',
  ]
    .filter((line) => line !== null)
    .join('\n')}\n`;
}

export const serveCommands: Record<string, CliCommand> = {
  serve: {
    summary: 'run the server: REST, admin API, MCP, device gateway and webhook delivery',
    options: {
      role: {
        type: 'string',
        value: 'ROLE',
        description: `what this process runs: ${PROCESS_ROLES.join(', ')} (default ROLE, else all); roles other than all need PostgreSQL`,
      },
      processes: {
        type: 'string',
        value: 'N',
        description: `run N processes of the role sharing PORT, under a supervisor that restarts them (default PROCESSES, else 1; at most ${MAX_PROCESSES}); more than 1 needs PostgreSQL`,
      },
      sandbox: {
        type: 'boolean',
        description: 'run a sandbox instance (SANDBOX=true): enk_test_ keys only, everything it sends marked sandbox; give it its own DATABASE_URL',
      },
      demo: {
        type: 'boolean',
        description:
          'provision a demo org (or reuse it), print a fresh API key and admin key (revoking the previous demo keys); accept local webhook receivers; with --role all or api',
      },
    },
    json: false,
    details: [
      'Reads its configuration from the environment (PORT, HOST, DATABASE_URL, ...); applies pending migrations; stops on SIGTERM or SIGINT.',
      'A start-up failure prints what to change and exits with a code of its kind ("Start-up" in docs/operations.md).',
      'Roles ("Roles and fleets" in docs/operations.md): api serves REST, MCP, docs and the console; gateway the device sockets and event streams; worker webhook delivery, deadlines and retention; all of them in one process by default.',
      'With --processes N, process i listens on METRICS_PORT + i; SIGTERM or SIGINT to the supervisor stops them all.',
    ],
    standalone: true,
    run: async ({ values }) => {
      const demo = values.demo === true;
      const env = values.sandbox === true ? { ...process.env, SANDBOX: 'true' } : process.env;
      const config = loadConfig(demo ? withDemoDefaults(env) : env);
      const role = typeof values.role === 'string' ? values.role : config.ROLE;
      if (!isProcessRole(role)) throw new UsageError(`--role must be one of ${PROCESS_ROLES.join(', ')}`);
      const processes = processCount(values.processes, config);
      if (demo && role !== 'all' && role !== 'api') throw new UsageError('--demo provisions through the API: use it with --role all or api');
      if (demo && processes > 1) throw new UsageError('--demo prints its keys from one process: use it without --processes (or PROCESSES) above 1');
      checkRoleDatabase(role, config, processes);
      const ctx = await startupStep('database', config, () => createContext(config));
      const applied = await startupStep('database', config, () => migrateToLatest(ctx.db));
      if (applied.length > 0) process.stderr.write(`${migrationsSummary(applied)}\n`);
      await startupStep('attachments', config, () => prepareAttachmentDirectory(config));
      if (processes > 1 && !isSupervisedProcess()) {
        // Migrated once here, so that the processes do not race to; each opens the database itself.
        await ctx.db.close();
        superviseProcesses({ role, processes, config, shutdownTimeoutMs: SHUTDOWN_TIMEOUT_MS, applied });
        return undefined;
      }
      // The web stack is loaded by this command only, not by every command of the CLI.
      const { startServer } = await import('../server.js');
      const server = await startupStep('listen', config, () => startServer(config, ctx, { role }));
      if (applied.length > 0) server.app.log.info({ migrations: applied }, migrationsSummary(applied));
      server.app.log.info({ role }, `serving as role ${role}`);
      if (server.metricsUrl) server.app.log.info({ url: `${server.metricsUrl}/metrics` }, 'metrics listener started');
      const shutdown = async (signal: string) => {
        server.app.log.info({ signal }, 'shutting down');
        const timer = setTimeout(() => process.exit(1), SHUTDOWN_TIMEOUT_MS);
        timer.unref();
        await server.stop();
        await ctx.db.close();
        process.exit(0);
      };
      if (isSupervisedProcess()) {
        // Ctrl-C reaches a supervised process twice, from the terminal and through the supervisor: one shutdown.
        let stopping = false;
        const onSignal = (signal: string) => {
          if (stopping) return;
          stopping = true;
          void shutdown(signal);
        };
        process.on('SIGTERM', onSignal);
        process.on('SIGINT', onSignal);
        reportListening(Number(new URL(server.url).port));
      } else {
        process.once('SIGTERM', () => void shutdown('SIGTERM'));
        process.once('SIGINT', () => void shutdown('SIGINT'));
      }
      // Keys are minted only once the server listens: a start that fails leaves no new key behind.
      if (demo) process.stdout.write(demoBanner(server.url, ctx.db.describe, config, await provisionDemoKeys(ctx)));
      return undefined;
    },
  },
  migrate: databaseCommand({
    summary: 'apply pending database migrations and name the ones applied',
    json: 'print {"applied":[names]} on stdout instead of text',
    // Not applied before it runs, so that it reports what it applied itself.
    migrateFirst: false,
    // The way to create a new database (DATABASE_URL unset: sqlite:./data/emergency.db).
    createsDatabase: true,
    run: async ({ ctx }) => ({ applied: await migrateToLatest(ctx.db) }),
    human: ({ applied }: { applied: string[] }) => {
      const total = Object.keys(migrations).length;
      if (applied.length === 0) return `Database already up to date (${total} migrations applied).`;
      return [`Applied ${applied.length} migration${applied.length === 1 ? '' : 's'}:`, ...applied.map((name) => `  ${name}`)].join('\n');
    },
  }),
  'admin demo': databaseCommand({
    summary: 'provision a demo org with categories and users (or reuse it); prints a fresh API key and admin key once',
    createsDatabase: true,
    run: ({ ctx }) => provisionDemo(ctx),
  }),
};
