import type { LoggerOptions } from 'pino';
import type { Config } from '../config.js';

/** LOG_FORMAT `auto` pretty-prints on a terminal and writes JSON lines elsewhere (files, pipes, containers, log shippers). */
export function prettyLogs(config: Pick<Config, 'LOG_FORMAT'>, stream: NodeJS.WriteStream = process.stdout): boolean {
  return config.LOG_FORMAT === 'pretty' || (config.LOG_FORMAT === 'auto' && stream.isTTY === true);
}

/** The pino options of the service's loggers: level, redaction, and the pretty transport on a terminal. */
export function loggerOptions(config: Pick<Config, 'LOG_FORMAT' | 'LOG_LEVEL'>, stream: NodeJS.WriteStream = process.stdout): LoggerOptions {
  return {
    level: config.LOG_LEVEL,
    redact: ['req.headers.authorization', 'req.headers.cookie'],
    ...(prettyLogs(config, stream)
      ? {
          transport: {
            target: 'pino-pretty',
            options: { colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', destination: stream === process.stderr ? 2 : 1 },
          },
        }
      : {}),
  };
}
