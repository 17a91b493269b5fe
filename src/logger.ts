// The logger every part of the app is given (AppDeps.logger): the few calls shared code
// makes, so that it names no logging package. The Node edition passes pino
// (src/editions/node/server.ts), the Workers edition its console logger
// (src/editions/workers/logger.ts); both satisfy this shape as they are.

/** One level's method: fields first and a message, or a message alone. */
export interface LogFn {
  (fields: object, message?: string): void;
  (message: string): void;
}

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export interface Logger {
  debug: LogFn;
  info: LogFn;
  warn: LogFn;
  error: LogFn;
  /** Whether a line at `level` is written, so costly fields are built only then. */
  isLevelEnabled(level: LogLevel): boolean;
}
