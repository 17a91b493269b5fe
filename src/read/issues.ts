// Issue queries: the filtered, sorted list with sparklines, the detail (hourly
// timeline, breakdown over the newest stored events, newest/oldest stored event), and the
// status workflow (single and bulk). Every query is served by an index on
// issues, issue_hourly or events(issue_id, …); see docs/architecture.md.
import { sql, type CompiledQuery, type Kysely, type QueryResult, type SelectQueryBuilder } from 'kysely';
import { HOUR_MS, hourBucket, iso } from '../clock.js';
import { LAST_SEEN_MINUTE_MS, type Database, type IssueRow } from '../store/schema.js';
import { ReadInputError, ReadNotFoundError } from './errors.js';
import {
  ISSUE_STATUSES,
  LEVELS,
  containsText,
  isIssueStatus,
  parseEnum,
  parseLimit,
  parseOffset,
  WINDOW_PARAMETERS,
  type IssueStatus,
  type RouteParameters,
} from './params.js';
import { scanFloor } from './events.js';
import { findIssueOrMerged } from './merge.js';
import { compareText, issueJson, type IssueJson } from './serialize.js';
import { feedbackCounts } from '../feedback/storage.js';
import { bucketList, parseWindow, windowBuckets, type QueryParams, type TimeWindow } from './window.js';
import { MAX_BULK, MAX_EVENT_CLOCK_AHEAD_MS } from '../limits.js';

type Db = Kysely<Database>;
// biome-ignore lint/complexity/noBannedTypes: Kysely's type for a query that selects nothing yet
type IssueQuery = SelectQueryBuilder<Database, 'issues', {}>;

export const SPARKLINE_HOURS = 24;
export const ISSUE_SORTS = ['last_seen', 'first_seen', 'events'] as const;
export const BREAKDOWN_KEYS = ['release', 'device_model', 'os_version', 'environment'] as const;
export const BREAKDOWN_TOP = 10;
/** The breakdown counts over at most this many of the issue's newest stored events in the window. */
export const BREAKDOWN_EVENTS = 10_000;
/** The breakdown walks at most this many times BREAKDOWN_EVENTS of the issue's newest events. */
export const BREAKDOWN_SCAN_FACTOR = 2;

/**
 * Sparklines for many issues in one query over issue_hourly's primary key:
 * 24 hourly counts, oldest first, the last one the hour containing `now`.
 */
export async function sparklines(db: Db, issueIds: number[], now: number): Promise<Map<number, number[]>> {
  const last = hourBucket(now);
  const first = last - (SPARKLINE_HOURS - 1) * HOUR_MS;
  const out = new Map<number, number[]>();
  for (const id of issueIds) out.set(id, new Array(SPARKLINE_HOURS).fill(0));
  for (let i = 0; i < issueIds.length; i += 1000) {
    const chunk = issueIds.slice(i, i + 1000);
    const rows = await db
      .selectFrom('issue_hourly')
      .select(['issue_id', 'bucket', 'events'])
      .where('issue_id', 'in', chunk)
      .where('bucket', '>=', first)
      .where('bucket', '<=', last)
      .execute();
    for (const r of rows) {
      const line = out.get(Number(r.issue_id));
      if (line) line[(Number(r.bucket) - first) / HOUR_MS] += Number(r.events);
    }
  }
  return out;
}

/** Issue rows with their sparklines, in the rows' order. */
export async function issuesWithSparklines(db: Db, rows: IssueRow[], now: number): Promise<IssueJson[]> {
  const ids = rows.map((r) => Number(r.id));
  const [lines, feedback] = await Promise.all([sparklines(db, ids, now), rows.length > 0 ? feedbackCounts(db, Number(rows[0].project_id), ids) : new Map<number, number>()]);
  return rows.map((r) => ({ ...issueJson(r, lines.get(Number(r.id))), feedback_count: feedback.get(Number(r.id)) ?? 0 }));
}

export interface IssueListQuery {
  status?: IssueStatus;
  level?: string;
  release?: string;
  q?: string;
  sort: (typeof ISSUE_SORTS)[number];
  limit: number;
  offset: number;
  window: TimeWindow;
}

