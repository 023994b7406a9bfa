import type { FastifyBaseLogger } from 'fastify';

type Bindings = Parameters<FastifyBaseLogger['child']>[0];
type ChildLoggerOptions = NonNullable<Parameters<FastifyBaseLogger['child']>[1]>;

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
type LogFn = FastifyBaseLogger['info'];

/**
 * A request's logger that collects bindings and creates the pino child only when a line at an enabled level is written:
 * creating a child per request costs more than serving a cached read, and most requests log nothing.
 */
export class DeferredChildLogger implements FastifyBaseLogger {
  private real: FastifyBaseLogger | null = null;

  constructor(
    private readonly parent: FastifyBaseLogger & { isLevelEnabled(level: string): boolean },
    private readonly bindings: Bindings,
    /** The request logger this one was made from: its bindings come first, merged only when a line is written. */
    private readonly outer: DeferredChildLogger | null = null,
  ) {}

  private allBindings(): Bindings {
    return this.outer ? { ...this.outer.allBindings(), ...this.bindings } : this.bindings;
  }

  get level(): string {
    return this.real?.level ?? this.parent.level;
  }

  set level(level: string) {
    this.materialize().level = level;
  }

  private materialize(): FastifyBaseLogger {
    this.real ??= this.parent.child(this.allBindings());
    return this.real;
  }

  private write(level: Level, args: Parameters<LogFn>): void {
    if (this.real) {
      (this.real[level] as (...a: unknown[]) => void)(...args);
      return;
    }
    if (!this.parent.isLevelEnabled(level)) return;
    (this.materialize()[level] as (...a: unknown[]) => void)(...args);
  }

  fatal(...args: Parameters<LogFn>): void {
    this.write('fatal', args);
  }
  error(...args: Parameters<LogFn>): void {
    this.write('error', args);
  }
  warn(...args: Parameters<LogFn>): void {
    this.write('warn', args);
  }
  info(...args: Parameters<LogFn>): void {
    this.write('info', args);
  }
  debug(...args: Parameters<LogFn>): void {
    this.write('debug', args);
  }
  trace(...args: Parameters<LogFn>): void {
    this.write('trace', args);
  }
  silent(): void {}

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    // Options (a route's own level or serializers) need a real pino child; the service sets none.
    if (options && Object.keys(options).length > 0) return this.materialize().child(bindings, options);
    return new DeferredChildLogger(this.parent, bindings, this);
  }
}
