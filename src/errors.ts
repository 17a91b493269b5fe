// The error kinds domains raise, a base module so that no domain imports another for
// them. The HTTP layer maps them to status codes; domain code only decides which kind of
// failure happened and stays free of HTTP types.

// Bad input and unknown resources of the read and triage domains: 400 / 404 with the
// message as `{"error": ...}`.
export class ReadInputError extends Error {
  readonly status = 400 as const;
}

export class ReadNotFoundError extends Error {
  readonly status = 404 as const;
}

// Ingest: request bodies and envelope items (src/ingest, and the item rules of
// src/attachments and src/feedback), and the writer behind them.

/** The body (received or decoded) is larger than allowed. HTTP 413. */
export class PayloadTooLargeError extends Error {
  override name = 'PayloadTooLargeError';
}

/**
 * The request as a whole cannot be read: corrupt or truncated compression, an
 * envelope header line that is not a JSON object, a store body that is not JSON.
 * HTTP 400.
 */
export class BadPayloadError extends Error {
  override name = 'BadPayloadError';
}

/** One envelope item is malformed: it is skipped and the rest of the envelope is processed. */
export class InvalidItemError extends Error {
  override name = 'InvalidItemError';
}

/**
 * The database could not take the work (connection lost, constraint, disk full...).
 * Nothing of the batch was written; the HTTP layer answers 503 so the SDK resends.
 */
export class IngestUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'IngestUnavailableError';
  }
}

/** What a 503 says when the database failed: nothing was stored, the SDK should resend. */
export const DATABASE_UNAVAILABLE = 'the database is unavailable; nothing was stored, send again later';

/**
 * The client closed the connection before its request body was complete. Not a
 * failure of the server: nobody is left to answer; logged at info level with the
 * status 499 (nginx's "client closed request") in the request log.
 */
export class ClientAbortedError extends Error {
  constructor(options?: { cause?: unknown }) {
    super(CLIENT_ABORTED, options);
    this.name = 'ClientAbortedError';
  }
}

export const CLIENT_ABORTED = 'the client closed the connection before the request body was complete';

/** The request-log status of a request whose client went away before its body was complete. */
export const CLIENT_CLOSED_REQUEST = 499;

/**
 * Whether `err` is a client abort: a ClientAbortedError, or the error Node's request
 * stream fails with when its connection closes mid-body (reached through Web streams).
 */
export function isClientAbort(err: unknown): boolean {
  if (err instanceof ClientAbortedError) return true;
  const e = err as { code?: unknown; message?: unknown } | null;
  return typeof e === 'object' && e !== null && e.code === 'ECONNRESET' && e.message === 'aborted';
}
