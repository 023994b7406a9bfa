import { z } from 'zod';
import { timestamp, uuid } from '../shared/schema.js';

/** An organization holds at most this many CAP event mappings. */
export const MAX_CAP_MAPPINGS = 1000;

/** How an event is matched: trimmed, runs of white space as one space, case-insensitively. */
export function capEventKey(event: string): string {
  return event.trim().replace(/\s+/g, ' ').toLowerCase();
}

export const capMappingInput = z
  .strictObject({
    event: z
      .string()
      .trim()
      .min(1)
      .max(256)
      .describe('A CAP `event` (e.g. SEVERE THUNDERSTORM), matched case-insensitively with runs of white space as one; an existing mapping of it is replaced.'),
    categoryId: z.string().min(1).max(64).optional().describe("The organization's category the event maps to."),
    categoryName: z.string().min(1).max(128).optional().describe('The category by name (case-insensitive), instead of categoryId.'),
  })
  .refine((b) => (b.categoryId === undefined) !== (b.categoryName === undefined), {
    message: 'give exactly one of categoryId or categoryName',
    path: ['categoryId'],
  })
  .meta({ id: 'CapMappingRequest' });

export const capMappingRecord = z
  .object({
    mappingId: uuid,
    orgId: uuid,
    event: z.string().meta({ example: 'SEVERE THUNDERSTORM' }),
    categoryId: uuid,
    categoryName: z.string().meta({ example: 'Severe Weather' }),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'CapMapping' });

export const capMappingList = z
  .object({ items: z.array(capMappingRecord).describe(`Every mapping of the organization (at most ${MAX_CAP_MAPPINGS}), by event.`) })
  .meta({ id: 'CapMappingList' });

export type CapMappingInput = z.infer<typeof capMappingInput>;
export type CapMappingRecord = z.infer<typeof capMappingRecord>;
