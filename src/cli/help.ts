import { type CliCommand, type CliOption, isAdminCommand } from './command.js';
import { editDistance } from '../text/edit-distance.js';

const PROGRAM = 'emergency-api';

/** One line about each group of commands, shown at the top of its help. */
const GROUP_SUMMARIES: Record<string, string> = {
  '': 'Emergency notification API: the server, the delivery worker, migrations and the operator commands.',
  admin: 'Provision partners, enterprises, orgs, keys, devices and webhooks (every admin command accepts --json).',
  'admin partner': 'Partners: the top of the tenant tree.',
  'admin enterprise': 'Enterprises: the tenants beneath a partner.',
  'admin org': 'Orgs: the sites beneath an enterprise.',
  'admin category': 'Emergency categories of an org.',
  'admin user': 'Users of an org.',
  'admin key': 'API keys of the public API (/api/public/v1).',
  'admin admin-key': 'Admin keys of the admin API (/api/admin/v1).',
  'admin device': 'Base-station devices and their tokens.',
  'admin webhook': 'Webhook subscriptions, their deliveries, replays and test pings.',
  'admin cap-mapping': 'The mapping of CAP event names to categories, which ingested CAP alerts follow.',
  device: 'Tools for base-station devices.',
};

const words = (name: string) => (name === '' ? [] : name.split(' '));

/** True when some command's words start with these words (the empty prefix is the whole program). */
export function isGroup(commands: Record<string, CliCommand>, prefix: string[]): boolean {
  return Object.keys(commands).some((name) => {
    const w = words(name);
    return w.length > prefix.length && prefix.every((word, i) => w[i] === word);
  });
}

/** The longest leading part of `argv` that names a group: the group nearest to a mistyped command. */
export function nearestGroup(commands: Record<string, CliCommand>, argv: string[]): string[] {
  let prefix: string[] = [];
  for (let n = 1; n <= argv.length; n++) {
    if (!isGroup(commands, argv.slice(0, n))) break;
    prefix = argv.slice(0, n);
  }
  return prefix;
}

/** The command that `argv` starts with (its longest match), and the arguments after its words. */
export function findCommand(commands: Record<string, CliCommand>, argv: string[]): { name: string; rest: string[] } | null {
  for (let n = Math.min(3, argv.length); n > 0; n--) {
    const name = argv.slice(0, n).join(' ');
    if (commands[name]) return { name, rest: argv.slice(n) };
  }
  return null;
}

/** For a word that is not a command of its group: the closest one, when it is close (a typo). */
export function suggestion(commands: Record<string, CliCommand>, group: string[], word: string | undefined): string | null {
  if (!word || word.startsWith('-')) return null;
  const next = new Set(
    Object.keys(commands)
      .map(words)
      .filter((w) => w.length > group.length && group.every((g, i) => w[i] === g))
      .map((w) => w[group.length]!),
  );
  let best: { word: string; distance: number } | null = null;
  for (const candidate of next) {
    const distance = editDistance(word, candidate);
    if (distance <= Math.max(1, Math.floor(candidate.length / 3)) && (!best || distance < best.distance)) best = { word: candidate, distance };
  }
  return best ? [...group, best.word].join(' ') : null;
}

/** Lines of two columns, the first padded to align the second. */
function columns(rows: [string, string][], indent = '  '): string[] {
  const width = Math.max(0, ...rows.map(([left]) => left.length));
  return rows.map(([left, right]) => `${indent}${left.padEnd(width)}   ${right}`.trimEnd());
}

const GLOBAL_OPTIONS: [string, string][] = [
  ['--json', 'admin commands: print one JSON object on stdout (errors on stderr, exit code ≠ 0)'],
  ['--url URL', 'admin commands: run over the admin API of this server, e.g. http://127.0.0.1:8080 (default EMERGENCY_API_URL)'],
  ['--admin-key-file PATH', 'with --url: a file holding an admin key of that server, enk_adm_... (default EMERGENCY_API_ADMIN_KEY)'],
  ['--insecure', 'with --url: allow http:// to another machine (the admin key then crosses the network unencrypted)'],
  ['-h, --help', `help of any group or command, e.g. "${PROGRAM} admin webhook --help"`],
  ['-v, --version', 'print the version'],
];

/** Commands without an admin API route that work on the database (serve and worker open their own). */
const databaseOnly = (commands: Record<string, CliCommand>) =>
  Object.entries(commands)
    .filter(([, command]) => !isAdminCommand(command) && !command.standalone)
    .map(([name]) => name);

