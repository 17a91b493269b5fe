// The serverless edition's logger: pino (its browser build, which bundlers pick for
// Workers) writing one JSON object per line to the console, where Workers Logs and
// `wrangler tail` collect it. Same shape as the Node edition's lines: numeric level,
// time, msg and the fields; errors serialised by pino's standard serializer.
import pino from 'pino';
import type { Logger } from '../../logger.js';

export function createWorkerLogger(level: string): Logger {
  return pino({
    level,
    serializers: { err: pino.stdSerializers.err },
    browser: {
      asObject: true,
      serialize: true,
      write: (entry) => console.log(JSON.stringify(entry)),
    },
  });
}
