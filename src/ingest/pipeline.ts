// The ingest request path from an HTTP request (as Web API parts) to the answer:
// credentials → project check → rate limit → body (size limits, Content-Encoding)
// → envelope or legacy store body → normalised events and sessions → the
// group-commit writer → status, JSON body and rate-limit headers. The route module
// only adapts Hono to this; nothing here knows about HTTP frameworks.
import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import type { AppMetrics } from '../metrics.js';
import type { DiskGuard } from '../privacy/disk.js';
import type { BlobBucket } from '../store/blobs.js';
import type { Store } from '../store/database.js';
import type { RateLimiter } from '../store/rate-limits.js';
import type { ProjectRow } from '../store/schema.js';
import { findProjectForIngest } from '../store/projects.js';
import {
  AuthError,
  credentialFromEnvelopeDsn,
  credentialsFromRequest,
  projectIdFromEnvelopeDsn,
  type Credential,
} from './auth.js';
import { decodeContent, type Decompress } from './decode.js';
import { decodeStoreBody, parseEnvelope, type ParsedEnvelope } from './envelope.js';
import {
  BadPayloadError,
  CLIENT_ABORTED,
  CLIENT_CLOSED_REQUEST,
  ClientAbortedError,
  DATABASE_UNAVAILABLE,
  IngestUnavailableError,
  InvalidItemError,
  PayloadTooLargeError,
} from '../errors.js';
import type { Md5Hex } from './grouping.js';
import { normalizeEvent, parseEventPayload, symbolicationInputOf, type ParsedEventPayload } from './normalize.js';
import { cleanUuid, parseTimestamp } from '../protocol-values.js';
import { parseSessionAggregates, parseSessionUpdate } from './sessions.js';
import type {
  EventSymbolicator,
  ExpandMinidump,
  IngestRuntime,
  IngestSink,
  IngestSymbolication,
  IngestWork,
  NormalizedEvent,
  SessionAggregate,
  SessionUpdate,
  SymbolicationInput,
} from './types.js';
import { MAX_BODY_BYTES, MAX_CHECK_INS_PER_ENVELOPE, MAX_EVENTS_PER_ENVELOPE } from '../limits.js';
import {
  collectAttachments,
  MINIDUMP_ATTACHMENT_TYPE,
  type AttachmentItem,
  type PendingAttachment,
} from '../attachments/rules.js';
import { attachmentBlobsOf, storeAttachment } from '../attachments/storage.js';
import { scrubberFor } from '../privacy/scrub.js';
import { InvalidCheckInError, MonitorConfigError, parseCheckIn, type CheckInInput } from '../monitors/config.js';
import { recordCheckIns } from '../monitors/check-ins.js';
import { DISK_LOW_MESSAGE, DISK_RETRY_AFTER_SECONDS } from '../privacy/disk.js';
import { ingestReasonOf } from '../metrics.js';
import { parseFeedbackItem, parseUserReport, type FeedbackInput } from '../feedback/rules.js';
import { storeFeedback } from '../feedback/storage.js';

export type IngestEndpoint = 'envelope' | 'store';

export interface IngestRequest {
  endpoint: IngestEndpoint;
  /** The project id from the path, already known to be all digits. */
  projectId: string;
  /** Web `Headers` satisfies this; an edition may pass a cheaper reader of its own request. */
  headers: HeaderReader;
  query: URLSearchParams;
  /**
   * Reads the whole body, throwing PayloadTooLargeError as soon as more than `limit`
   * bytes arrived (see readBody in decode.ts for the Web-stream version).
   */
  readBody(limit: number): Promise<Uint8Array>;
  /** The address `{{auto}}` user IPs resolve to; null when unknown. */
  clientIp: string | null;
}

/** Reads one request header, as Web `Headers.get` does (repeated values joined with ", "). */
export interface HeaderReader {
  get(name: string): string | null;
}

export interface IngestResponse {
  status: number;
  body: Record<string, unknown>;
  headers: Record<string, string>;
}

