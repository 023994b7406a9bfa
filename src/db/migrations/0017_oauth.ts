import type { Kysely } from 'kysely';

/**
 * The tool server's authorization server (extensions §10).
 * - `oauth_clients`: clients registered by Dynamic Client Registration (Client ID Metadata Documents are fetched, not stored).
 * - `oauth_grants`: what a person approved on the consent page with one API key; every token of the grant lives and dies with
 *   that key, and a reused refresh token revokes the whole grant (the token family).
 * - `oauth_tokens`: codes, access and refresh tokens, by their public id part, with only a SHA-256 of the whole token.
 * - `audit_logs.actor_key_id`: the API key behind an OAuth client's action.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('oauth_clients')
    .addColumn('client_id', 'text', (c) => c.primaryKey())
    .addColumn('client_name', 'text')
    .addColumn('metadata', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('oauth_grants')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('client_id', 'text', (c) => c.notNull())
    .addColumn('client_name', 'text')
    .addColumn('api_key_id', 'text', (c) => c.notNull())
    .addColumn('scopes', 'text', (c) => c.notNull())
    .addColumn('resource', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('revoked_at', 'text')
    .addColumn('revoked_reason', 'text')
    .execute();
  await db.schema.createIndex('oauth_grants_key_idx').on('oauth_grants').column('api_key_id').execute();
  await db.schema
    .createTable('oauth_tokens')
    .addColumn('token_prefix', 'text', (c) => c.primaryKey())
    .addColumn('secret_hash', 'text', (c) => c.notNull())
    .addColumn('grant_id', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('scopes', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('consumed_at', 'text')
    .addColumn('code_challenge', 'text')
    .addColumn('redirect_uri', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('oauth_tokens_grant_idx').on('oauth_tokens').column('grant_id').execute();
  await db.schema.createIndex('oauth_tokens_expiry_idx').on('oauth_tokens').column('expires_at').execute();
  await db.schema.alterTable('audit_logs').addColumn('actor_key_id', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('audit_logs').dropColumn('actor_key_id').execute();
  for (const table of ['oauth_tokens', 'oauth_grants', 'oauth_clients']) await db.schema.dropTable(table).ifExists().execute();
}
