/** Error description safe for logs: the message and code, never a stack or SQL text of a driver error. */
export function describeError(err: unknown): { error: string; code?: string } {
  const e = err as { message?: string; code?: string };
  const message = typeof e?.message === 'string' ? e.message.split('\n')[0]!.slice(0, 200) : 'unexpected error';
  return { error: message, ...(e?.code ? { code: String(e.code) } : {}) };
}