/** What the ingest path takes of the app's dependencies (src/context.ts AppDeps extends it); symbolication only as ingest uses it. */
export interface PipelineDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  rateLimiter: RateLimiter;
  ingest: IngestSink;
  ingestRuntime: IngestRuntime;
  /** Free disk space against MIN_FREE_DISK_MB (src/privacy/disk.ts; Node with SQLite). */
  diskGuard?: DiskGuard;
  /** Prometheus metrics (`GET /metrics`; Node: prom-client, a registry per app). */
  metrics?: AppMetrics;
  /**
   * The object store holding payload chunks (src/store/blobs.ts): the serverless edition's
   * R2 bucket when one is bound; absent, bytes live in the database.
   */
  blobs?: BlobBucket;
  /** Symbolication before grouping, for projects that have symbol files. */
  symbols?: IngestSymbolication;
  /** Minidump attachments into events, before symbolication (src/minidump). */
  expandMinidump: ExpandMinidump;
}

function reply(status: number, body: Record<string, unknown>, headers: Record<string, string> = {}): IngestResponse {
  return { status, body, headers };
}

export function errorReply(status: number, message: string, headers: Record<string, string> = {}): IngestResponse {
  // X-Sentry-Error carries the same text: SDKs log it, and browsers can read it (CORS exposes it).
  // Header values must be visible ASCII; the JSON body keeps the exact text.
  const headerText = message.replace(/[^\x20-\x7e]/g, '?').slice(0, 500);
  return reply(status, { error: message }, { 'X-Sentry-Error': headerText, ...headers });
}

/** Decoded request content: an envelope or a single legacy store event. */
type Parsed = { kind: 'envelope'; envelope: ParsedEnvelope } | { kind: 'store'; payload: Uint8Array };

export async function handleIngest(deps: PipelineDeps, req: IngestRequest): Promise<IngestResponse> {
  const counted = { events: 0 };
  const res = await answerIngest(deps, req, counted);
  deps.metrics?.ingestOutcome(ingestReasonOf(res.status, res.body.error), counted.events);
  return res;
}

