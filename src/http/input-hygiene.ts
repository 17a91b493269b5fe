// Input hygiene of the management API (docs/api.md "Conventions"): NUL in the path,
// the query or a JSON body is a 400 on both databases (PostgreSQL refuses NUL in text,
// SQLite would store it), and so is a lone surrogate in a JSON body (SQLite would
// store it as invalid UTF-8); bodies are checked by the JSON reader (errors.ts, with
// unsafeJsonProblem of src/ingest/hygiene.ts). Request targets with dot segments, raw or
// percent-encoded, are refused (404) before a URL parser can resolve them into
// another resource's path (`/api/projects/a/%2e%2e/b` is `/api/projects/b` to WHATWG
// URL parsing).
import type { MiddlewareHandler } from 'hono';
import { errorResponse } from './errors.js';

/** A `.` or `..` segment, raw or percent-encoded, or a backslash (a separator to URL parsers). */
const DOT_SEGMENT = /(?:^|\/)(?:\.|%2e){1,2}(?:\/|$)|\\/i;

/**
 * Whether a raw request target's path (before `?`) has a segment that URL parsing
 * would resolve against its neighbours. Such a target never reaches a route: 404.
 */
export function hasDotSegment(rawPath: string): boolean {
  return DOT_SEGMENT.test(rawPath);
}

/** `%00` anywhere in the request target (a NUL cannot appear raw in one). */
export function hasEncodedNul(rawTarget: string): boolean {
  return /%00/i.test(rawTarget);
}

/** 400 for a NUL in the path or query of any route but ingest (whose text is cleaned instead). */
export function refuseNulInUrl(isExempt: (path: string) => boolean): MiddlewareHandler {
  return async (c, next) => {
    if (hasEncodedNul(c.req.url) && !isExempt(c.req.path)) {
      return errorResponse(c, 400, 'the request path or query holds a NUL character (%00), which is not allowed');
    }
    return next();
  };
}
