import type { ParseArgsConfig } from 'node:util';
import type { AppContext } from '../context.js';

export type CliOptions = NonNullable<ParseArgsConfig['options']>;

export interface CliCommand {
  /** One line shown in the usage text. */
  usage: string;
  options?: CliOptions;
  /** Positional arguments it requires, by name, for the usage error. */
  positionals?: string[];
  /** Commands that need no database (e.g. serve, which opens its own). */
  standalone?: boolean;
  run(args: { values: Record<string, string | boolean | undefined>; positionals: string[]; ctx: AppContext }): Promise<unknown>;
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
