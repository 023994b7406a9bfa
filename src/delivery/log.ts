/** The logging surface the dispatcher needs; Fastify's pino logger satisfies it. */
export interface DeliveryLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;
const LEVEL_NUMBERS: Record<string, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60 };

/** JSON lines on stderr, pino-compatible, for the standalone worker which has no HTTP server logger. */
export function jsonLogger(level: string, name = 'webhook-worker'): DeliveryLogger {
  const threshold = level === 'silent' ? Infinity : LEVEL_NUMBERS[level] ?? 30;
  const write = (lvl: (typeof LEVELS)[number]) => (obj: object, msg: string) => {
    if (LEVEL_NUMBERS[lvl]! < threshold) return;
    process.stderr.write(`${JSON.stringify({ level: LEVEL_NUMBERS[lvl], time: Date.now(), name, ...obj, msg })}\n`);
  };
  return { info: write('info'), warn: write('warn'), error: write('error') };
}

export const silentLogger: DeliveryLogger = { info: () => undefined, warn: () => undefined, error: () => undefined };

/** Error description safe for logs: the message and code, never a stack or SQL text of a driver error. */
export function describeError(err: unknown): { error: string; code?: string } {
  const e = err as { message?: string; code?: string };
  const message = typeof e?.message === 'string' ? e.message.split('\n')[0]!.slice(0, 200) : 'unexpected error';
  return { error: message, ...(e?.code ? { code: String(e.code) } : {}) };
}
