// Input hygiene of the management API (DECISIONS "Input hygiene"): NUL in the path,
// the query or a JSON body is a 400 on both databases (PostgreSQL refuses NUL in text,
// SQLite would store it), and so is a lone surrogate in a JSON body (SQLite would
// store it as invalid UTF-8). Request targets with dot segments, raw or
// percent-encoded, are refused (404) before a URL parser can resolve them into
// another resource's path (`/api/projects/a/%2e%2e/b` is `/api/projects/b` to WHATWG
// URL parsing).
import type { MiddlewareHandler } from 'hono';
import { hasUnsafeText } from '../ingest/hygiene.js';
import { MAX_JSON_DEPTH } from '../limits.js';
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

/**
 * Why a parsed management JSON body cannot be stored as sent, or null: a string or
 * key with NUL or a lone surrogate, or nesting deeper than MAX_JSON_DEPTH. Iterative.
 */
export function unsafeJsonProblem(root: unknown): string | null {
  const stack: Array<[unknown, number]> = [[root, 0]];
  while (stack.length > 0) {
    const [value, depth] = stack.pop()!;
    if (typeof value === 'string') {
      if (hasUnsafeText(value)) return 'request body holds a NUL character or a lone surrogate, which is not allowed';
    } else if (typeof value === 'object' && value !== null) {
      if (depth >= MAX_JSON_DEPTH) return `request body is nested deeper than ${MAX_JSON_DEPTH} levels`;
      for (const key of Object.keys(value)) {
        if (hasUnsafeText(key)) return 'request body holds a NUL character or a lone surrogate, which is not allowed';
        stack.push([(value as Record<string, unknown>)[key], depth + 1]);
      }
    }
  }
  return null;
}
