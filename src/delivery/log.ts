/** The logging surface the dispatcher needs; Fastify's pino logger satisfies it. */
export interface DeliveryLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export const silentLogger: DeliveryLogger = { info: () => undefined, warn: () => undefined, error: () => undefined };