/** The issues list's parameters (checkParameters). */
export const ISSUE_LIST_PARAMETERS: RouteParameters = { names: ['status', 'level', 'release', 'q', 'sort', 'limit', 'offset', ...WINDOW_PARAMETERS] };

export function parseIssueListQuery(query: QueryParams, now: number): IssueListQuery {
  return {
    status: parseEnum('status', query.status, ISSUE_STATUSES),
    level: parseEnum('level', query.level, LEVELS),
    release: query.release,
    q: query.q === undefined || query.q === '' ? undefined : query.q,
    sort: parseEnum('sort', query.sort, ISSUE_SORTS) ?? 'last_seen',
    limit: parseLimit(query.limit),
    offset: parseOffset(query.offset),
    window: listWindow(query, now),
  };
}

/**
 * The list's window on last_seen. Without `to` it reaches as far past now as an event's
 * timestamp may lie (MAX_EVENT_CLOCK_AHEAD_MS): an issue whose latest event came from a
 * device whose clock runs ahead is listed at once, not only once that time has come.
 */
function listWindow(query: QueryParams, now: number): TimeWindow {
  const window = parseWindow(query, now);
  return query.to === undefined ? { from: window.from, to: window.to + MAX_EVENT_CLOCK_AHEAD_MS } : window;
}

/**
 * The `last_seen_minute` of an issue last seen at `ms`, as the database computes it
 * (migration 010: `last_seen - last_seen % 60000`, truncating towards zero like
 * JavaScript's `%`, so even a time before 1970 maps to the same minute on both sides).
 */
function lastSeenMinute(ms: number): number {
  return ms - (ms % LAST_SEEN_MINUTE_MS);
}

export async function listIssues(
  db: Db,
  projectId: number,
  q: IssueListQuery,
  now: number,
): Promise<{ issues: IssueJson[]; total: number }> {
  const first = lastSeenMinute(q.window.from);
  const last = lastSeenMinute(q.window.to - 1);
  /** The list's filters other than the window, on a query of the project's issues. */
  const filtered = (minutes: (query: IssueQuery) => IssueQuery) => {
    let query = minutes(db.selectFrom('issues').where('project_id', '=', projectId));
    if (q.status) query = query.where('status', '=', q.status);
    if (q.level) query = query.where('level', '=', q.level);
    if (q.release !== undefined) query = query.where('last_release', '=', q.release);
    if (q.q !== undefined) {
      const text = q.q;
      query = query.where((eb) => eb.or([containsText('title', text), containsText('location', text)]));
    }
    return query;
  };
  /** The window itself, on last_seen: needed only where a minute straddles its bounds. */
  const exactly = (query: IssueQuery) => query.where('last_seen', '>=', q.window.from).where('last_seen', '<', q.window.to);
  // The window through issues_project_last_seen_minute (the minutes it touches), then exactly.
  const inWindow = filtered((query) => exactly(query.where('last_seen_minute', '>=', first).where('last_seen_minute', '<=', last)));
  // Newest first walks issues_project_last_seen_minute backwards and sorts each minute's
  // rows by last_seen: the same order as last_seen alone, since the minute follows it.
  const order = q.sort === 'events' ? ['event_count' as const] : q.sort === 'first_seen' ? ['first_seen' as const] : ['last_seen_minute' as const, 'last_seen' as const];
  let listed = inWindow.selectAll();
  for (const column of order) listed = listed.orderBy(column, 'desc');
  const count = (query: IssueQuery) => query.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  if (q.status || q.level || q.release !== undefined || q.q !== undefined) {
    // A filter on the rows' own columns reads every issue of the window to count them, so
    // the total comes with the page from that one pass (a page past the end counts apart).
    const page = await listed
      .select(sql<number | string>`count(*) over ()`.as('matching'))
      .orderBy('id', 'desc')
      .limit(q.limit)
      .offset(q.offset)
      .execute();
    const total = page.length > 0 ? Number(page[0].matching) : q.offset > 0 ? Number((await count(inWindow)).n) : 0;
    return { issues: await issuesWithSparklines(db, page, now), total };
  }
  // The total in two parts: every issue of a minute strictly between the first and the
  // last is in the window (the minute follows last_seen), so without other filters those
  // are counted from the index alone; only the two edge minutes' rows are read.
  const [rows, inner, atEdges] = await Promise.all([
    listed.orderBy('id', 'desc').limit(q.limit).offset(q.offset).execute(),
    count(filtered((query) => query.where('last_seen_minute', '>', first).where('last_seen_minute', '<', last))),
    count(filtered((query) => exactly(query.where('last_seen_minute', 'in', [first, last])))),
  ]);
  return { issues: await issuesWithSparklines(db, rows, now), total: Number(inner.n) + Number(atEdges.n) };
}

