import type { AppContext } from '../context.js';
import { type AdminApi, AdminApiError, type AdminRequest, type Page } from './admin-api.js';
import type { AdminCommand, CliArgs, CommandInfo } from './command.js';

type PageParams = { cursor?: string; limit: number };

/**
 * A paged list of the admin API, declared once: the service page it reads on the database and the route it reads
 * over the admin API, both giving the admin API's records.
 */
export interface AdminList<P, T> {
  page(ctx: AppContext, params: P, page: PageParams): Promise<Page<T>>;
  route(params: P): string;
}

/** Reads a list whole, or its first `limit` items, on the database or over the admin API alike. */
export type ReadList = <P, T>(list: AdminList<P, T>, params: P, limit?: number) => Promise<T[]>;

/** The items of a paged list, a page of at most 200 at a time, up to `limit`. */
async function collect<T>(page: (params: PageParams) => Promise<Page<T>>, limit = Number.POSITIVE_INFINITY): Promise<T[]> {
  const items: T[] = [];
  let cursor: string | undefined;
  do {
    const result = await page({ cursor, limit: Math.min(200, limit - items.length) });
    items.push(...result.items);
    cursor = result.nextCursor ?? undefined;
  } while (cursor && items.length < limit);
  return items.slice(0, limit);
}

const readOnDatabase =
  (ctx: AppContext): ReadList =>
  (list, params, limit) =>
    collect((page) => list.page(ctx, params, page), limit);

const readOverApi =
  (api: AdminApi): ReadList =>
  (list, params, limit) =>
    collect((page) => api.page(list.route(params), page), limit);

/** A service page mapped to the admin API's records (for the services whose records the admin API renames). */
export async function pageOf<S, T>(page: Promise<Page<S>>, record: (item: S) => T): Promise<Page<T>> {
  const { items, nextCursor } = await page;
  return { items: items.map(record), nextCursor };
}

/**
 * Where a command's answer comes from: one service call (`local`, as the operator) and the admin route that
 * answers the same over the admin API (`route`); or, for a command that only reads lists, `read`, which runs on
 * either side.
 */
type Source<I, A> =
  | { local(ctx: AppContext, input: I): Promise<A>; route(input: I): AdminRequest; read?: undefined }
  | { read(readList: ReadList, input: I): Promise<A>; local?: undefined; route?: undefined };

/**
 * An admin command declared once: its arguments (`input`), where its answer comes from, and how it prints the
 * answer (`present`, by default as it is). The answer has the admin API's shape on both sides, so both print alike.
 */
export type AdminCommandSpec<I, A, R> = CommandInfo<R> &
  Source<I, A> & {
    input(args: CliArgs): I;
    present?(answer: A, input: I): R;
    /** A refusal of the admin API with a hint for this command (the local side adds its own to the service's error). */
    explain?(refusal: AdminApiError, input: I): AdminApiError;
  };

/** The command's local and remote halves, derived from its one declaration. */
export function adminCommand<I, A, R = A>(spec: AdminCommandSpec<I, A, R>): AdminCommand<I, R> {
  const present = (answer: A, input: I): R => (spec.present ? spec.present(answer, input) : (answer as unknown as R));
  const ask = async (api: AdminApi, input: I): Promise<A> => {
    if (spec.read) return spec.read(readOverApi(api), input);
    try {
      return (await api.send(spec.route(input))) as A;
    } catch (err) {
      throw err instanceof AdminApiError && spec.explain ? spec.explain(err, input) : err;
    }
  };
  return {
    ...spec,
    local: async (ctx, input) => present(await (spec.read ? spec.read(readOnDatabase(ctx), input) : spec.local(ctx, input)), input),
    remote: async (api, input) => present(await ask(api, input), input),
  };
}

/** A list answer as the commands print it: `{items}`, one row per record. */
export const itemsOf =
  <T, R>(row: (record: T) => R) =>
  (records: T[]): { items: R[] } => ({ items: records.map(row) });

/** The records of a list as they are. */
export const asItems = <T>(records: T[]): { items: T[] } => ({ items: records });

/** What a create command prints: `{"id"}`, whatever the record's own id field is called. */
export const createdId =
  <K extends string>(field: K) =>
  (record: Record<K, string>): { id: string } => ({ id: record[field] });