async function answerIngest(
  deps: PipelineDeps,
  req: IngestRequest,
  counted: { events: number },
): Promise<IngestResponse> {
  const receivedAt = deps.clock.now();
  const pathProjectId = Number(req.projectId);
  try {
    let credential: Credential | null = credentialsFromRequest({
      xSentryAuth: req.headers.get('x-sentry-auth'),
      authorization: req.headers.get('authorization'),
      query: req.query,
    });

    // Low on disk: 503 with Retry-After, before the body is read. SDKs that keep events
    // on disk (sentry-java/Android) send them again; a 429 would make them drop the
    // following ones (docs/privacy.md "Disk guard").
    if (deps.diskGuard && (await deps.diskGuard()).low) {
      return errorReply(503, DISK_LOW_MESSAGE, { 'Retry-After': String(DISK_RETRY_AFTER_SECONDS) });
    }

    const declaredLength = Number(req.headers.get('content-length') ?? '');
    if (Number.isFinite(declaredLength) && declaredLength > MAX_BODY_BYTES) {
      throw new PayloadTooLargeError(
        `the request body is ${declaredLength} bytes; the limit is ${MAX_BODY_BYTES} bytes (20 MB)`,
      );
    }

    // A key outside the body is checked before the body is read, so a wrong key or a
    // rate-limited client costs one lookup, not 20 MB of reading and inflating.
    let project: ProjectRow | null = null;
    if (credential) {
      project = await authorize(deps, credential, pathProjectId);
      const limited = await rateLimit(deps, credential.key);
      if (limited) return limited;
    }

    const wire = await req.readBody(MAX_BODY_BYTES);
    // Parsing and normalising is most of the main thread's work per request. The bodies
    // of a burst of requests finish in one poll phase of the event loop; parsing them
    // back to back right there would hold back the database's answers (PostgreSQL's
    // results, the SQLite batch thread's replies), so each batch's round trip would wait
    // for the whole burst, about 10 of the 28 ms of a PostgreSQL batch. Parsing in the
    // next check phase lets that I/O go first (measured: +16 % requests/s on PostgreSQL,
    // +10 % on SQLite); the Node edition on PostgreSQL also lets it in between the
    // parses of one burst.
    await deps.ingestRuntime.yieldToIo?.();
    const { decompress, md5Hex } = deps.ingestRuntime;
    const body = decodeContent(wire, req.headers.get('content-encoding'), MAX_BODY_BYTES, decompress);
    let parsed = parseBody(req, body, decompress);

    if (parsed.kind === 'envelope') {
      const dsn = parsed.envelope.headers.dsn;
      const fromDsn = credentialFromEnvelopeDsn(dsn);
      if (fromDsn) {
        const dsnProject = projectIdFromEnvelopeDsn(dsn);
        if (dsnProject !== pathProjectId) {
          throw new AuthError(
            `the envelope's dsn names project ${dsnProject}, but the request was sent to project ${pathProjectId}`,
          );
        }
        if (credential && credential.key !== fromDsn.key) {
          throw new AuthError("the envelope's dsn names a different DSN key than the request's authentication");
        }
        if (!credential) {
          credential = fromDsn;
          project = await authorize(deps, credential, pathProjectId);
          const limited = await rateLimit(deps, credential.key);
          if (limited) return limited;
        }
      }
    }
    if (!credential || !project) {
      throw new AuthError(
        'missing DSN key: send it in the X-Sentry-Auth header (Sentry sentry_key=<key>), the sentry_key query parameter, or the envelope header "dsn"',
      );
    }

    // A minidump attachment becomes the envelope's event (src/minidump, passed in), before
    // symbolication; the minidump item stays in the envelope and is kept with that event
    // like the other attachments (src/attachments).
    if (
      parsed.kind === 'envelope' &&
      parsed.envelope.items.some(
        (i) => i.type === 'attachment' && i.headers.attachment_type === MINIDUMP_ATTACHMENT_TYPE,
      )
    ) {
      const started = performance.now();
      const expanded = await deps.expandMinidump(deps.store.db, project.id, parsed.envelope);
      // An unreadable dump leaves the envelope as it came, with no attachment to keep.
      deps.metrics?.observeMinidump((performance.now() - started) / 1000, expanded.attachments.length > 0);
      parsed = { kind: 'envelope', envelope: expanded.envelope };
    }

    const symbolication = deps.symbols ? await prepareSymbolication(deps, deps.symbols, project.id, parsed) : null;
    const { work, skipped, attachments, checkIns, feedback } = buildWork(project, parsed, {
      receivedAt,
      clientIp: req.clientIp,
      md5Hex,
      symbolication,
    });
    if (skipped > 0) deps.logger.debug({ project: project.id, skipped }, 'skipped malformed envelope items');
    counted.events = work.events.length;
    const firstEventId = work.events[0]?.eventId;
    const okBody = firstEventId === undefined ? {} : { id: firstEventId };
    // Cron check-ins (src/monitors) are written apart from the group-commit writer: few, and
    // each a conditional write of its monitor. Answered as Sentry does: 200 whatever became of them.
    if (checkIns.length > 0) await storeCheckIns(deps, project.id, checkIns, receivedAt);
    if (work.events.length === 0 && work.sessions.length === 0 && work.aggregates.length === 0) {
      await commitAfterEvents(deps, project.id, attachments, feedback, receivedAt);
      return reply(200, okBody);
    }

    // Nothing of the work is committed when this throws IngestUnavailableError (→ 503 below).
    const outcome = await deps.ingest.submit(work);
    if (outcome.kind === 'quota_exceeded') {
      const seconds = Math.max(1, Math.ceil(outcome.retryAfterSeconds));
      return errorReply(429, 'daily quota exceeded', {
        'Retry-After': String(seconds),
        'X-Sentry-Rate-Limits': `${seconds}:error;default:project:quota`,
      });
    }
    await commitAfterEvents(deps, project.id, attachments, feedback, receivedAt);
    return reply(200, okBody);
  } catch (err) {
    if (err instanceof AuthError) return errorReply(err.status, err.message);
    if (err instanceof PayloadTooLargeError) return errorReply(413, err.message);
    if (err instanceof BadPayloadError) return errorReply(400, err.message);
    if (err instanceof IngestUnavailableError) return errorReply(503, err.message);
    if (err instanceof ClientAbortedError) {
      deps.logger.info({ project: pathProjectId }, CLIENT_ABORTED);
      return errorReply(CLIENT_CLOSED_REQUEST, CLIENT_ABORTED);
    }
    throw err;
  }
}

