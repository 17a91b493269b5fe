// HTTP error shapes: every failure leaves the app as `{"error": "..."}`. Route
// code throws HttpError (or answers with errorResponse); the app's error
// handler turns anything else into a 500 without internals, logged with the
// request id. Also home of the one JSON body reader of every route (400 on malformed
// JSON and on text a database cannot store, see input-hygiene.ts).
import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { Logger } from '../logger.js';
import type { ZodError } from 'zod';
import { readBody } from '../ingest/decode.js';
import { CLIENT_ABORTED, CLIENT_CLOSED_REQUEST, isClientAbort, PayloadTooLargeError } from '../errors.js';
import { MANAGEMENT_BODY_LIMIT } from '../limits.js';
import { unsafeJsonProblem } from '../ingest/hygiene.js';

export class HttpError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export function errorResponse(
  c: Context,
  status: ContentfulStatusCode,
  message: string,
  headers: Record<string, string> = {},
): Response {
  return c.json({ error: message }, status, headers);
}

export const notFound = (what: string) => new HttpError(404, `${what} not found`);
export const badRequest = (message: string) => new HttpError(400, message);

/**
 * Reads the request body as JSON: the one reader of every JSON route, management and
 * /api/0/ alike. Past `limit` bytes a 413 (the rest of the body is not read, so the
 * connection closes after the answer); malformed JSON, a NUL or lone surrogate in any
 * string or key, or nesting past MAX_JSON_DEPTH is a 400 saying so. An empty body reads
 * as `undefined` so callers decide whether that is allowed. Content-Type is not
 * required (curl -d sends a form type).
 */
export async function readJson(c: Context, limit: number = MANAGEMENT_BODY_LIMIT): Promise<unknown> {
  let bytes: Uint8Array;
  try {
    bytes = await readBody(c.req.raw.body, limit);
  } catch (err) {
    if (err instanceof PayloadTooLargeError)
      throw new HttpError(413, `request body is larger than ${limit} bytes`, { Connection: 'close' });
    throw err;
  }
  const text = new TextDecoder().decode(bytes);
  if (text.trim() === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw badRequest('request body is not valid JSON');
  }
  const problem = unsafeJsonProblem(value);
  if (problem) throw badRequest(problem);
  return value;
}

/** Reads a JSON object body; anything else (array, string, nothing) is a 400. */
export async function readJsonObject(c: Context): Promise<Record<string, unknown>> {
  const body = await readJson(c);
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw badRequest('request body must be a JSON object');
  }
  return body as Record<string, unknown>;
}

/** One readable sentence from a zod failure: each distinct message, in order, joined by "; ". */
export function zodMessage(error: ZodError): string {
  const messages: string[] = [];
  for (const issue of error.issues) {
    let message = issue.message;
    if (issue.code === 'unrecognized_keys' && message.startsWith('Unrecognized key')) {
      message = issue.keys.map((k) => `unknown field "${k}"`).join('; ');
    }
    if (!messages.includes(message)) messages.push(message);
  }
  return messages.join('; ');
}

/** The app-wide error handler: known errors keep their status, the rest become 500. */
export function handleError(err: Error, c: Context, logger: Logger): Response {
  if (err instanceof HttpError) return errorResponse(c, err.status, err.message, err.headers);
  if (err instanceof HTTPException) {
    if (err.status === 413) return errorResponse(c, 413, 'request body too large');
    if (err.status < 500) return errorResponse(c, err.status, err.message || 'bad request');
  }
  if (isClientAbort(err)) {
    logger.info({ request_id: c.get('requestId'), method: c.req.method, path: c.req.path }, CLIENT_ABORTED);
    return errorResponse(c, CLIENT_CLOSED_REQUEST as ContentfulStatusCode, CLIENT_ABORTED);
  }
  logUnexpectedFailure(logger, err, c.get('requestId'), c.req.method, c.req.path);
  return errorResponse(c, 500, INTERNAL_ERROR);
}

/** What a 500 says: never the internals, which go to the log with the request id. */
export const INTERNAL_ERROR = 'internal error';

export function logUnexpectedFailure(
  logger: Logger,
  err: unknown,
  requestId: string,
  method: string,
  path: string,
): void {
  logger.error({ err, request_id: requestId, method, path }, 'unexpected failure while handling a request');
}
