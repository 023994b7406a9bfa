/** The signed-in key lives in this tab's sessionStorage only: closing the tab signs out. */
const KEY = 'emergency-console.key';

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
  } catch {
    /* storage unavailable: nothing kept */
  }
}

/** Admin keys (enk_adm_) manage webhooks, API keys and device tokens; API keys (enk_live_) do not. */
export function keyKind(key: string | null): KeyKind {
  return key?.startsWith('enk_adm_') ? 'admin' : 'api';
}
