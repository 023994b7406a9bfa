/** The signed-in key lives in this tab's sessionStorage only: closing the tab signs out. */
const KEY = 'emergency-console.key';
/** The operator's display name, asked once per tab and recorded on what they declare, resolve and post. */
const NAME = 'emergency-console.name';

export type KeyKind = 'admin' | 'api';

export function currentKey(): string | null {
  try {
    return sessionStorage.getItem(KEY);
  } catch {
    return null;
  }
}

export function keepKey(key: string): void {
  sessionStorage.setItem(KEY, key);
}

export function clearSession(): void {
  try {
    sessionStorage.removeItem(KEY);
    sessionStorage.removeItem(NAME);
  } catch {
    /* storage unavailable: nothing kept */
  }
}

/** Admin keys (enk_adm_) manage webhooks, API keys and device tokens; API keys (enk_live_) do not. */
export function keyKind(key: string | null): KeyKind {
  return key?.startsWith('enk_adm_') ? 'admin' : 'api';
}

export function currentName(): string | null {
  try {
    return sessionStorage.getItem(NAME) || null;
  } catch {
    return null;
  }
}

export function keepName(name: string): void {
  try {
    sessionStorage.setItem(NAME, name);
  } catch {
    /* storage unavailable: the name lasts as long as the page */
  }
}

/** Longest display name: what a message's author name may hold (declaredBy and resolvedBy take more). */
export const MAX_NAME = 128;

/**
 * The person an operator's write names: `{id: "console:<slug of the name>", name}`. The id is the name
 * lower-cased with every run of other characters than letters and digits made one hyphen, so the same
 * name typed again (in any case or spacing) is the same person in the records.
 */
export function actorOf(name: string): { id: string; name: string } {
  const slug = name
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, '-')
    .replace(/^-+|-+$/g, '');
  return { id: `console:${slug || 'operator'}`, name };
}
