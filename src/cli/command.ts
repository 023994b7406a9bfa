import type { ParseArgsConfig } from 'node:util';
import type { AppContext } from '../context.js';

export type CliOptions = NonNullable<ParseArgsConfig['options']>;

/** One `--option` of a command: how it is parsed and how its help describes it. */
export interface CliOption {
  type: 'string' | 'boolean';
  /** The value's placeholder in the usage line, e.g. `ID`, `N`, `ISO` (string options). */
  value?: string;
  /** Shown without brackets in the usage line (the command itself checks it). */
  required?: boolean;
  /** One line of the command's help. */
  description: string;
}

export interface CliPositional {
  name: string;
  description: string;
}

export interface CliCommand<R = unknown> {
  /** One line: in the group's listing and at the top of the command's help. */
  summary: string;
  /** Positional arguments it requires, in order. */
  positionals?: CliPositional[];
  options?: Record<string, CliOption>;
  /** Further lines at the end of the command's help. */
  details?: string[];
  /** What `--json` does for this command, in its help; false when it has no JSON output. Default: one JSON object. */
  json?: string | false;
  /** Commands that need no database (e.g. serve, which opens its own). */
  standalone?: boolean;
  /** Pending migrations are applied before `run` unless false: `migrate` applies them itself, to report what it applied. */
  migrateFirst?: boolean;
  /** Columns of the `items` table in the human-readable output (default: every field). */
  columns?: string[];
  /** The human-readable output, instead of the default `key: value` lines and tables. */
  human?(result: R): string;
  /** When the result reports a failure (e.g. a test ping that failed): the message; the exit code is then 1. */
  failure?(result: R): string | null;
  run(args: { values: Record<string, string | boolean | undefined>; positionals: string[]; ctx: AppContext }): Promise<R>;
}

/** The options in the form node:util parseArgs takes. */
export function parseArgsOptions(command: CliCommand): CliOptions {
  return Object.fromEntries(Object.entries(command.options ?? {}).map(([name, option]) => [name, { type: option.type }]));
}

export class UsageError extends Error {}

export function requireOption(values: Record<string, string | boolean | undefined>, name: string): string {
  const value = values[name];
  if (typeof value !== 'string' || value.trim() === '') throw new UsageError(`--${name} is required`);
  return value;
}

export function parseSubject(value: string): { subjectType: 'partner' | 'enterprise' | 'org'; subjectId: string } {
  const match = /^(partner|enterprise|org):([0-9a-fA-F-]{36})$/.exec(value);
  if (!match) throw new UsageError('--subject must be org:ID, enterprise:ID or partner:ID');
  return { subjectType: match[1] as 'partner' | 'enterprise' | 'org', subjectId: match[2]!.toLowerCase() };
}

export function parseIdList(value: string | boolean | undefined, flag: string): string[] | null {
  if (typeof value !== 'string') return null;
  const ids = value
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
  if (ids.length === 0 || !ids.every((id) => /^[0-9a-f-]{36}$/.test(id))) throw new UsageError(`--${flag} must be a comma-separated list of ids`);
  return ids;
}

/** Every item of a paged service list, for the operator's `list` commands. */
export async function listAll<T>(page: (params: { cursor?: string; limit: number }) => Promise<{ items: T[]; nextCursor: string | null }>): Promise<T[]> {
  const items: T[] = [];
  let cursor: string | undefined;
  do {
    const result = await page({ cursor, limit: 200 });
    items.push(...result.items);
    cursor = result.nextCursor ?? undefined;
  } while (cursor);
  return items;
}
