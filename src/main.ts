import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { ConfigError } from './config.js';
import { FieldValidationError } from './errors.js';
import { parseArgsOptions, UsageError } from './cli/command.js';
import { CommandFailure } from './cli/failure.js';
import { commandHelp, findCommand, groupHelp, isGroup, nearestGroup, suggestion, synopsis } from './cli/help.js';
import { formatResult } from './cli/output.js';
import { redactSecrets } from './cli/redact.js';
import { StartupFailure } from './cli/startup-failure.js';
import { commands } from './cli/registry.js';
import { type RemoteFlags, runCommand, takeRemoteFlags } from './cli/run-command.js';

/** The version of package.json (one level above both src/ and dist/). */
function version(): string {
  return (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
}

async function main(argv: string[]): Promise<number> {
  const json = argv.includes('--json');
  let args = argv.filter((a) => a !== '--json');
  const out = (text: string) => process.stdout.write(text.endsWith('\n') || text === '' ? text : `${text}\n`);
  // A message may repeat an argument, and an argument may be a key typed in the wrong place: never shown whole.
  const fail = (message: string, code: number, details: Record<string, unknown> = {}) => {
    const shown = redactSecrets(message);
    process.stderr.write(json ? `${JSON.stringify({ error: shown, ...details })}\n` : `error: ${shown}\n`);
    return code;
  };
  // Messages for the operator (which database, which server): stderr only, so that stdout stays the output.
  const note = (text: string, fields: Record<string, unknown> = {}) => {
    const shown = redactSecrets(text);
    process.stderr.write(json ? `${JSON.stringify({ note: shown.replace(/^note: /, ''), ...fields })}\n` : `${shown}\n`);
  };
  // --url, --admin-key-file and --insecure before the command words name the server of any admin command.
  let remoteFlags: RemoteFlags;
  try {
    ({ rest: args, flags: remoteFlags } = takeRemoteFlags(args, { leading: true }));
  } catch (err) {
    return fail((err as Error).message, 2);
  }

  if (args.length === 1 && (args[0] === '--version' || args[0] === '-v')) {
    out(json ? JSON.stringify({ version: version() }) : `emergency-api ${version()}`);
    return 0;
  }
  // `help [words...]`, `[words...] --help` and `-h`: the help of a command or of a group, on stdout.
  const help = args[0] === 'help' || args.includes('--help') || args.includes('-h');
  if (args[0] === 'help') args = args.slice(1);
  if (help) args = args.filter((a) => a !== '--help' && a !== '-h');
  if (args.length === 0) {
    // Without a command: the program's help, as a usage error unless it was asked for.
    (help ? process.stdout : process.stderr).write(groupHelp(commands, []));
    return help ? 0 : 2;
  }

  const found = findCommand(commands, args);
  if (!found) {
    const firstFlag = args.findIndex((a) => a.startsWith('-'));
    const leading = firstFlag === -1 ? args : args.slice(0, firstFlag);
    if (isGroup(commands, leading) && (help || leading.length === args.length)) {
      if (help) {
        out(groupHelp(commands, leading));
        return 0;
      }
      return fail(`"${leading.join(' ')}" needs a command\n\n${groupHelp(commands, leading).trimEnd()}`, 2);
    }
    const group = nearestGroup(commands, args);
    const typo = suggestion(commands, group, args[group.length]);
    return fail(`unknown command "${args.join(' ')}"${typo ? `; did you mean "${typo}"?` : ''}\n\n${groupHelp(commands, group).trimEnd()}`, 2);
  }
  const command = commands[found.name]!;
  if (help) {
    out(commandHelp(found.name, command));
    return 0;
  }
  const usage = `usage: ${synopsis(found.name, command)}\nrun "emergency-api ${found.name} --help" for its options`;
  let parsed: ReturnType<typeof parseArgs>;
  try {
    // After the command words too, unless the command has an option of that name (a webhook's receiver --url).
    const taken = command.standalone ? { rest: found.rest, flags: {} } : takeRemoteFlags(found.rest, { own: Object.keys(command.options ?? {}) });
    remoteFlags = { ...remoteFlags, ...taken.flags };
    parsed = parseArgs({ args: taken.rest, options: parseArgsOptions(command), allowPositionals: true, strict: true });
  } catch (err) {
    return fail(`${(err as Error).message}\n${usage}`, 2);
  }
  const expected = (command.positionals ?? []).map((p) => p.name);
  if (parsed.positionals.length !== expected.length) {
    return fail(`expected ${expected.join(' ') || 'no positional arguments'}\n${usage}`, 2);
  }
  try {
    const commandArgs = { values: parsed.values as Record<string, string | boolean | undefined>, positionals: parsed.positionals };
    const result = await runCommand(found.name, command, commandArgs, remoteFlags, { json, note });
    if (json) out(JSON.stringify(result ?? {}));
    else if (result !== undefined) out(command.human ? command.human(result) : formatResult(result, command.columns));
    const failure = command.failure?.(result) ?? null;
    if (failure) return fail(failure, 1);
    return command.standalone ? -1 : 0;
  } catch (err) {
    if (err instanceof UsageError) return fail(`${err.message}\n${usage}`, 2);
    if (err instanceof ConfigError) return fail(err.message, 78);
    if (err instanceof StartupFailure) return fail(err.message, err.exitCode);
    if (err instanceof CommandFailure) return fail(err.message, err.exitCode, err.details);
    // A service's refusal of a field (its issues name a `loc`, not a Zod `path`): its message names the field.
    if (err instanceof FieldValidationError) return fail(err.message, 2);
    const zodIssues = (err as { issues?: { path: PropertyKey[]; message: string }[] }).issues;
    if (Array.isArray(zodIssues)) return fail(zodIssues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '), 2);
    return fail((err as Error).message, 1);
  }
}

const code = await main(process.argv.slice(2));
// -1: a long-running command (serve) keeps the process alive until a signal.
if (code >= 0) process.exit(code);
