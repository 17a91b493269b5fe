// The legacy cron check-in route, `GET|POST /api/{project_id}/cron/{monitor_slug}/{sentry_key}/`
// (or without the key, which then comes as for envelopes), as Relay serves it: a JSON
// body (application/json: a check-in object, with monitor_config) or, otherwise, the
// query's `status`, `check_in_id`, `environment` and `duration`. Answers 202 with an empty
// body once the check-in is handled, whatever became of it (an unknown monitor without
// a config is dropped; a rate-limited key too, since Relay never answers 429 here);
// a wrong key is 401, a malformed check-in or monitor_config 400.
import type { Credential } from './auth.js';
import { AuthError, credentialsFromRequest } from './auth.js';
import {
  BadPayloadError,
  ClientAbortedError,
  CLIENT_ABORTED,
  CLIENT_CLOSED_REQUEST,
  IngestUnavailableError,
  PayloadTooLargeError,
} from '../errors.js';
import {
  authorize,
  errorReply,
  storeCheckIns,
  type HeaderReader,
  type IngestResponse,
  type PipelineDeps,
} from './pipeline.js';
import { InvalidCheckInError, MonitorConfigError, parseCheckIn, type CheckInInput } from '../monitors/config.js';
import { MAX_CRON_BODY_BYTES } from '../limits.js';

export interface CronRequest {
  projectId: string;
  monitorSlug: string;
  /** The key from the path, when the route has one. */
  pathKey: string | null;
  headers: HeaderReader;
  query: URLSearchParams;
  readBody(limit: number): Promise<Uint8Array>;
}

function checkInFromQuery(query: URLSearchParams, slug: string): CheckInInput {
  const duration = query.get('duration');
  const raw: Record<string, unknown> = {
    status: query.get('status') ?? undefined,
    check_in_id: query.get('check_in_id') ?? undefined,
    environment: query.get('environment') ?? undefined,
  };
  if (duration !== null) {
    const n = Number(duration);
    if (duration.trim() === '' || !Number.isFinite(n))
      throw new InvalidCheckInError('duration must be a number of seconds, 0 or more');
    raw.duration = n;
  }
  if (raw.status === undefined)
    throw new InvalidCheckInError('the query parameter status is required (ok, error or in_progress)');
  return parseCheckIn(raw, slug);
}

export async function handleCronCheckIn(deps: PipelineDeps, req: CronRequest): Promise<IngestResponse> {
  const receivedAt = deps.clock.now();
  const pathProjectId = Number(req.projectId);
  try {
    let credential: Credential | null = credentialsFromRequest({
      xSentryAuth: req.headers.get('x-sentry-auth'),
      authorization: req.headers.get('authorization'),
      query: req.query,
    });
    if (req.pathKey !== null) {
      if (credential && credential.key !== req.pathKey)
        throw new AuthError("the path names a different DSN key than the request's authentication");
      credential = { key: req.pathKey, version: credential?.version ?? null, source: 'path' };
    }
    if (!credential)
      throw new AuthError(
        'missing DSN key: put it in the path (/api/{project_id}/cron/{monitor_slug}/{sentry_key}/), the X-Sentry-Auth header or the sentry_key query parameter',
      );
    const project = await authorize(deps, credential, pathProjectId);
    const decision = await deps.rateLimiter.hit(`dsn:${credential.key}`, receivedAt);
    if (!decision.allowed) return { status: 202, body: {}, headers: {} };

    const contentType = (req.headers.get('content-type') ?? '').split(';')[0].trim().toLowerCase();
    let checkIn: CheckInInput;
    try {
      if (contentType === 'application/json') {
        const body = await req.readBody(MAX_CRON_BODY_BYTES);
        let raw: unknown;
        try {
          raw = JSON.parse(new TextDecoder().decode(body));
        } catch {
          throw new BadPayloadError('the body is not JSON (a check-in object)');
        }
        checkIn = parseCheckIn(raw, req.monitorSlug);
      } else {
        checkIn = checkInFromQuery(req.query, req.monitorSlug);
      }
    } catch (err) {
      if (err instanceof InvalidCheckInError || err instanceof MonitorConfigError)
        throw new BadPayloadError(err.message);
      throw err;
    }
    await storeCheckIns(deps, project.id, [checkIn], receivedAt);
    return { status: 202, body: {}, headers: {} };
  } catch (err) {
    if (err instanceof AuthError) return errorReply(err.status, err.message);
    if (err instanceof PayloadTooLargeError) return errorReply(413, err.message);
    if (err instanceof BadPayloadError) return errorReply(400, err.message);
    if (err instanceof IngestUnavailableError) return errorReply(503, err.message);
    if (err instanceof ClientAbortedError) return errorReply(CLIENT_CLOSED_REQUEST, CLIENT_ABORTED);
    throw err;
  }
}