/** The issue of `fingerprint`, or for a merged fingerprint the issue it was merged into (`mergedInto`). */
export async function findIssue(db: Db, projectId: number, fingerprint: string): Promise<{ row: IssueRow; mergedInto?: string }> {
  const found = await findIssueOrMerged(db, projectId, fingerprint);
  if (!found) throw new ReadNotFoundError(`issue ${JSON.stringify(fingerprint)} not found in this project`);
  return found;
}

export interface BreakdownItem {
  value: string;
  count: number;
}

export interface IssueDetailJson extends IssueJson {
  from: string;
  to: string;
  timeline: { bucket: string; events: number }[];
  breakdown: Record<(typeof BREAKDOWN_KEYS)[number], BreakdownItem[]>;
  latest_event_id: number | null;
  oldest_event_id: number | null;
  /** Set when the fingerprint asked for was merged into this issue: this issue's fingerprint. */
  merged_into?: string;
}

/**
 * An OS version as readers name it: with the OS name (`iOS 17.4`, `Windows 10`), as a
 * bare `10` says nothing when an issue spans platforms. A version that already starts
 * with the name is kept as it is; without a name, the version alone.
 */
export function osVersionLabel(osName: string | null, osVersion: string | null): string | null {
  if (osVersion === null || osVersion === '') return osVersion;
  const name = osName?.trim() ?? '';
  if (name === '' || osVersion.toLowerCase().startsWith(name.toLowerCase())) return osVersion;
  return `${name} ${osVersion}`;
}

export async function issueDetail(
  db: Db,
  projectId: number,
  fingerprint: string,
  query: QueryParams,
  now: number,
  options: { breakdownEvents?: number } = {},
): Promise<IssueDetailJson> {
  const window = parseWindow(query, now);
  const { row: issue, mergedInto } = await findIssue(db, projectId, fingerprint);
  const issueId = Number(issue.id);
  const buckets = windowBuckets(window);

  const timelineRows = buckets
    ? await db
        .selectFrom('issue_hourly')
        .select(['bucket', 'events'])
        .where('issue_id', '=', issueId)
        .where('bucket', '>=', buckets.first)
        .where('bucket', '<=', buckets.last)
        .execute()
    : [];
  const byBucket = new Map(timelineRows.map((r) => [Number(r.bucket), Number(r.events)]));
  const timeline = bucketList(window).map((b) => ({ bucket: iso(b), events: byBucket.get(b) ?? 0 }));

  // The issue's newest BREAKDOWN_EVENTS stored events of the window, walked newest first
  // on events_issue_id (ids follow receive order), at most BREAKDOWN_SCAN_FACTOR times as
  // many index entries, grouped by all four keys at once; each key's counts are then
  // summed and ranked here: count desc, then value in code-point order, so ties rank the
  // same on every database collation.
  const limit = options.breakdownEvents ?? BREAKDOWN_EVENTS;
  const floor = await scanFloor(db, projectId, { kind: 'issue', issueId }, undefined, undefined, limit * BREAKDOWN_SCAN_FACTOR);
  const newest = db
    .selectFrom('events')
    .select([...BREAKDOWN_KEYS, 'os_name'])
    .where('issue_id', '=', issueId)
    // The floor as a row value over events_issue_id's columns: as `id >= floor`,
    // PostgreSQL walked the primary key backwards from the newest event of any issue.
    .$if(floor !== undefined, (q) => q.where(sql<boolean>`(issue_id, id) >= (${issueId}, ${floor!})`))
    .where('timestamp', '>=', window.from)
    .where('timestamp', '<', window.to)
    .orderBy('id', 'desc')
    .limit(limit)
    .as('newest');
  const combos = await db
    .selectFrom(newest)
    .select((eb) => [...BREAKDOWN_KEYS, 'os_name', eb.fn.countAll<number>().as('n')])
    .groupBy([...BREAKDOWN_KEYS, 'os_name'])
    .execute();
  const breakdown = {} as IssueDetailJson['breakdown'];
  for (const key of BREAKDOWN_KEYS) {
    const counts = new Map<string, number>();
    for (const row of combos) {
      const value = key === 'os_version' ? osVersionLabel(row.os_name, row.os_version) : row[key];
      if (value === null || value === '') continue;
      counts.set(value, (counts.get(value) ?? 0) + Number(row.n));
    }
    breakdown[key] = [...counts]
      .map(([value, count]) => ({ value, count }))
      .sort((a, b) => b.count - a.count || compareText(a.value, b.value))
      .slice(0, BREAKDOWN_TOP);
  }

  const [{ latest, oldest }, feedback] = await Promise.all([newestAndOldestStored(db, issue), feedbackCounts(db, projectId, [issueId])]);
  return {
    ...issueJson(issue),
    feedback_count: feedback.get(issueId) ?? 0,
    from: iso(window.from),
    to: iso(window.to),
    timeline,
    breakdown,
    latest_event_id: latest,
    oldest_event_id: oldest,
    ...(mergedInto !== undefined ? { merged_into: mergedInto } : {}),
  };
}