/**
 * Stores an envelope's attachments and user feedback once its event is committed,
 * before the answer: a plain event never waits for this, and an SDK that gets 503 here
 * sends the whole envelope again (the event is then a duplicate; files and feedback are
 * stored once).
 */
async function commitAfterEvents(
  deps: PipelineDeps,
  projectId: number,
  attachments: PendingAttachment[],
  feedback: FeedbackInput[],
  receivedAt: number,
): Promise<void> {
  if (attachments.length === 0 && feedback.length === 0) return;
  try {
    await storeAttachment(deps.store, projectId, attachments, attachmentBlobsOf(deps.blobs));
    await storeFeedback(deps.store, projectId, feedback, receivedAt);
  } catch (err) {
    deps.logger.error({ err, project: projectId }, 'storing attachments or feedback failed; answering 503');
    throw new IngestUnavailableError(DATABASE_UNAVAILABLE, { cause: err });
  }
}

/** Records check-ins; a failing database is a 503, as for events, so the client sends them again. */
export async function storeCheckIns(
  deps: PipelineDeps,
  projectId: number,
  checkIns: CheckInInput[],
  receivedAt: number,
): Promise<void> {
  try {
    await recordCheckIns(deps, projectId, checkIns, receivedAt);
  } catch (err) {
    deps.logger.error({ err, project: projectId }, 'recording check-ins failed; answering 503');
    throw new IngestUnavailableError(DATABASE_UNAVAILABLE, { cause: err });
  }
}

export async function authorize(
  deps: PipelineDeps,
  credential: Credential,
  pathProjectId: number,
): Promise<ProjectRow> {
  let project: ProjectRow | undefined;
  try {
    project = await findProjectForIngest(deps.store.db, pathProjectId, credential.key);
  } catch (err) {
    // A failing database is the server's problem, not the request's: 503, so the SDK
    // keeps the event and sends it again, as it does when the writer fails.
    deps.logger.error({ err, project: pathProjectId }, 'project lookup failed during ingest; answering 503');
    throw new IngestUnavailableError(DATABASE_UNAVAILABLE, { cause: err });
  }
  // The same answer for an unknown project and a wrong key: a key probe learns nothing.
  if (!project || project.dsn_key !== credential.key) {
    throw new AuthError(`the DSN key from ${credential.source} is not the key of project ${pathProjectId}`);
  }
  return project;
}

export async function rateLimit(deps: PipelineDeps, key: string): Promise<IngestResponse | null> {
  const decision = await deps.rateLimiter.hit(`dsn:${key}`, deps.clock.now());
  if (decision.allowed) return null;
  const seconds = Math.max(1, Math.ceil(decision.retryAfterSeconds));
  return errorReply(429, 'rate limit exceeded', {
    'Retry-After': String(seconds),
    'X-Sentry-Rate-Limits': `${seconds}::key`,
  });
}

