export interface ApiResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

/** A small JSON client over real HTTP (fetch), bound to a base URL and an API key. */
export function client(base: string, key?: string) {
  async function call<T = any>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<ApiResponse<T>> {
    const init: RequestInit = { method, headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers } };
    if (body !== undefined) {
      init.body = typeof body === 'string' ? body : JSON.stringify(body);
      (init.headers as Record<string, string>)['content-type'] ??= 'application/json';
    }
    const res = await fetch(`${base}${path}`, init);
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text === '' ? null : JSON.parse(text);
    } catch {
      /* non-JSON body stays text */
    }
    return { status: res.status, body: parsed as T, headers: res.headers };
  }
  return {
    get: <T = any>(path: string, headers?: Record<string, string>) => call<T>('GET', path, undefined, headers),
    post: <T = any>(path: string, body?: unknown, headers?: Record<string, string>) => call<T>('POST', path, body, headers),
    patch: <T = any>(path: string, body?: unknown, headers?: Record<string, string>) => call<T>('PATCH', path, body, headers),
    call,
  };
}
