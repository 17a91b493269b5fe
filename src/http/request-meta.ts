// What every request gets whichever route (or edition fast path) answers it: its
// request id (X-Request-Id) and its one log line. Shared by the app's middleware
// and the Node edition's direct ingest listener, so both behave the same.
import type { MiddlewareHandler } from 'hono';
import type { Logger } from '../logger.js';

export const REQUEST_ID_HEADER = 'X-Request-Id';

/** A client's id is kept when it is 1-255 word characters, '-' or '='; otherwise a new UUID. */
export function requestIdFor(sent: string | null | undefined): string {
  return sent && sent.length <= 255 && !/[^\w\-=]/.test(sent) ? sent : crypto.randomUUID();
}

/** The one log line per request; the query string is left out (it may carry a DSN key). */
export function logRequest(
  logger: Logger,
  method: string,
  path: string,
  status: number,
  startedMs: number,
  requestId: string,
): void {
  if (!logger.isLevelEnabled('info')) return;
  logger.info(
    {
      method,
      path,
      status,
      duration_ms: Math.round((performance.now() - startedMs) * 100) / 100,
      request_id: requestId,
    },
    'request',
  );
}

/** Sets the request id (context variable `requestId` and response header) and logs the request. */
export function requestMeta(logger: Logger): MiddlewareHandler {
  return async (c, next) => {
    const started = performance.now();
    const id = requestIdFor(c.req.header(REQUEST_ID_HEADER));
    c.set('requestId', id);
    c.header(REQUEST_ID_HEADER, id);
    await next();
    logRequest(logger, c.req.method, c.req.path, c.res.status, started, id);
  };
}