function parseBody(req: IngestRequest, body: Uint8Array, decompress: Decompress): Parsed {
  const contentType = (req.headers.get('content-type') ?? '').split(';')[0].trim().toLowerCase();
  if (req.endpoint === 'envelope' || contentType === 'application/x-sentry-envelope') {
    return { kind: 'envelope', envelope: parseEnvelope(body) };
  }
  return { kind: 'store', payload: decodeStoreBody(body, decompress) };
}

/** The events of a request parsed once, and a symbolicator loaded with the files they need. */
interface PreparedSymbolication {
  parsed: Map<Uint8Array, ParsedEventPayload>;
  symbolicate: EventSymbolicator;
}

/**
 * For a project with symbol files: parses the request's events, loads the symbol files
 * they need (cached across requests) and returns what normalisation symbolicates with.
 * A project without symbol files costs a cached flag lookup. A failure here never fails
 * the request: the events are stored unsymbolicated.
 */
async function prepareSymbolication(
  deps: PipelineDeps,
  symbols: IngestSymbolication,
  projectId: number,
  parsed: Parsed,
): Promise<PreparedSymbolication | null> {
  const payloads =
    parsed.kind === 'store'
      ? [parsed.payload]
      : parsed.envelope.items.filter((item) => item.type === 'event').map((item) => item.payload);
  if (payloads.length === 0 || payloads.length > MAX_EVENTS_PER_ENVELOPE) return null;
  try {
    let has = symbols.projectHasSymbols(projectId);
    if (typeof has !== 'boolean') has = await has;
    if (!has) return null;
    const started = performance.now();
    const events = new Map<Uint8Array, ParsedEventPayload>();
    const inputs: SymbolicationInput[] = [];
    for (const payload of payloads) {
      try {
        const event = parseEventPayload(payload);
        events.set(payload, event);
        inputs.push(symbolicationInputOf(event.ev));
      } catch (err) {
        if (!(err instanceof InvalidItemError)) throw err;
      }
    }
    if (inputs.length === 0) return null;
    const symbolicate = await symbols.prepare(projectId, inputs);
    deps.metrics?.observeSymbolication((performance.now() - started) / 1000);
    return { parsed: events, symbolicate };
  } catch (err) {
    deps.logger.warn({ err, project: projectId }, 'symbolication failed; the events are stored unsymbolicated');
    return null;
  }
}

interface BuildContext {
  receivedAt: number;
  clientIp: string | null;
  md5Hex: Md5Hex;
  symbolication?: PreparedSymbolication | null;
}

