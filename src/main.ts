import { parseArgs } from 'node:util';
import { createContext } from './app.js';
import { ConfigError, loadConfig } from './config.js';
import type { AppContext } from './context.js';
import { migrateToLatest } from './db/migrate.js';
import { UsageError } from './cli/command.js';
import { commands } from './cli/registry.js';

function usage(): string {
  const lines = Object.entries(commands).map(([name, c]) => `  emergency-api ${name} ${c.usage}`);
  return `Usage (every admin command accepts --json):\n${lines.join('\n')}\n`;
}

function findCommand(argv: string[]): { name: string; rest: string[] } | null {
  for (let words = Math.min(3, argv.length); words > 0; words--) {
    const name = argv.slice(0, words).join(' ');
    if (commands[name]) return { name, rest: argv.slice(words) };
  }
  return null;
}

function printHuman(result: unknown): void {
  if (result === undefined) return;
  if (result && typeof result === 'object' && !Array.isArray(result)) {
    for (const [k, v] of Object.entries(result)) {
      process.stdout.write(`${k}: ${typeof v === 'object' ? JSON.stringify(v) : String(v)}\n`);
    }
  } else {
    process.stdout.write(`${JSON.stringify(result)}\n`);
  }
}

async function main(argv: string[]): Promise<number> {
  const json = argv.includes('--json');
  const args = argv.filter((a) => a !== '--json');
  const fail = (message: string, code: number) => {
    process.stderr.write(json ? `${JSON.stringify({ error: message })}\n` : `error: ${message}\n`);
    return code;
  };
  if (args.length === 0 || args[0] === '--help' || args[0] === 'help') {
    process.stdout.write(usage());
    return args.length === 0 ? 2 : 0;
  }
  const found = findCommand(args);
  if (!found) return fail(`unknown command "${args.join(' ')}"\n${usage()}`, 2);
  const command = commands[found.name]!;
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: found.rest, options: command.options ?? {}, allowPositionals: true, strict: true });
  } catch (err) {
    return fail(`${(err as Error).message}\nusage: emergency-api ${found.name} ${command.usage}`, 2);
  }
  const expected = command.positionals ?? [];
  if (parsed.positionals.length !== expected.length) {
    return fail(`expected ${expected.join(' ') || 'no positional arguments'}\nusage: emergency-api ${found.name} ${command.usage}`, 2);
  }
  let ctx: AppContext | undefined;
  try {
    if (!command.standalone) {
      ctx = createContext(loadConfig());
      await migrateToLatest(ctx.db);
    }
    const result = await command.run({
      values: parsed.values as Record<string, string | boolean | undefined>,
      positionals: parsed.positionals,
      ctx: ctx as AppContext,
    });
    if (json) process.stdout.write(`${JSON.stringify(result ?? {})}\n`);
    else printHuman(result);
    return command.standalone ? -1 : 0;
  } catch (err) {
    if (err instanceof UsageError) return fail(`${err.message}\nusage: emergency-api ${found.name} ${command.usage}`, 2);
    if (err instanceof ConfigError) return fail(err.message, 78);
    const zodIssues = (err as { issues?: { path: PropertyKey[]; message: string }[] }).issues;
    if (Array.isArray(zodIssues)) return fail(zodIssues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '), 2);
    return fail((err as Error).message, 1);
  } finally {
    if (ctx && !command.standalone) await ctx.db.close();
  }
}

const code = await main(process.argv.slice(2));
// -1: a long-running command (serve) keeps the process alive until a signal.
if (code >= 0) process.exit(code);
