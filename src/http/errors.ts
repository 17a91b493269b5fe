// HTTP error shapes: every failure leaves the app as `{"error": "..."}`. Route
// code throws HttpError (or answers with errorResponse); the app's error
// handler turns anything else into a 500 without internals, logged with the
// request id. Also home of the shared JSON body reader (400 on malformed JSON).
import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { Logger } from '../logger.js';
import type { ZodError } from 'zod';
import { CLIENT_ABORTED, CLIENT_CLOSED_REQUEST, isClientAbort } from '../ingest/errors.js';
import { unsafeJsonProblem } from './input-hygiene.js';

export class HttpError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export function errorResponse(c: Context, status: ContentfulStatusCode, message: string, headers: Record<string, string> = {}): Response {
  return c.json({ error: message }, status, headers);
}

export const notFound = (what: string) => new HttpError(404, `${what} not found`);
export const badRequest = (message: string) => new HttpError(400, message);

/**
 * Reads the request body as JSON. Malformed JSON is a 400 saying so; an empty
 * body reads as `undefined` so callers decide whether that is allowed. Content-Type
 * is not required (curl -d sends a form type).
 */
export async function readJson(c: Context): Promise<unknown> {
  const text = await c.req.text();
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

export function logUnexpectedFailure(logger: Logger, err: unknown, requestId: string, method: string, path: string): void {
  logger.error({ err, request_id: requestId, method, path }, 'unexpected failure while handling a request');
}