/** Envelope items (or the store event) → the writer's work. Malformed items are skipped (and counted). */
export function buildWork(
  project: ProjectRow,
  parsed: Parsed,
  ctx: BuildContext,
): {
  work: IngestWork;
  skipped: number;
  attachments: PendingAttachment[];
  checkIns: CheckInInput[];
  feedback: FeedbackInput[];
} {
  const events: NormalizedEvent[] = [];
  const checkIns: CheckInInput[] = [];
  const sessions: SessionUpdate[] = [];
  const aggregates: SessionAggregate[] = [];
  // Scrubbing (docs/privacy.md) runs inside normalisation, before grouping and storage.
  const scrub = scrubberFor(project);
  const clientIp = project.scrub_ip_addresses ? null : ctx.clientIp;

  if (parsed.kind === 'store') {
    try {
      events.push(
        normalizeEvent(parsed.payload, {
          receivedAt: ctx.receivedAt,
          sentAt: null,
          envelopeEventId: null,
          clientIp,
          md5Hex: ctx.md5Hex,
          parsed: ctx.symbolication?.parsed.get(parsed.payload),
          symbolicate: ctx.symbolication?.symbolicate,
          scrub,
        }),
      );
    } catch (err) {
      // The store body is the one event: if it is unusable, the request is.
      if (err instanceof InvalidItemError)
        throw new BadPayloadError(`the store body is not a usable event: ${err.message}`);
      throw err;
    }
    return {
      work: { project, receivedAt: ctx.receivedAt, events, sessions, aggregates },
      skipped: 0,
      attachments: [],
      checkIns,
      feedback: [],
    };
  }

  const { headers, items } = parsed.envelope;
  let skipped = parsed.envelope.malformed;
  const eventItems = items.filter((item) => item.type === 'event').length;
  if (eventItems > MAX_EVENTS_PER_ENVELOPE) {
    throw new PayloadTooLargeError(
      `the envelope has ${eventItems} event items; at most ${MAX_EVENTS_PER_ENVELOPE} are accepted in one envelope`,
    );
  }
  const checkInItems = items.filter((item) => item.type === 'check_in').length;
  if (checkInItems > MAX_CHECK_INS_PER_ENVELOPE) {
    throw new PayloadTooLargeError(
      `the envelope has ${checkInItems} check_in items; at most ${MAX_CHECK_INS_PER_ENVELOPE} are accepted in one envelope`,
    );
  }
  const sentAt = parseTimestamp(headers.sent_at);
  // The envelope's event_id names one event: only the first event without an id of its
  // own takes it (the rest get random ids), else the dedupe below would drop them all.
  let envelopeEventId = cleanUuid(headers.event_id);
  const headerEventId = envelopeEventId;
  const seen = new Set<string>();
  const attachmentItems: AttachmentItem[] = [];
  const feedback: FeedbackInput[] = [];
  for (const item of items) {
    try {
      switch (item.type) {
        case 'event': {
          const event = normalizeEvent(item.payload, {
            receivedAt: ctx.receivedAt,
            sentAt,
            envelopeEventId,
            clientIp,
            md5Hex: ctx.md5Hex,
            parsed: ctx.symbolication?.parsed.get(item.payload),
            symbolicate: ctx.symbolication?.symbolicate,
            scrub,
          });
          if (event.eventId === envelopeEventId) envelopeEventId = null;
          // The same event twice in one envelope counts once, as a resend would.
          if (seen.has(event.eventId)) break;
          seen.add(event.eventId);
          events.push(event);
          break;
        }
        case 'session':
          sessions.push(parseSessionUpdate(item.payload, { receivedAt: ctx.receivedAt }));
          break;
        case 'sessions':
          aggregates.push(...parseSessionAggregates(item.payload, { receivedAt: ctx.receivedAt }));
          break;
        case 'attachment':
          attachmentItems.push(item);
          break;
        case 'check_in':
          checkIns.push(checkInOf(item.payload));
          break;
        case 'user_report':
          feedback.push(parseUserReport(item.payload, ctx.receivedAt));
          break;
        case 'feedback':
          feedback.push(parseFeedbackItem(item.payload, ctx.receivedAt));
          break;
        default:
          // transaction, client_report, profile, replay_*, …: accepted, dropped.
          break;
      }
    } catch (err) {
      if (!(err instanceof InvalidItemError)) throw err;
      skipped++;
    }
  }
  // Attachments belong to the envelope's event: the header's event_id, else its one event.
  const attachmentEvent = headerEventId ?? (events.length === 1 ? events[0].eventId : null);
  const { attachments, dropped } = collectAttachments(attachmentItems, attachmentEvent);
  return {
    work: { project, receivedAt: ctx.receivedAt, events, sessions, aggregates },
    skipped: skipped + dropped,
    attachments,
    checkIns,
    feedback,
  };
}

/**
 * A check_in item → CheckInInput. An unusable one is skipped like any bad item; a
 * malformed monitor_config refuses the envelope (400), so a typo in a crontab is seen.
 */
function checkInOf(payload: Uint8Array): CheckInInput {
  let raw: unknown;
  try {
    raw = JSON.parse(new TextDecoder().decode(payload));
  } catch {
    throw new InvalidItemError('a check_in item is not JSON');
  }
  try {
    return parseCheckIn(raw);
  } catch (err) {
    if (err instanceof MonitorConfigError) throw new BadPayloadError(err.message);
    if (err instanceof InvalidCheckInError) throw new InvalidItemError(err.message);
    throw err;
  }
}
