import type { Kysely } from 'kysely';
import type { Database } from '../../db/types.js';
import type { EmergencyRecord } from '../emergencies/schema.js';
import { relayedMessageOf } from './messages.js';
import { type MessageKey, originalKey, originalSizesOf, originalsOf } from './originals.js';
import type { EmergencyForCap } from './repo.js';

/**
 * The kept documents that the exports of `rows` relay, by emergency id. A feed's entries relay at most `budget` characters of
 * documents in all (the newest entries first): past it, an entry carries the service's own alert and links to the relayed one,
 * so a feed of 500 ingested alerts of 256 KiB each does not become a document of 128 MiB.
 */
export async function relayedOriginals(
  db: Kysely<Database>,
  orgId: string,
  rows: EmergencyForCap[],
  budget = Number.POSITIVE_INFINITY,
): Promise<Map<string, string>> {
  const wanted: { id: string; key: MessageKey }[] = [];
  for (const row of rows) {
    // Only ingested emergencies name a CAP message; the text test spares parsing every other record on this thread.
    if (!row.record.includes('"cap":')) continue;
    const message = relayedMessageOf(JSON.parse(row.record) as EmergencyRecord);
    if (message) wanted.push({ id: row.id, key: { sender: message.sender, identifier: message.identifier } });
  }
  if (wanted.length === 0) return new Map();
  let chosen = wanted;
  if (Number.isFinite(budget)) {
    const sizes = await originalSizesOf(
      db,
      orgId,
      wanted.map((w) => w.key),
    );
    let spent = 0;
    chosen = wanted.filter((w) => {
      const size = sizes.get(originalKey(w.key));
      if (size === undefined || spent + size > budget) return false;
      spent += size;
      return true;
    });
  }
  const documents = await originalsOf(
    db,
    orgId,
    chosen.map((w) => w.key),
  );
  const out = new Map<string, string>();
  for (const w of chosen) {
    const document = documents.get(originalKey(w.key));
    if (document !== undefined) out.set(w.id, document);
  }
  return out;
}
