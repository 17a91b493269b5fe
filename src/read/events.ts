// Event queries: the keyset-paged list (newest first, `before` = an event id)
// with exact-match, tag, text and crash filters, and the detail of one stored
// event (decoded normalised detail, symbolicated frames, raw payload). Paging is
// by id, so new events (always higher ids) never shift a page a reader is on.
import { sql, type Kysely, type SelectQueryBuilder } from 'kysely';
import { HOUR_MS, iso } from '../clock.js';
import { decodeSymbolicated, decodeSymbolicatedThreads } from '../ingest/symbolicated.js';
import type { BlobBucket } from '../store/blobs.js';
import { decodeJsonBlob, readStoredPayload, type DecompressBlob } from '../store/stored-payload.js';
import { eventDetailFromRaw } from '../ingest/normalize.js';
import { findIssueOrMerged } from './merge.js';
import type { EventDetailData } from '../ingest/types.js';
import type { Database, EventRow } from '../store/schema.js';
import { eventTitle, fillEventTags } from '../store/event-text.js';
import { EVENT_FIELD_NAMES } from '../store/ingest-rows.js';
import { ReadInputError, ReadNotFoundError } from '../errors.js';
import { containsText, parseLimit, WINDOW_PARAMETERS, type RouteParameters } from './params.js';
import { parseWindow, type QueryParams, type TimeWindow } from './window.js';
import { MAX_TAG_FILTERS } from '../limits.js';

type Db = Kysely<Database>;

/** Query parameters that match a column of the same name exactly. */
export const EXACT_FILTERS = [
  'level',
  'release',
  'environment',
  'platform',
  'error_type',
  'user_id',
  'device_id',
  'device_model',
  'os_version',
  'screen',
  'error_location',
] as const;
type ExactFilter = (typeof EXACT_FILTERS)[number];

/** Every column of an event row except the large blobs. */
/** An event's summary: its ids and the columns its own fields fill (one list, src/store/ingest-rows.ts). */
const SUMMARY_COLUMNS = ['id', 'issue_id', ...EVENT_FIELD_NAMES] as const;

export type EventSummaryRow = Pick<EventRow, (typeof SUMMARY_COLUMNS)[number]>;

export interface EventListQuery {
  exact: Partial<Record<ExactFilter, string>>;
  fingerprint?: string;
  tags: [string, string][];
  q?: string;
  crash: boolean;
  before?: number;
  limit: number;
  window: TimeWindow | null;
}

/** The events list's parameters (checkParameters). */
export const EVENT_LIST_PARAMETERS: RouteParameters = {
  names: [...EXACT_FILTERS, 'fingerprint', 'q', 'crash', 'before', 'limit', ...WINDOW_PARAMETERS],
  prefixes: ['tag.'],
};

export function parseEventListQuery(query: QueryParams, now: number): EventListQuery {
  const exact: EventListQuery['exact'] = {};
  for (const key of EXACT_FILTERS) if (query[key] !== undefined) exact[key] = query[key];
  const tags: [string, string][] = [];
  for (const [name, value] of Object.entries(query)) {
    if (!name.startsWith('tag.') || value === undefined) continue;
    const key = name.slice(4);
    if (key === '') throw new ReadInputError('tag filters are written tag.<key>=<value>; the tag key may not be empty');
    tags.push([key, value]);
  }
  if (tags.length > MAX_TAG_FILTERS)
    throw new ReadInputError(`at most ${MAX_TAG_FILTERS} tag.<key> filters may be combined`);
  let crash = false;
  if (query.crash !== undefined) {
    const v = query.crash.trim().toLowerCase();
    if (v === '1' || v === 'true') crash = true;
    else if (v !== '0' && v !== 'false')
      throw new ReadInputError(
        `crash must be 1 or true (only crashes), or 0 or false (no filter) (got ${JSON.stringify(query.crash)})`,
      );
  }
  let before: number | undefined;
  if (query.before !== undefined) {
    const text = query.before.trim();
    if (!/^[0-9]{1,16}$/.test(text) || !Number.isSafeInteger(Number(text)) || Number(text) < 1) {
      throw new ReadInputError(
        `before must be an event id (a positive integer), as given in next_before (got ${JSON.stringify(query.before)})`,
      );
    }
    before = Number(text);
  }
  return {
    exact,
    fingerprint: query.fingerprint,
    tags,
    q: query.q === undefined || query.q === '' ? undefined : query.q,
    crash,
    before,
    limit: parseLimit(query.limit),
    window: parseWindow(query, now, { optional: true }),
  };
}

