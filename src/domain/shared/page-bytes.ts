/**
 * No JSON answer exceeds MAX_ANSWER_BYTES (extensions.md §9): a page stops before passing PAGE_BYTES, `nextCursor` after its last item.
 * The budget is under a third of the bound because a tool result carries its page twice, once as JSON text whose escaping can double it.
 */
export const MAX_ANSWER_BYTES = 1024 * 1024;
export const PAGE_BYTES = 320 * 1024;

/**
 * How many leading items fit the budget, given each item's JSON size: always at least one, since one item is bounded by its own
 * input limits.
 */
export function itemsWithinBudget(sizes: readonly number[], budget = PAGE_BYTES): number {
  let used = 0;
  for (let i = 0; i < sizes.length; i++) {
    used += sizes[i]! + 1;
    if (used > budget) return Math.max(1, i);
  }
  return sizes.length;
}

export function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value));
}

/** The items a page keeps: all when the whole page fits (one serialization, the usual case), else the leading ones that fit. */
export function itemsThatFit(items: readonly unknown[], budget = PAGE_BYTES): number {
  if (items.length <= 1 || jsonBytes(items) <= budget) return items.length;
  return itemsWithinBudget(items.map(jsonBytes), budget);
}

/** The same for items kept as JSON text (stored records and envelopes), each with `overhead` bytes of wrapping. */
export function textsThatFit(texts: readonly string[], overhead = 0, budget = PAGE_BYTES): number {
  const sizes = texts.map((t) => Buffer.byteLength(t) + overhead);
  return itemsWithinBudget(sizes, budget);
}
