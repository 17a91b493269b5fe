// Issue queries: the filtered, sorted list with sparklines, the detail (hourly
// timeline, breakdown over the newest stored events, newest/oldest stored event), and the
// status workflow (single and bulk). Every query is served by an index on
// issues, issue_hourly or events(issue_id, …); see docs/architecture.md.
import { sql, type CompiledQuery, type Kysely, type SelectQueryBuilder } from 'kysely';
import { HOUR_MS, hourBucket, iso } from '../clock.js';
import { LAST_SEEN_MINUTE_MS, type Database, type IssueRow } from '../store/schema.js';
import { ReadInputError, ReadNotFoundError } from '../errors.js';
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
import { isEmptySearch, parseIssueSearch, SearchSyntaxError, type IssueSearch } from './search-query.js';
import { compareText, issueJson, type IssueJson } from './serialize.js';
import { feedbackCounts } from '../feedback/storage.js';
import { bucketList, parseWindow, windowBuckets, type QueryParams, type TimeWindow } from './window.js';
import { MAX_BULK, MAX_EVENT_CLOCK_AHEAD_MS } from '../limits.js';
import type { Store } from '../store/database.js';
import { statusChangeStatement, type Actor } from '../triage/activity.js';
import { parseSnooze, SNOOZE_FIELDS, snoozeData, type Snooze } from '../triage/snooze.js';
import {
  assignedChangeStatement,
  assigneesOf,
  parseAssigneeRef,
  resolveAssignee,
  type AssigneeJson,
  type AssigneeRef,
} from '../triage/assignee.js';

type Db = Kysely<Database>;
// biome-ignore lint/complexity/noBannedTypes: Kysely's type for a query that selects nothing yet
type IssueQuery = SelectQueryBuilder<Database, 'issues', {}>;

export const SPARKLINE_HOURS = 24;
export const ISSUE_SORTS = ['last_seen', 'first_seen', 'events', 'users'] as const;
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
  const lines = await sparklines(
    db,
    rows.map((r) => Number(r.id)),
    now,
  );
  return issuesJson(db, rows, lines);
}

export interface IssueListQuery {
  status?: IssueStatus;
  level?: string;
  release?: string;
  /** Issues with an event in this environment within the window. */
  environment?: string;
  /** `me`, `none` or a user's email. */
  assignee?: string;
  /** `q` parsed (src/read/search-query.ts). */
  search?: IssueSearch;
  q?: string;
  sort: (typeof ISSUE_SORTS)[number];
  limit: number;
  offset: number;
  window: TimeWindow;
}

/** The issues list's parameters (checkParameters). */
export const ISSUE_LIST_PARAMETERS: RouteParameters = {
  names: [
    'status',
    'level',
    'release',
    'environment',
    'assignee',
    'q',
    'sort',
    'limit',
    'offset',
    ...WINDOW_PARAMETERS,
  ],
};

function parseSearch(q: string | undefined): { q?: string; search?: IssueSearch } {
  if (q === undefined || q.trim() === '') return {};
  try {
    const search = parseIssueSearch(q);
    return isEmptySearch(search) ? {} : { q, search };
  } catch (err) {
    if (err instanceof SearchSyntaxError) throw new ReadInputError(err.message);
    throw err;
  }
}

function parseAssignee(raw: string | undefined): string | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (raw === 'me' || raw === 'none' || /^[^\s@]+@[^\s@]+$/.test(raw)) return raw;
  throw new ReadInputError(`assignee must be me, none or a user's email (got ${JSON.stringify(raw)})`);
}