/**
 * The issue's stored events with the latest and the earliest event time. Ingest keeps
 * them in `last_seen_id` / `first_seen_id` (ties: the later stored is the latest, the
 * earlier the oldest), so two primary-key probes answer. Once retention has deleted
 * such an event the ids stay as history, and the answer falls back to the newest or
 * oldest stored event by receive order (events_issue_id); null when none is stored.
 */
async function newestAndOldestStored(db: Db, issue: IssueRow): Promise<{ latest: number | null; oldest: number | null }> {
  const last = issue.last_seen_id === null ? null : Number(issue.last_seen_id);
  const first = issue.first_seen_id === null ? null : Number(issue.first_seen_id);
  const wanted = [last, first].filter((id): id is number => id !== null);
  const present = new Set(
    wanted.length === 0 ? [] : (await db.selectFrom('events').select('id').where('id', 'in', wanted).execute()).map((r) => Number(r.id)),
  );
  const byReceipt = async (direction: 'asc' | 'desc') => {
    const row = await db.selectFrom('events').select('id').where('issue_id', '=', Number(issue.id)).orderBy('id', direction).limit(1).executeTakeFirst();
    return row ? Number(row.id) : null;
  };
  const [latest, oldest] = await Promise.all([
    last !== null && present.has(last) ? last : byReceipt('desc'),
    first !== null && present.has(first) ? first : byReceipt('asc'),
  ]);
  return { latest, oldest };
}

function statusProblem(status: unknown): string {
  return `status must be one of ${ISSUE_STATUSES.join(', ')} (got ${JSON.stringify(status ?? null)})`;
}

/** The columns a status change writes (docs/api.md "PATCH /api/projects/{slug}/issues/{fingerprint}"). */
function statusChange(status: IssueStatus, now: number) {
  return (eb: any) => {
    const set: Record<string, unknown> = { status, updated_at: now };
    if (status === 'resolved') {
      set.resolved_release = eb.ref('last_release');
      set.resolved_at = now;
    } else if (status === 'unresolved') {
      set.resolved_release = null;
      set.resolved_at = null;
    }
    return set;
  };
}

export function parseStatusBody(body: unknown): IssueStatus {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ReadInputError('request body must be a JSON object {"status": "<status>"}');
  }
  const status = (body as Record<string, unknown>).status;
  if (!isIssueStatus(status)) throw new ReadInputError(statusProblem(status));
  return status;
}

/**
 * Records the change in issue_changes (kind = the new status, `at` = now, release = the
 * issue's last_release) for each listed issue whose status differs from `status`; run
 * before the update, in its transaction. Overview `regressions` counts the `regression`
 * rows, so an issue set to regression by hand counts like one ingest flipped.
 */
