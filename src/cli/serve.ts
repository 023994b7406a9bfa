import { createContext } from '../app.js';
import { loadConfig } from '../config.js';
import { migrateToLatest } from '../db/migrate.js';
import { startServer } from '../server.js';
import type { CliCommand } from './command.js';
import { provisionDemo } from './demo.js';

const SHUTDOWN_TIMEOUT_MS = 10_000;

export const serveCommands: Record<string, CliCommand> = {
  serve: {
    usage: '[--demo]   REST + MCP + device gateway + delivery worker; --demo provisions a demo org and prints a key',
    options: { demo: { type: 'boolean' } },
    standalone: true,
    run: async ({ values }) => {
      const config = loadConfig();
      const ctx = createContext(config);
      await migrateToLatest(ctx.db);
      const demo = values.demo ? await provisionDemo(ctx) : null;
      const server = await startServer(config, ctx);
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
    usage: 'apply pending database migrations',
    run: async ({ ctx }) => ({ applied: await migrateToLatest(ctx.db) }),
  },
  'admin demo': {
    usage: 'one partner/enterprise/org, categories, users and a read+write key; prints them',
    run: ({ ctx }) => provisionDemo(ctx),
  },
};