export function parseIssueListQuery(query: QueryParams, now: number): IssueListQuery {
  return {
    status: parseEnum('status', query.status, ISSUE_STATUSES),
    level: parseEnum('level', query.level, LEVELS),
    release: query.release,
    environment: query.environment === '' ? undefined : query.environment,
    assignee: parseAssignee(query.assignee),
    ...parseSearch(query.q),
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

/**
 * Issues with an event in `environment` within the window, from issue_environment_hourly
 * (its primary key: issue, environment, hour): hours overlapping the window.
 */
function inEnvironment(query: IssueQuery, environment: string, window: TimeWindow): IssueQuery {
  const first = hourBucket(window.from);
  return query.where((eb) =>
    eb.exists(
      eb
        .selectFrom('issue_environment_hourly as env')
        .select(sql`1`.as('one'))
        .whereRef('env.issue_id', '=', 'issues.id')
        .where('env.environment', '=', environment)
        .where('env.bucket', '>=', first)
        .where('env.bucket', '<', window.to),
    ),
  );
}

/** The assignee filter: `none`, `me` (the signed-in user; an API key is nobody) or a user's email. */
function assignedTo(query: IssueQuery, assignee: string, viewer: number | null): IssueQuery {
  if (assignee === 'none') return query.where('assignee_id', 'is', null);
  if (assignee === 'me')
    return viewer === null ? query.where(sql<boolean>`1 = 0`) : query.where('assignee_id', '=', viewer);
  // Emails are stored lower case (src/accounts/rules.ts).
  return query.where('assignee_id', 'in', (eb) =>
    eb.selectFrom('users').select('id').where('email', '=', assignee.trim().toLowerCase()),
  );
}

/** The search syntax's filters (src/read/search-query.ts), each on an index or a primary key. */
function searched(
  query: IssueQuery,
  projectId: number,
  s: IssueSearch,
  window: TimeWindow,
  viewer: number | null,
): IssueQuery {
  for (const status of s.statuses) query = query.where('status', '=', status);
  if (s.assigned !== null) query = query.where('assignee_id', s.assigned ? 'is not' : 'is', null);
  for (const a of s.assignees) query = assignedTo(query, a, viewer);
  for (const level of s.levels) query = query.where('level', '=', level);
  for (const release of s.firstReleases) query = query.where('first_release', '=', release);
  // The row's own columns before the subqueries (SQLite tests them in this order).
  for (const text of s.text)
    query = query.where((eb) => eb.or([containsText('title', text), containsText('location', text)]));
  for (const release of s.releases) {
    query = query.where((eb) =>
      eb.exists(
        eb
          .selectFrom('issue_releases as ir')
          .select(sql`1`.as('one'))
          .whereRef('ir.issue_id', '=', 'issues.id')
          .where('ir.release', '=', release),
      ),
    );
  }
  for (const env of s.environments) query = inEnvironment(query, env, window);
  for (const user of s.users) {
    // The distinct-user keys ingest keeps: an SDK user id, else an email (src/ingest/normalize.ts).
    const keys = [`id:${user}`, `email:${user}`];
    query = query.where((eb) =>
      eb.exists(
        eb
          .selectFrom('issue_users as iu')
          .select(sql`1`.as('one'))
          .whereRef('iu.issue_id', '=', 'issues.id')
          .where('iu.user_key', 'in', keys),
      ),
    );
  }
  for (const tag of s.tags) {
    // The issues of the stored events with that tag (event_tags_lookup), read once.
    query = query.where('id', 'in', (eb) =>
      eb
        .selectFrom('event_tags as t')
        .innerJoin('events as e', 'e.id', 't.event_id')
        .select('e.issue_id')
        .where('t.project_id', '=', projectId)
        .where('t.key', '=', tag.key)
        .where('t.value', '=', tag.value),
    );
  }
  return query;
}

export async function listIssues(
  db: Db,
  projectId: number,
  q: IssueListQuery,
  now: number,
  /** The signed-in user (`me`); null for an API key or an open API. */
  viewer: number | null = null,
): Promise<{ issues: IssueJson[]; total: number }> {
  const first = lastSeenMinute(q.window.from);
  const last = lastSeenMinute(q.window.to - 1);
  /** The list's filters other than the window, on a query of the project's issues. */
  const filtered = (minutes: (query: IssueQuery) => IssueQuery) => {
    let query = minutes(db.selectFrom('issues').where('project_id', '=', projectId));
    if (q.status) query = query.where('status', '=', q.status);
    if (q.level) query = query.where('level', '=', q.level);
    if (q.release !== undefined) query = query.where('last_release', '=', q.release);
    if (q.assignee !== undefined) query = assignedTo(query, q.assignee, viewer);
    if (q.search) query = searched(query, projectId, q.search, q.window, viewer);
    // Last: SQLite tests the conditions in the order written, so the environment's index
    // probe runs only for the issues the row's own columns let through.
    if (q.environment !== undefined) query = inEnvironment(query, q.environment, q.window);
    return query;
  };
  /** The window itself, on last_seen: needed only where a minute straddles its bounds. */
  const exactly = (query: IssueQuery) =>
    query.where('last_seen', '>=', q.window.from).where('last_seen', '<', q.window.to);
  // The window through issues_project_last_seen_minute (the minutes it touches), then exactly.
  const inWindow = filtered((query) =>
    exactly(query.where('last_seen_minute', '>=', first).where('last_seen_minute', '<=', last)),
  );
  // Newest first walks issues_project_last_seen_minute backwards and sorts each minute's
  // rows by last_seen: the same order as last_seen alone, since the minute follows it.
  const order =
    q.sort === 'events'
      ? ['event_count' as const]
      : q.sort === 'users'
        ? ['users' as const, 'event_count' as const]
        : q.sort === 'first_seen'
          ? ['first_seen' as const]
          : ['last_seen_minute' as const, 'last_seen' as const];
  let listed = inWindow.selectAll();
  for (const column of order) listed = listed.orderBy(column, 'desc');
  const count = (query: IssueQuery) => query.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  if (
    q.status ||
    q.level ||
    q.release !== undefined ||
    q.environment !== undefined ||
    q.assignee !== undefined ||
    q.search
  ) {
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
export async function findIssue(
  db: Db,
  projectId: number,
  fingerprint: string,
): Promise<{ row: IssueRow; mergedInto?: string }> {
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
  options: { breakdownEvents?: number; found?: { row: IssueRow; mergedInto?: string } } = {},
): Promise<IssueDetailJson> {
  const window = parseWindow(query, now);
  const { row: issue, mergedInto } = options.found ?? (await findIssue(db, projectId, fingerprint));
  const issueId = Number(issue.id);
  const buckets = windowBuckets(window);

  // The reads below do not depend on each other: on PostgreSQL they go out together, each on
  // a connection of the pool, so the page waits for the slowest, not for the sum.
  const timelineRows = buckets
    ? db
        .selectFrom('issue_hourly')
        .select(['bucket', 'events'])
        .where('issue_id', '=', issueId)
        .where('bucket', '>=', buckets.first)
        .where('bucket', '<=', buckets.last)
        .execute()
    : Promise.resolve([]);
  const [timelineRowsDone, combos, { latest, oldest }, [json]] = await Promise.all([
    timelineRows,
    breakdownCombos(db, projectId, issueId, window, options.breakdownEvents ?? BREAKDOWN_EVENTS),
    newestAndOldestStored(db, issue),
    issuesJson(db, [issue]),
  ]);
  const byBucket = new Map(timelineRowsDone.map((r) => [Number(r.bucket), Number(r.events)]));
  const timeline = bucketList(window).map((b) => ({ bucket: iso(b), events: byBucket.get(b) ?? 0 }));

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

  return {
    ...json,
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
 * The issue's newest `limit` stored events of the window, walked newest first on
 * events_issue_id (ids follow receive order), at most BREAKDOWN_SCAN_FACTOR times as many
 * index entries, grouped by all four keys at once; each key's counts are then summed and
 * ranked by the caller: count desc, then value in code-point order, so ties rank the same
 * on every database collation.
 */
async function breakdownCombos(db: Db, projectId: number, issueId: number, window: TimeWindow, limit: number) {
  const floor = await scanFloor(
    db,
    projectId,
    { kind: 'issue', issueId },
    undefined,
    undefined,
    limit * BREAKDOWN_SCAN_FACTOR,
  );
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
  return db
    .selectFrom(newest)
    .select((eb) => [...BREAKDOWN_KEYS, 'os_name', eb.fn.countAll<number>().as('n')])
    .groupBy([...BREAKDOWN_KEYS, 'os_name'])
    .execute();
}

/**
 * The issue's stored events with the latest and the earliest event time. Ingest keeps
 * them in `last_seen_id` / `first_seen_id` (ties: the later stored is the latest, the
 * earlier the oldest), so two primary-key probes answer. Once retention has deleted
 * such an event the ids stay as history, and the answer falls back to the newest or
 * oldest stored event by receive order (events_issue_id); null when none is stored.
 */
async function newestAndOldestStored(
  db: Db,
  issue: IssueRow,
): Promise<{ latest: number | null; oldest: number | null }> {
  const last = issue.last_seen_id === null ? null : Number(issue.last_seen_id);
  const first = issue.first_seen_id === null ? null : Number(issue.first_seen_id);
  const wanted = [last, first].filter((id): id is number => id !== null);
  const present = new Set(
    wanted.length === 0
      ? []
      : (await db.selectFrom('events').select('id').where('id', 'in', wanted).execute()).map((r) => Number(r.id)),
  );
  const byReceipt = async (direction: 'asc' | 'desc') => {
    const row = await db
      .selectFrom('events')
      .select('id')
      .where('issue_id', '=', Number(issue.id))
      .orderBy('id', direction)
      .limit(1)
      .executeTakeFirst();
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

/**
 * What a PATCH or bulk request changes: a status (with the snooze `ignored` may take)
 * and/or the assignee (undefined: not asked).
 */
export interface StatusChange {
  status: IssueStatus | null;
  snooze: Snooze | null;
  assignee?: AssigneeRef;
}

/** The columns a status change writes (docs/api.md "PATCH /api/projects/{slug}/issues/{fingerprint}"). */
function statusColumns(status: IssueStatus, snooze: Snooze | null, now: number) {
  return (eb: any) => {
    const set: Record<string, unknown> = { status, updated_at: now };
    if (status === 'resolved') {
      set.resolved_release = eb.ref('last_release');
      set.resolved_at = now;
    } else if (status === 'unresolved') {
      set.resolved_release = null;
      set.resolved_at = null;
    }
    // A snooze starts from the counts the issue has now; any other change ends it.
    set.ignore_until = snooze && 'until' in snooze ? snooze.until : null;
    set.ignore_count = snooze && 'count' in snooze ? snooze.count : null;
    set.ignore_users = snooze && 'users' in snooze ? snooze.users : null;
    set.ignored_event_count = snooze ? eb.ref('event_count') : null;
    set.ignored_users = snooze ? eb.ref('users') : null;
    return set;
  };
}

function bodyObject(body: unknown, shape: string): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new ReadInputError(`request body must be a JSON object ${shape}`);
  return body as Record<string, unknown>;
}

function parseChange(fields: Record<string, unknown>, now: number): StatusChange {
  const status = fields.status;
  const assignee = 'assignee' in fields ? parseAssigneeRef(fields.assignee) : undefined;
  // The assignee alone may change; otherwise a status is required.
  if (status === undefined && assignee !== undefined) {
    if (SNOOZE_FIELDS.some((f) => fields[f] !== undefined && fields[f] !== null))
      throw new ReadInputError('a snooze needs status "ignored"');
    return { status: null, snooze: null, assignee };
  }
  if (!isIssueStatus(status)) throw new ReadInputError(statusProblem(status));
  return { status, snooze: parseSnooze(fields, status, now), ...(assignee !== undefined ? { assignee } : {}) };
}

export function parseStatusBody(body: unknown, now: number): StatusChange {
  return parseChange(bodyObject(body, '{"status": "<status>"} or {"assignee": <user id, email or null>}'), now);
}

/** The statements of a change to the listed issues: each change's activity first, then the update. */
async function changeStatements(
  store: Store,
  projectId: number,
  fingerprints: string[],
  change: StatusChange,
  now: number,
  actor: Actor | null,
) {
  const db = store.db;
  const assignee = change.assignee === undefined ? undefined : await resolveAssignee(db, change.assignee);
  const statements: CompiledQuery[] = [];
  const set: Record<string, unknown> = {};
  if (change.status !== null)
    statements.push(
      statusChangeStatement(db, projectId, fingerprints, change.status, now, actor, snoozeData(change.snooze)),
    );
  if (assignee !== undefined) {
    statements.push(assignedChangeStatement(db, projectId, fingerprints, assignee, now, actor));
    set.assignee_id = assignee?.id ?? null;
    set.updated_at = now;
  }
  const columns = change.status !== null ? statusColumns(change.status, change.snooze, now) : () => ({});
  const update = db
    .updateTable('issues')
    .set((eb: any) => ({ ...columns(eb), ...set }))
    .where('project_id', '=', projectId)
    .where('fingerprint', 'in', fingerprints);
  return { statements, update };
}

/** Issue rows as the API shows them, each with its assignee (one query for all). */
export async function issuesJson(db: Db, rows: IssueRow[], sparklines?: Map<number, number[]>): Promise<IssueJson[]> {
  const ids = rows.map((r) => Number(r.id));
  const [assignees, feedback] = await Promise.all([
    assigneesOf(
      db,
      rows.map((r) => (r.assignee_id === null ? null : Number(r.assignee_id))),
    ),
    rows.length > 0 ? feedbackCounts(db, Number(rows[0].project_id), ids) : new Map<number, number>(),
  ]);
  return rows.map((r) => ({
    ...issueJson(
      r,
      sparklines?.get(Number(r.id)),
      r.assignee_id === null ? null : (assignees.get(Number(r.assignee_id)) ?? null),
    ),
    feedback_count: feedback.get(Number(r.id)) ?? 0,
  }));
}

/**
 * Changes one issue's status and/or assignee (a merged fingerprint: the issue it was
 * merged into, answered with `merged_into`), recording each change in its activity, in
 * one transaction.
 */
export async function setIssueStatus(
  store: Store,
  projectId: number,
  fingerprint: string,
  change: StatusChange,
  now: number,
  actor: Actor | null,
): Promise<IssueJson & { merged_into?: string }> {
  const { row: found, mergedInto } = await findIssue(store.db, projectId, fingerprint);
  const { statements, update } = await changeStatements(store, projectId, [found.fingerprint], change, now, actor);
  const results = await store.atomic([...statements, update.returningAll().compile()]);
  const row = results[results.length - 1].rows[0] as IssueRow | undefined;
  if (!row) throw new ReadNotFoundError(`issue ${JSON.stringify(fingerprint)} not found in this project`);
  const [json] = await issuesJson(store.db, [row]);
  return { ...json, ...(mergedInto !== undefined ? { merged_into: mergedInto } : {}) };
}

export function parseBulkBody(body: unknown, now: number): { fingerprints: string[] } & StatusChange {
  const fields = bodyObject(body, '{"fingerprints": [..], "status": "<status>"}');
  const { fingerprints } = fields;
  if (!Array.isArray(fingerprints) || !fingerprints.every((f) => typeof f === 'string')) {
    throw new ReadInputError('fingerprints must be an array of strings');
  }
  if (fingerprints.length > MAX_BULK) throw new ReadInputError(`fingerprints may list at most ${MAX_BULK} issues`);
  return { fingerprints: [...new Set(fingerprints as string[])], ...parseChange(fields, now) };
}

/**
 * Changes the status and/or assignee of every listed issue of the project, recording
 * each change; unknown fingerprints are skipped.
 */
export async function bulkSetStatus(
  store: Store,
  projectId: number,
  fingerprints: string[],
  change: StatusChange,
  now: number,
  actor: Actor | null,
): Promise<{ updated: number; status: IssueStatus | null; assignee?: AssigneeJson | null }> {
  const statements: CompiledQuery[] = [];
  const updates: number[] = [];
  let assignee: AssigneeJson | null | undefined;
  for (let i = 0; i < fingerprints.length; i += 500) {
    const part = fingerprints.slice(i, i + 500);
    const built = await changeStatements(store, projectId, part, change, now, actor);
    statements.push(...built.statements, built.update.compile());
    updates.push(statements.length - 1);
  }
  if (change.assignee !== undefined) assignee = await resolveAssignee(store.db, change.assignee);
  const results = await store.atomic(statements);
  let updated = 0;
  for (const i of updates) updated += Number(results[i].numAffectedRows ?? 0);
  return { updated, status: change.status, ...(assignee !== undefined ? { assignee } : {}) };
}
