import type { AppContext } from '../../context.js';

/** One page of the public id parts (8 hex digits) of stored credentials, in order, after `after`. */
export type PrefixPage = (after: string, limit: number) => Promise<string[]>;

/** The public id parts of every bearer credential: API keys, admin keys, device tokens and integration keys, page by page. */
export function credentialPrefixPages(ctx: AppContext): PrefixPage[] {
  const db = ctx.db.db;
  return [
    async (after, limit) =>
      (await db.selectFrom('api_keys').select('key_prefix').where('key_prefix', '>', after).orderBy('key_prefix').limit(limit).execute()).map(
        (row) => row.key_prefix,
      ),
    async (after, limit) =>
      (await db.selectFrom('admin_keys').select('key_prefix').where('key_prefix', '>', after).orderBy('key_prefix').limit(limit).execute()).map(
        (row) => row.key_prefix,
      ),
    async (after, limit) =>
      (await db.selectFrom('devices').select('token_prefix').where('token_prefix', '>', after).orderBy('token_prefix').limit(limit).execute()).map(
        (row) => row.token_prefix,
      ),
    async (after, limit) =>
      (await db.selectFrom('integration_keys').select('key_prefix').where('key_prefix', '>', after).orderBy('key_prefix').limit(limit).execute()).map(
        (row) => row.key_prefix,
      ),
  ];
}
