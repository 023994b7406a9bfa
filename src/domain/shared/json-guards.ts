/**
 * Guards for decoded JSON input, run before schema validation on every surface. Both walk the value with an explicit stack, so
 * a hostile nesting depth cannot overflow the call stack.
 */

/** The deepest JSON nesting a request body may have anywhere (objects and arrays). */
export const MAX_BODY_DEPTH = 64;
/** The deepest nesting a free-form `metadata` object may have. */
export const MAX_METADATA_DEPTH = 16;

export type JsonPath = (string | number)[];

export interface JsonInspection {
  /** Where the first text holding U+0000 is (a value, or the key of an object member); null when none. */
  nulAt: JsonPath | null;
  /** True when objects and arrays nest deeper than the limit given. */
  tooDeep: boolean;
}

/**
 * PostgreSQL text cannot hold U+0000 and SQLite would keep it: refusing it everywhere makes both
 * databases answer alike (422 `string_nul`) instead of one of them failing the write.
 */
export function inspectJson(value: unknown, maxDepth: number): JsonInspection {
  const stack: { value: unknown; path: JsonPath; depth: number }[] = [{ value, path: [], depth: 0 }];
  let nulAt: JsonPath | null = null;
  while (stack.length > 0) {
    const { value: current, path, depth } = stack.pop()!;
    if (typeof current === 'string') {
      if (nulAt === null && current.includes('\u0000')) nulAt = path;
      continue;
    }
    if (current === null || typeof current !== 'object') continue;
    if (depth + 1 > maxDepth) return { nulAt, tooDeep: true };
    if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--) stack.push({ value: current[i], path: [...path, i], depth: depth + 1 });
      continue;
    }
    const keys = Object.keys(current);
    for (let i = keys.length - 1; i >= 0; i--) {
      const key = keys[i]!;
      if (nulAt === null && key.includes('\u0000')) nulAt = [...path, key];
      stack.push({ value: (current as Record<string, unknown>)[key], path: [...path, key], depth: depth + 1 });
    }
  }
  return { nulAt, tooDeep: false };
}

/** True when `value` nests objects and arrays deeper than `maxDepth` levels (the value itself is level 1). */
export function nestsDeeperThan(value: unknown, maxDepth: number): boolean {
  return inspectJson(value, maxDepth).tooDeep;
}

export const NUL_MESSAGE = 'must not contain the NUL character (U+0000)';
