// A pino logger whose JSON lines a test can read back (request lines, error lines).
import { Writable } from 'node:stream';
import pino, { type Logger } from 'pino';

export function captureLogger(level: pino.Level = 'info'): { logger: Logger; lines: Record<string, any>[] } {
  const lines: Record<string, any>[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      for (const line of String(chunk).split('\n')) if (line.trim()) lines.push(JSON.parse(line));
      cb();
    },
  });
  return { logger: pino({ level }, stream), lines };
}