export interface EventSummaryJson {
  id: number;
  event_id: string;
  time: string;
  received_at: string;
  level: string;
  title: string;
  message: string;
  release: string;
  dist: string;
  environment: string;
  platform: string;
  fingerprint: string;
  crash: boolean;
  error_type: string;
  error_location: string;
  screen: string;
  user: { id: string | null; email: string | null; username: string | null; ip_address: string | null } | null;
  device: { id: string | null; model: string | null };
  os: { name: string | null; version: string | null };
  tags: Record<string, string>;
}

function parseTags(text: string): Record<string, string> {
  try {
    const v = JSON.parse(text);
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, string>) : {};
  } catch {
    return {};
  }
}

export function eventSummaryJson(row: EventSummaryRow): EventSummaryJson {
  const hasUser = row.user_id !== null || row.user_email !== null || row.user_username !== null || row.user_ip !== null;
  return {
    id: Number(row.id),
    event_id: row.event_id,
    time: iso(Number(row.timestamp)),
    received_at: iso(Number(row.received_at)),
    level: row.level,
    title: eventTitle(row),
    message: row.message,
    release: row.release,
    dist: row.dist,
    environment: row.environment,
    platform: row.platform,
    fingerprint: row.fingerprint,
    crash: Number(row.is_crash) === 1,
    error_type: row.error_type,
    error_location: row.error_location,
    screen: row.screen,
    user: hasUser
      ? { id: row.user_id, email: row.user_email, username: row.user_username, ip_address: row.user_ip }
      : null,
    device: { id: row.device_id, model: row.device_model },
    os: { name: row.os_name, version: row.os_version },
    tags: parseTags(row.tags),
  };
}

/**
 * Most index entries one list request walks when filters the walking index does
 * not serve (q, crash, window, most exact matches) are present. The page then
 * holds what matched among them, `more` is true and `next_before` continues
 * below the last entry examined, so a rare filter costs bounded work per page
 * instead of a scan over every event of the project, and paging stays lossless.
 */
export const SCAN_BUDGET = 20_000;

/** The index a list request walks newest first (see docs/architecture.md "Reads"). */
export type Driver =
  | { kind: 'issue'; issueId: number }
  | { kind: 'tag'; key: string; value: string }
  | { kind: 'user'; value: string }
  | { kind: 'release'; value: string }
  | { kind: 'project' };

function chooseDriver(q: EventListQuery, issueId: number | undefined): Driver {
  if (issueId !== undefined) return { kind: 'issue', issueId };
  if (q.tags.length > 0) return { kind: 'tag', key: q.tags[0][0], value: q.tags[0][1] };
  if (q.exact.user_id !== undefined) return { kind: 'user', value: q.exact.user_id };
  if (q.exact.release !== undefined) return { kind: 'release', value: q.exact.release };
  return { kind: 'project' };
}

/**
 * How late an event's row may be written after its receive time (the request's
 * body upload, bounded by Node's 5-minute request timeout, plus the writer's
 * queue), and how far the clocks of instances sharing a database may disagree.
 * See windowFloor.
 */
export const RECEIVE_SLACK_MS = 10 * 60_000;

/**
 * An id at or below which no event can lie in a window starting at `from`, or
 * undefined when every stored event may. Ingest clamps an event time more than an
 * hour past the receive time to the receive time, so an event in the window was
 * received at or after `from − 1 h`. Ids are taken in insert order, and a row is
 * inserted within RECEIVE_SLACK_MS of its receive time, so every event with an id
 * below that of one received before `from − 1 h − slack` was itself received before
 * `from − 1 h`. One probe of events_received finds such an event (any project).
 */
