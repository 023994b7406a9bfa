import type { Kysely } from 'kysely';
import type { Database } from '../../db/types.js';
import { nowIso } from '../shared/ids.js';

/**
 * The documents of ingested CAP messages, by org and the message's `sender` and `identifier`. An emergency's export relays
 * the latest message of its chain, so once a later one is in, the earlier ones are removed: an emergency keeps one document
 * of at most the ingest limit.
 */

export interface MessageKey {
  sender: string;
  identifier: string;
}

/**
 * Keeps a message's document before the transition it stands for, so that no emergency ever names a message whose document is
 * missing; a message already kept is left as it was (a repeat must not rewrite what an emergency relays). True when it was new.
 */
export async function keepOriginal(db: Kysely<Database>, orgId: string, key: MessageKey, document: string): Promise<boolean> {
  const result = await db
    .insertInto('cap_originals')
    .values({ org_id: orgId, sender: key.sender, identifier: key.identifier, document, created_at: nowIso() })
    .onConflict((oc) => oc.columns(['org_id', 'sender', 'identifier']).doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
}

/** Removes kept documents, by key. */
export async function dropOriginals(db: Kysely<Database>, orgId: string, keys: MessageKey[]): Promise<void> {
  if (keys.length === 0) return;
  await db
    .deleteFrom('cap_originals')
    .where('org_id', '=', orgId)
    .where((eb) => eb.or(keys.map((k) => eb.and([eb('sender', '=', k.sender), eb('identifier', '=', k.identifier)]))))
    .execute();
}

/** Keys per statement: its parameters stay well under either database's limit. */
const SLICE = 200;

/** The kept documents of the given messages, by `sender,identifier`. */
export async function originalsOf(db: Kysely<Database>, orgId: string, keys: MessageKey[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (let i = 0; i < keys.length; i += SLICE) {
    const slice = keys.slice(i, i + SLICE);
    const rows = await db
      .selectFrom('cap_originals')
      .select(['sender', 'identifier', 'document'])
      .where('org_id', '=', orgId)
      .where((eb) => eb.or(slice.map((k) => eb.and([eb('sender', '=', k.sender), eb('identifier', '=', k.identifier)]))))
      .execute();
    for (const row of rows) out.set(originalKey(row), row.document);
  }
  return out;
}

/** The length in characters of the kept documents of the given messages, by `sender,identifier`, without reading them. */
export async function originalSizesOf(db: Kysely<Database>, orgId: string, keys: MessageKey[]): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (let i = 0; i < keys.length; i += SLICE) {
    const slice = keys.slice(i, i + SLICE);
    const rows = await db
      .selectFrom('cap_originals')
      .select((eb) => ['sender', 'identifier', eb.fn<number>('length', ['document']).as('size')])
      .where('org_id', '=', orgId)
      .where((eb) => eb.or(slice.map((k) => eb.and([eb('sender', '=', k.sender), eb('identifier', '=', k.identifier)]))))
      .execute();
    for (const row of rows) out.set(originalKey(row), Number(row.size));
  }
  return out;
}

export function originalKey(key: MessageKey): string {
  return `${key.sender},${key.identifier}`;
}