/** Where the admin commands run: shown with the program's and the admin group's help. */
function whereCommandsRun(commands: Record<string, CliCommand>): string[] {
  return [
    'Where admin commands run:',
    '  Over the admin API of a server when EMERGENCY_API_URL and EMERGENCY_API_ADMIN_KEY (or EMERGENCY_API_ADMIN_KEY_FILE)',
    '  are set, or --url URL and --admin-key-file PATH are given (the flags win; before the command words, --url always',
    '  names the server; http:// only to this machine unless --insecure). Otherwise on the database of DATABASE_URL',
    '  (default sqlite:./data/emergency.db, which only migrate, admin demo and admin admin-key create may create:',
    '  other commands exit 66 when it is missing).',
    `  Database only: ${databaseOnly(commands).join(', ')} (with EMERGENCY_API_URL set, they need DATABASE_URL).`,
  ];
}

/** The commands of a group (their words after the group's), each with its one-line summary. */
export function groupHelp(commands: Record<string, CliCommand>, group: string[]): string {
  const members = Object.entries(commands).filter(([name]) => {
    const w = words(name);
    return w.length > group.length && group.every((g, i) => w[i] === g);
  });
  // Commands of one subgroup stay together, in the order the subgroups first appear.
  const order = [...new Set(members.map(([name]) => words(name)[group.length]!))];
  members.sort(([a], [b]) => order.indexOf(words(a)[group.length]!) - order.indexOf(words(b)[group.length]!));
  const prefix = [PROGRAM, ...group].join(' ');
  const lines = [`Usage: ${prefix} <command> [options]`, ''];
  const summary = GROUP_SUMMARIES[group.join(' ')];
  if (summary) lines.push(summary, '');
  lines.push('Commands:');
  lines.push(...columns(members.map(([name, command]) => [words(name).slice(group.length).join(' '), command.summary])));
  lines.push('', 'Options:', ...columns(GLOBAL_OPTIONS));
  if (group.length === 0 || (group.length === 1 && group[0] === 'admin')) lines.push('', ...whereCommandsRun(commands));
  lines.push('', `Run "${prefix} <command> --help" for a command's arguments and options.`);
  return `${lines.join('\n')}\n`;
}

function optionLabel(name: string, option: CliOption): string {
  return option.type === 'string' ? `--${name} ${option.value ?? 'VALUE'}` : `--${name}`;
}

/** The one-line synopsis: positionals, required options, then [optional ones]. */
export function synopsis(name: string, command: CliCommand): string {
  const parts = [PROGRAM, name, ...(command.positionals ?? []).map((p) => p.name)];
  const options = Object.entries(command.options ?? {});
  for (const [option, spec] of options) if (spec.required) parts.push(optionLabel(option, spec));
  for (const [option, spec] of options) if (!spec.required) parts.push(`[${optionLabel(option, spec)}]`);
  if (command.json !== false) parts.push('[--json]');
  return parts.join(' ');
}

/** A command's usage line, summary, arguments and options. */
export function commandHelp(name: string, command: CliCommand): string {
  const lines = [`Usage: ${synopsis(name, command)}`, '', `${command.summary[0]!.toUpperCase()}${command.summary.slice(1)}.`];
  if (command.positionals?.length) {
    lines.push('', 'Arguments:', ...columns(command.positionals.map((p) => [p.name, p.description])));
  }
  const all = Object.entries(command.options ?? {});
  const row = ([option, spec]: [string, CliOption]): [string, string] => [optionLabel(option, spec), spec.description];
  const required = all.filter(([, spec]) => spec.required).map(row);
  const optional = all.filter(([, spec]) => !spec.required).map(row);
  if (command.json !== false) optional.push(['--json', command.json ?? 'print one JSON object on stdout instead of text']);
  const admin = isAdminCommand(command);
  // Here --url is the command's own option (a receiver's URL): the server's goes before the command words.
  const ownUrl = command.options?.url !== undefined;
  if (admin && !ownUrl) optional.push(['--url URL', 'run over the admin API of this server (default EMERGENCY_API_URL)']);
  if (admin) optional.push(['--admin-key-file PATH', 'a file holding an admin key of that server (default EMERGENCY_API_ADMIN_KEY)']);
  if (admin) optional.push(['--insecure', 'allow http:// to another machine (the key crosses the network unencrypted)']);
  optional.push(['-h, --help', 'show this help']);
  // One width for both lists, so that their descriptions line up.
  const aligned = columns([...required, ...optional]);
  if (required.length) lines.push('', 'Required options:', ...aligned.slice(0, required.length));
  lines.push('', 'Options:', ...aligned.slice(required.length));
  if (command.details?.length) lines.push('', ...command.details);
  if (admin) {
    lines.push(
      '',
      'Runs over the admin API when a server and an admin key are given (EMERGENCY_API_URL and EMERGENCY_API_ADMIN_KEY,',
      `or ${ownUrl ? `"${PROGRAM} --url URL --admin-key-file PATH ${name} ..."` : '--url and --admin-key-file'}); otherwise on the database of DATABASE_URL.`,
    );
  } else if (!command.standalone) {
    lines.push('', 'Works on the database of DATABASE_URL only: it has no admin API route (with EMERGENCY_API_URL set, set DATABASE_URL too).');
  }
  return `${lines.join('\n')}\n`;
}