async function windowFloor(db: Db, from: number): Promise<number | undefined> {
  const row = await db
    .selectFrom('events')
    .select('id')
    .where('received_at', '<', from - HOUR_MS - RECEIVE_SLACK_MS)
    .orderBy('received_at', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row ? Number(row.id) : undefined;
}

/**
 * The id of the budget-th entry below `before` (and above `above`) on the
 * driver's index, or undefined when fewer entries remain (the walk then reaches
 * the end).
 */
export async function scanFloor(
  db: Db,
  projectId: number,
  driver: Driver,
  before: number | undefined,
  above: number | undefined,
  budget: number,
): Promise<number | undefined> {
  if (driver.kind === 'tag') {
    let q = db
      .selectFrom('event_tags')
      .select('event_id as id')
      .where('project_id', '=', projectId)
      .where('key', '=', driver.key)
      .where('value', '=', driver.value);
    if (before !== undefined) q = q.where('event_id', '<', before);
    if (above !== undefined) q = q.where('event_id', '>', above);
    const row = await q.orderBy('event_id', 'desc').offset(budget).limit(1).executeTakeFirst();
    return row ? Number(row.id) : undefined;
  }
  let q = db.selectFrom('events').select('id');
  if (driver.kind === 'issue') q = q.where('issue_id', '=', driver.issueId);
  else {
    q = q.where('project_id', '=', projectId);
    if (driver.kind === 'user') q = q.where('user_id', '=', driver.value);
    if (driver.kind === 'release') q = q.where('release', '=', driver.value);
  }
  if (before !== undefined) q = q.where('id', '<', before);
  if (above !== undefined) q = q.where('id', '>', above);
  const row = await q.orderBy('id', 'desc').offset(budget).limit(1).executeTakeFirst();
  return row ? Number(row.id) : undefined;
}

export async function listEvents(
  db: Db,
  projectId: number,
  q: EventListQuery,
  options: { scanBudget?: number } = {},
): Promise<{ events: EventSummaryJson[]; more: boolean; next_before: number | null }> {
  let issueId: number | undefined;
  if (q.fingerprint !== undefined) {
    // The issue's id drives the events(issue_id, id) index; an unknown fingerprint matches
    // nothing, a merged one the events of the issue it was merged into.
    const issue = await findIssueOrMerged(db, projectId, q.fingerprint);
    if (!issue) return { events: [], more: false, next_before: null };
    issueId = Number(issue.row.id);
  }
  const driver = chooseDriver(q, issueId);

  // Filters the driver's index does not answer: with any of them, the walk gets a floor.
  const residualExact = EXACT_FILTERS.filter(
    (k) =>
      q.exact[k] !== undefined &&
      !(k === 'user_id' && driver.kind === 'user') &&
      !(k === 'release' && driver.kind === 'release'),
  );
  const residualTags = driver.kind === 'tag' ? q.tags.slice(1) : q.tags;
  const residual =
    residualExact.length > 0 || residualTags.length > 0 || q.crash || q.q !== undefined || q.window !== null;
  const budget = options.scanBudget ?? SCAN_BUDGET;
  // With a window, ids at or below `lowest` hold no event of it: the walk ends there.
  const lowest = q.window ? await windowFloor(db, q.window.from) : undefined;
  const floor = residual ? await scanFloor(db, projectId, driver, q.before, lowest, budget) : undefined;

  /** The id range this request may walk, applied to every index it touches. */
  const bounded = <B extends { where: (...args: any[]) => B }>(query: B, column: string): B => {
    let out = query;
    if (q.before !== undefined) out = out.where(column, '<', q.before);
    if (floor !== undefined) out = out.where(column, '>=', floor);
    else if (lowest !== undefined) out = out.where(column, '>', lowest);
    return out;
  };

  let query: SelectQueryBuilder<Database, 'events', object>;
  if (driver.kind === 'tag') {
    // The tag's entries, newest first, cut to what this request may examine (one page, or
    // the scan budget when other filters may reject entries) before joining to events: the
    // join then looks up at most that many events by primary key, whatever plan is chosen.
    const tagged = bounded(
      db
        .selectFrom('event_tags')
        .select('event_tags.event_id')
        .where('event_tags.project_id', '=', projectId)
        .where('event_tags.key', '=', driver.key)
        .where('event_tags.value', '=', driver.value),
      'event_tags.event_id',
    )
      .orderBy('event_tags.event_id', 'desc')
      .limit(residual ? budget + 1 : q.limit + 1);
    // CROSS JOIN: SQLite keeps the written order, so the tag's entries drive and each looks
    // its event up by primary key. With an inner join it preferred walking the project's
    // events newest first (that order needs no sort) and probing the tag for each: every
    // newer event was read when the tag is rare. PostgreSQL plans both forms alike.
    query = db
      .selectFrom(tagged.as('tagged'))
      .crossJoin('events')
      .whereRef('events.id', '=', 'tagged.event_id')
      .where('events.project_id', '=', projectId) as unknown as SelectQueryBuilder<Database, 'events', object>;
  } else {
    query = db.selectFrom('events');
    query =
      driver.kind === 'issue'
        ? query.where('events.issue_id', '=', driver.issueId)
        : query.where('events.project_id', '=', projectId);
  }
  query = bounded(query, 'events.id');
  for (const [key, value] of residualTags) {
    // One probe of event_tags_lookup (project_id, key, value, event_id) per walked event.
    // An OFFSET keeps PostgreSQL from turning the EXISTS into a semi-join, which could hash
    // every entry of the tag value instead of stopping when the page is full.
    query = query.where((eb) =>
      eb.exists(
        eb
          .selectFrom('event_tags as t')
          .select(sql.lit(1).as('one'))
          .where('t.project_id', '=', projectId)
          .where('t.key', '=', key)
          .where('t.value', '=', value)
          .whereRef('t.event_id', '=', 'events.id')
          .limit(1)
          .offset(0),
      ),
    );
  }
  for (const key of EXACT_FILTERS) {
    const value = q.exact[key];
    if (value !== undefined) query = query.where(`events.${key}`, '=', value);
  }
  if (q.crash) query = query.where('events.is_crash', '=', 1);
  if (q.q !== undefined) {
    query = query.where(containsText('events.message', q.q));
  }
  if (q.window)
    query = query.where('events.timestamp', '>=', q.window.from).where('events.timestamp', '<', q.window.to);

  const rows = (await query
    .select(SUMMARY_COLUMNS.map((c) => `events.${c}` as const))
    .orderBy('events.id', 'desc')
    .limit(q.limit + 1)
    .execute()) as EventSummaryRow[];
  const full = rows.length > q.limit;
  const page = full ? rows.slice(0, q.limit) : rows;
  // A full page continues below its last event; a short page cut by the floor
  // continues below the floor (everything down to it was examined).
  const next = full ? Number(page[page.length - 1].id) : floor !== undefined ? floor : null;
  await fillEventTags(db, page);
  return { events: page.map(eventSummaryJson), more: next !== null, next_before: next };
}

export type RawPresentation = { raw: unknown; raw_encoding: 'json' | 'base64' };

/** The raw payload as received: parsed JSON when it is JSON text, else base64 of the bytes. */
export function presentRaw(bytes: Uint8Array): RawPresentation {
  try {
    const text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    return { raw: JSON.parse(text), raw_encoding: 'json' };
  } catch {
    return { raw: toBase64(bytes), raw_encoding: 'base64' };
  }
}

function toBase64(bytes: Uint8Array): string {
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

function parseJsonOrNull(text: string | null): unknown {
  if (text === null) return null;
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** Looks an event up by integer id or by the SDK's event_id (32 hex, dashes allowed). */
export async function findEvent(db: Db, projectId: number, idOrEventId: string): Promise<EventRow> {
  const text = idOrEventId.trim().toLowerCase();
  let row: EventRow | undefined;
  if (/^[0-9]{1,16}$/.test(text) && Number.isSafeInteger(Number(text))) {
    row = await db
      .selectFrom('events')
      .selectAll()
      .where('project_id', '=', projectId)
      .where('id', '=', Number(text))
      .executeTakeFirst();
  } else {
    const hex = text.replace(/-/g, '');
    if (/^[0-9a-f]{32}$/.test(hex)) {
      // seen_events.stored_id leads to the row (events has no index on event_id).
      row = await db
        .selectFrom('seen_events as s')
        .innerJoin('events as e', 'e.id', 's.stored_id')
        .selectAll('e')
        .where('s.project_id', '=', projectId)
        .where('s.event_id', '=', hex)
        .where('e.project_id', '=', projectId)
        .where('e.event_id', '=', hex)
        .executeTakeFirst();
    }
  }
  if (!row)
    throw new ReadNotFoundError(
      `event ${JSON.stringify(idOrEventId)} not found in this project (give its id or its 32-hex event_id)`,
    );
  return row;
}

/** Ingest stores only payloads it could normalise; a row changed since (by hand) still answers. */
function detailOrNothing(raw: Uint8Array, userIp: string | null): Partial<EventDetailData> {
  try {
    return eventDetailFromRaw(raw, userIp);
  } catch {
    return {};
  }
}

/**
 * The issue's events just older and just newer than `id` (events_issue_id index, one seek
 * each), for paging through an issue's events one at a time; null at either end.
 */
async function neighbours(
  db: Db,
  issueId: number,
  id: number,
): Promise<{ previous_id: number | null; next_id: number | null }> {
  const [older, newer] = await Promise.all([
    db
      .selectFrom('events')
      .select('id')
      .where('issue_id', '=', issueId)
      .where('id', '<', id)
      .orderBy('id', 'desc')
      .limit(1)
      .executeTakeFirst(),
    db
      .selectFrom('events')
      .select('id')
      .where('issue_id', '=', issueId)
      .where('id', '>', id)
      .orderBy('id', 'asc')
      .limit(1)
      .executeTakeFirst(),
  ]);
  return { previous_id: older ? Number(older.id) : null, next_id: newer ? Number(newer.id) : null };
}

export async function eventDetail(
  db: Db,
  projectId: number,
  idOrEventId: string,
  decompressBlob: DecompressBlob,
  blobs?: BlobBucket,
) {
  return eventDetailOf(db, await findEvent(db, projectId, idOrEventId), decompressBlob, blobs);
}

/** eventDetail of a row already found (findEvent), so a page can read the event's files beside it. */
export async function eventDetailOf(db: Db, row: EventRow, decompressBlob: DecompressBlob, blobs?: BlobBucket) {
  const [raw, around] = await Promise.all([
    readStoredPayload(db, row, decompressBlob, blobs),
    neighbours(db, Number(row.issue_id), Number(row.id)),
    fillEventTags(db, [row]),
  ]);
  // Rows written before the detail was derived on read still carry it encoded.
  const detail: Partial<EventDetailData> =
    row.detail.byteLength > 0
      ? (decodeJsonBlob<Partial<EventDetailData>>(row.detail, decompressBlob) ?? {})
      : detailOrNothing(raw, row.user_ip);
  const summary = eventSummaryJson(row);
  const exceptions = Array.isArray(detail.exceptions) ? detail.exceptions : [];
  // Symbolicated frames are stored per exception, in the chain's order; they go beside the
  // originals. A type symbolication remapped (ProGuard) replaces the obfuscated one.
  const stored = parseJsonOrNull(row.symbolicated);
  const perException = decodeSymbolicated(stored, exceptions.length);
  const perThread = decodeSymbolicatedThreads(stored, exceptions.length);
  return {
    ...summary,
    // The user object as sent (geo, extra keys), with the normalised identity fields on top.
    user: summary.user ? { ...(detail.user ?? {}), ...summary.user } : (detail.user ?? null),
    sdk: detail.sdk ?? (row.sdk_name ? { name: row.sdk_name } : null),
    exceptions: exceptions.map((e, i) => {
      const s = perException?.[i];
      // The type as received stays beside the remapped one, so a reader can match it to logs.
      const remapped =
        s?.type !== undefined
          ? {
              type: s.type,
              ...(s.module !== undefined ? { module: s.module } : {}),
              obfuscated_type: e.module ? `${e.module}.${e.type}` : e.type,
            }
          : {};
      return { ...e, ...remapped, symbolicated_frames: s?.frames ?? null };
    }),
    symbolicated: row.symbolicated !== null,
    breadcrumbs: detail.breadcrumbs ?? [],
    contexts: detail.contexts ?? {},
    request: detail.request ?? null,
    extra: detail.extra ?? null,
    debug_images: detail.debug_images ?? [],
    // Threads' symbolicated frames, in the detail's order (the crashed thread first), likewise beside the originals.
    threads: (Array.isArray(detail.threads) ? detail.threads : []).map((t, i) => ({
      ...t,
      symbolicated_frames: perThread?.[i] ?? null,
    })),
    fingerprint_input: detail.fingerprint_input ?? null,
    logger: detail.logger ?? null,
    server_name: detail.server_name ?? null,
    // What server-side scrubbing replaced (docs/privacy.md), like Sentry's `_meta` remarks.
    scrubbed: detail.scrubbed ?? null,
    ...around,
    raw_size: raw.byteLength,
    ...presentRaw(raw),
  };
}