function recordStatusChanges(tx: Db, projectId: number, fingerprints: string[], status: IssueStatus, now: number) {
  return tx
    .insertInto('issue_changes')
    .columns(['project_id', 'issue_id', 'kind', 'at', 'release'])
    .expression(
      tx
        .selectFrom('issues')
        .select(['project_id', 'id', sql<string>`cast(${status} as text)`.as('kind'), sql<number>`cast(${now} as bigint)`.as('at'), 'last_release'])
        .where('project_id', '=', projectId)
        .where('fingerprint', 'in', fingerprints)
        .where('status', '<>', status)
        .orderBy('id'),
    );
}

function updateStatus(tx: Db, projectId: number, fingerprints: string[], status: IssueStatus, now: number) {
  return tx.updateTable('issues').set(statusChange(status, now)).where('project_id', '=', projectId).where('fingerprint', 'in', fingerprints);
}

/**
 * Where the store has no interactive transactions (D1), the statements of a status
 * change go as one atomic batch instead (Store.batch).
 */
export type AtomicBatch = (queries: CompiledQuery[]) => Promise<QueryResult<unknown>[]>;

export async function setIssueStatus(
  db: Db,
  projectId: number,
  fingerprint: string,
  status: IssueStatus,
  now: number,
  batch?: AtomicBatch,
): Promise<IssueJson> {
  let row: IssueRow | undefined;
  if (batch) {
    const [, updated] = await batch([
      recordStatusChanges(db, projectId, [fingerprint], status, now).compile(),
      updateStatus(db, projectId, [fingerprint], status, now).returningAll().compile(),
    ]);
    row = updated.rows[0] as IssueRow | undefined;
  } else {
    row = await db.transaction().execute(async (tx) => {
      await recordStatusChanges(tx, projectId, [fingerprint], status, now).execute();
      return updateStatus(tx, projectId, [fingerprint], status, now).returningAll().executeTakeFirst();
    });
  }
  if (!row) throw new ReadNotFoundError(`issue ${JSON.stringify(fingerprint)} not found in this project`);
  return { ...issueJson(row), feedback_count: (await feedbackCounts(db, projectId, [Number(row.id)])).get(Number(row.id)) ?? 0 };
}

export function parseBulkBody(body: unknown): { fingerprints: string[]; status: IssueStatus } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ReadInputError('request body must be a JSON object {"fingerprints": [..], "status": "<status>"}');
  }
  const { fingerprints, status } = body as Record<string, unknown>;
  if (!Array.isArray(fingerprints) || !fingerprints.every((f) => typeof f === 'string')) {
    throw new ReadInputError('fingerprints must be an array of strings');
  }
  if (fingerprints.length > MAX_BULK) throw new ReadInputError(`fingerprints may list at most ${MAX_BULK} issues`);
  if (!isIssueStatus(status)) throw new ReadInputError(statusProblem(status));
  return { fingerprints: [...new Set(fingerprints as string[])], status };
}

/**
 * Sets the status of every listed issue of the project, recording each change;
 * unknown fingerprints are skipped.
 */
export async function bulkSetStatus(
  db: Db,
  projectId: number,
  fingerprints: string[],
  status: IssueStatus,
  now: number,
  batch?: AtomicBatch,
): Promise<{ updated: number; status: IssueStatus }> {
  const chunks: string[][] = [];
  for (let i = 0; i < fingerprints.length; i += 500) chunks.push(fingerprints.slice(i, i + 500));
  let updated = 0;
  if (batch) {
    const results = await batch(
      chunks.flatMap((chunk) => [
        recordStatusChanges(db, projectId, chunk, status, now).compile(),
        updateStatus(db, projectId, chunk, status, now).compile(),
      ]),
    );
    for (let i = 1; i < results.length; i += 2) updated += Number(results[i].numAffectedRows ?? 0);
    return { updated, status };
  }
  await db.transaction().execute(async (tx) => {
    for (const chunk of chunks) {
      await recordStatusChanges(tx, projectId, chunk, status, now).execute();
      const res = await updateStatus(tx, projectId, chunk, status, now).executeTakeFirst();
      updated += Number(res.numUpdatedRows);
    }
  });
  return { updated, status };
}
