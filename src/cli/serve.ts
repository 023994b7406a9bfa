import { createContext } from '../create-context.js';
import { loadConfig } from '../config.js';
import { migrateToLatest } from '../db/migrate.js';
import { migrations } from '../db/migrations/index.js';
import type { CliCommand } from './command.js';
import { provisionDemo } from './demo.js';

const SHUTDOWN_TIMEOUT_MS = 10_000;

export const serveCommands: Record<string, CliCommand> = {
  serve: {
    summary: 'run the server: REST, admin API, MCP, device gateway and webhook delivery',
    options: { demo: { type: 'boolean', description: 'provision a demo org (or reuse it) and print a fresh API key and admin key' } },
    json: false,
    details: ['Reads its configuration from the environment (PORT, HOST, DATABASE_URL, ...); applies pending migrations; stops on SIGTERM or SIGINT.'],
    standalone: true,
    run: async ({ values }) => {
      const config = loadConfig();
      const ctx = createContext(config);
      await migrateToLatest(ctx.db);
      const demo = values.demo ? await provisionDemo(ctx) : null;
      // The web stack is loaded by this command only, not by every command of the CLI.
      const { startServer } = await import('../server.js');
      const server = await startServer(config, ctx);
      if (server.metricsUrl) server.app.log.info({ url: `${server.metricsUrl}/metrics` }, 'metrics listener started');
      if (demo) {
        const base = `${server.url}/api/public/v1`;
        process.stdout.write(
          `${[
            '',
            `emergency-api is listening on ${server.url} (database ${ctx.db.describe})`,
            `  demo org id : ${demo.orgId}`,
            `  demo API key: ${demo.key}   (shown once)`,
            `  admin key   : ${demo.adminKey}   (shown once; the admin API at ${server.url}/api/admin/v1)`,
            `  console     : ${server.url}/console   (sign in with either key)`,
            '',
            'Declare an emergency:',
            `  curl -s -X POST ${base}/orgs/${demo.orgId}/emergencies \\`,
            `    -H "Authorization: Bearer ${demo.key}" -H "Content-Type: application/json" \\`,
            `    -d '{"categoryName":"Fire","description":"Smoke on floor 2"}'`,
            '',
          ].join('\n')}\n`,
        );
      }
      const shutdown = async (signal: string) => {
        server.app.log.info({ signal }, 'shutting down');
        const timer = setTimeout(() => process.exit(1), SHUTDOWN_TIMEOUT_MS);
        timer.unref();
        await server.stop();
        await ctx.db.close();
        process.exit(0);
      };
      process.once('SIGTERM', () => void shutdown('SIGTERM'));
      process.once('SIGINT', () => void shutdown('SIGINT'));
      return undefined;
    },
  },
  migrate: {
    summary: 'apply pending database migrations and name the ones applied',
    json: 'print {"applied":[names]} on stdout instead of text',
    // Not applied before it runs, so that it reports what it applied itself.
    migrateFirst: false,
    run: async ({ ctx }) => ({ applied: await migrateToLatest(ctx.db) }),
    human: ({ applied }: { applied: string[] }) => {
      const total = Object.keys(migrations).length;
      if (applied.length === 0) return `Database already up to date (${total} migrations applied).`;
      return [`Applied ${applied.length} migration${applied.length === 1 ? '' : 's'}:`, ...applied.map((name) => `  ${name}`)].join('\n');
    },
  },
  'admin demo': {
    summary: 'provision a demo org with categories and users (or reuse it); prints a fresh API key and admin key once',
    run: ({ ctx }) => provisionDemo(ctx),
  },
};
