// Release queries: the list and the detail with release health. Counts come from
// the hourly aggregates (project_hourly for events, session_hourly for sessions)
// and the issues table's indexes, never from the events themselves.
import type { Kysely } from 'kysely';
import { iso, utcDay } from '../clock.js';
import { releasePlatforms } from '../ingest/records.js';
import type { Database, IssueRow } from '../store/schema.js';
import { ReadNotFoundError } from './errors.js';
import { issuesWithSparklines } from './issues.js';
import { compareText, crashFreeRate, type IssueJson } from './serialize.js';
import { bucketList, dayList, parseWindow, windowBuckets, type QueryParams, type TimeWindow } from './window.js';
import { RELEASE_ISSUES_LIMIT } from '../limits.js';

type Db = Kysely<Database>;

export interface SessionCounts {
  total: number;
  crashed: number;
  errored: number;
}

export interface ReleaseJson {
  release: string;
  platforms: string[];
  first_seen: string | null;
  last_seen: string | null;
  events: number;
  crashes: number;
  errors: number;
  sessions: SessionCounts;
  crash_free_rate: number | null;
  new_issues: number;
}

interface ReleaseBase {
  release: string;
  platforms: string[];
  first_seen: number | null;
  last_seen: number | null;
}

const zeroSessions = (): SessionCounts => ({ total: 0, crashed: 0, errored: 0 });

function releaseJson(
  base: ReleaseBase,
  counts: { events: number; crashes: number; errors: number } | undefined,
  sessions: SessionCounts | undefined,
  newIssues: number,
): ReleaseJson {
  const s = sessions ?? zeroSessions();
  return {
    release: base.release,
    platforms: base.platforms,
    first_seen: base.first_seen === null ? null : iso(base.first_seen),
    last_seen: base.last_seen === null ? null : iso(base.last_seen),
    events: counts?.events ?? 0,
    crashes: counts?.crashes ?? 0,
    errors: counts?.errors ?? 0,
    sessions: s,
    crash_free_rate: crashFreeRate(s.total, s.crashed),
    new_issues: newIssues,
  };
}

/** Event counts per release over the window's buckets (project_hourly primary key). */
async function eventCounts(db: Db, projectId: number, w: TimeWindow, release?: string) {
  const b = windowBuckets(w);
  const out = new Map<string, { events: number; crashes: number; errors: number }>();
  if (!b) return out;
  let q = db
    .selectFrom('project_hourly')
    .select((eb) => [
      'release',
      eb.fn.sum<number>('events').as('events'),
      eb.fn.sum<number>('crashes').as('crashes'),
      eb.fn.sum<number>('errors').as('errors'),
    ])
    .where('project_id', '=', projectId)
    .where('bucket', '>=', b.first)
    .where('bucket', '<=', b.last);
  if (release !== undefined) q = q.where('release', '=', release);
  for (const r of await q.groupBy('release').execute()) {
    out.set(r.release, { events: Number(r.events), crashes: Number(r.crashes), errors: Number(r.errors) });
  }
  return out;
}

/** Session counts per release over the window's buckets (session_hourly). */
async function sessionCounts(db: Db, projectId: number, w: TimeWindow, release?: string) {
  const b = windowBuckets(w);
  const out = new Map<string, SessionCounts>();
  if (!b) return out;
  let q = db
    .selectFrom('session_hourly')
    .select((eb) => [
      'release',
      eb.fn.sum<number>('total').as('total'),
      eb.fn.sum<number>('crashed').as('crashed'),
      eb.fn.sum<number>('errored').as('errored'),
    ])
    .where('project_id', '=', projectId)
    .where('bucket', '>=', b.first)
    .where('bucket', '<=', b.last);
  if (release !== undefined) q = q.where('release', '=', release);
  for (const r of await q.groupBy('release').execute()) {
    out.set(r.release, { total: Number(r.total), crashed: Number(r.crashed), errored: Number(r.errored) });
  }
  return out;
}

/** Issues first seen in the window, per first_release (issues_project_first_seen index). */
async function newIssueCounts(db: Db, projectId: number, w: TimeWindow, release?: string) {
  let q = db
    .selectFrom('issues')
    .select((eb) => ['first_release', eb.fn.countAll<number>().as('n')])
    .where('project_id', '=', projectId)
    .where('first_seen', '>=', w.from)
    .where('first_seen', '<', w.to);
  if (release !== undefined) q = q.where('first_release', '=', release);
  const out = new Map<string, number>();
  for (const r of await q.groupBy('first_release').execute()) out.set(r.first_release, Number(r.n));
  return out;
}

/** First and last hour with sessions, for a release known only from sessions. */
async function sessionSpan(db: Db, projectId: number, release: string) {
  const r = await db
    .selectFrom('session_hourly')
    .select((eb) => [eb.fn.min<number>('bucket').as('first'), eb.fn.max<number>('bucket').as('last')])
    .where('project_id', '=', projectId)
    .where('release', '=', release)
    .executeTakeFirst();
  return r && r.first !== null && r.first !== undefined ? { first: Number(r.first), last: Number(r.last) } : null;
}

/**
 * Releases active in the window: seen by events in it (releases.first_seen..last_seen
 * overlapping the window) or with sessions in it. Newest first (by first_seen).
 */
export async function listReleases(db: Db, projectId: number, query: QueryParams, now: number): Promise<{ releases: ReleaseJson[] }> {
  const w = parseWindow(query, now);
  const [rows, counts, sessions, newIssues] = await Promise.all([
    db
      .selectFrom('releases')
      .selectAll()
      .where('project_id', '=', projectId)
      .where('last_seen', '>=', w.from)
      .where('first_seen', '<', w.to)
      .execute(),
    eventCounts(db, projectId, w),
    sessionCounts(db, projectId, w),
    newIssueCounts(db, projectId, w),
  ]);
  const bases = new Map<string, ReleaseBase>();
  for (const r of rows) {
    bases.set(r.release, { release: r.release, platforms: releasePlatforms(r.platforms), first_seen: Number(r.first_seen), last_seen: Number(r.last_seen) });
  }
  // Releases with sessions in the window but outside the events' span (or without events at all).
  const missing = [...sessions.keys(), ...counts.keys()].filter((r) => r !== '' && !bases.has(r));
  if (missing.length > 0) {
    const known = await db
      .selectFrom('releases')
      .selectAll()
      .where('project_id', '=', projectId)
      .where('release', 'in', [...new Set(missing)])
      .execute();
    for (const r of known) {
      bases.set(r.release, { release: r.release, platforms: releasePlatforms(r.platforms), first_seen: Number(r.first_seen), last_seen: Number(r.last_seen) });
    }
    for (const release of new Set(missing)) {
      if (bases.has(release)) continue;
      const span = await sessionSpan(db, projectId, release);
      bases.set(release, { release, platforms: [], first_seen: span?.first ?? null, last_seen: span?.last ?? null });
    }
  }
  bases.delete('');
  const releases = [...bases.values()]
    .sort((a, b) => (b.first_seen ?? 0) - (a.first_seen ?? 0) || compareText(b.release, a.release))
    .map((base) => releaseJson(base, counts.get(base.release), sessions.get(base.release), newIssues.get(base.release) ?? 0));
  return { releases };
}

async function issuesBy(db: Db, projectId: number, column: 'first_release' | 'last_release', release: string, now: number, limit: number): Promise<IssueJson[]> {
  const rows: IssueRow[] = await db
    .selectFrom('issues')
    .selectAll()
    .where('project_id', '=', projectId)
    .where(column, '=', release)
    .orderBy('event_count', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
  return issuesWithSparklines(db, rows, now);
}

/**
 * A release's health and issues. `issueLimit`: issues listed per list (introduced,
 * present), busiest first; a page that shows fewer asks for fewer, and their sparklines.
 */
export async function releaseDetail(db: Db, projectId: number, version: string, query: QueryParams, now: number, issueLimit = RELEASE_ISSUES_LIMIT) {
  const w = parseWindow(query, now);
  const row = await db
    .selectFrom('releases')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('release', '=', version)
    .executeTakeFirst();
  let base: ReleaseBase;
  if (row) {
    base = { release: row.release, platforms: releasePlatforms(row.platforms), first_seen: Number(row.first_seen), last_seen: Number(row.last_seen) };
  } else {
    const span = version === '' ? null : await sessionSpan(db, projectId, version);
    if (!span) throw new ReadNotFoundError(`release ${JSON.stringify(version)} not found in this project`);
    base = { release: version, platforms: [], first_seen: span.first, last_seen: span.last };
  }
  const b = windowBuckets(w);
  const [counts, sessions, newIssues, hourly, sessionHourly, introduced, present] = await Promise.all([
    eventCounts(db, projectId, w, version),
    sessionCounts(db, projectId, w, version),
    newIssueCounts(db, projectId, w, version),
    b
      ? db
          .selectFrom('project_hourly')
          .select(['bucket', 'events', 'crashes'])
          .where('project_id', '=', projectId)
          .where('release', '=', version)
          .where('bucket', '>=', b.first)
          .where('bucket', '<=', b.last)
          .execute()
      : [],
    b
      ? db
          .selectFrom('session_hourly')
          .select(['bucket', 'total', 'crashed', 'errored'])
          .where('project_id', '=', projectId)
          .where('release', '=', version)
          .where('bucket', '>=', b.first)
          .where('bucket', '<=', b.last)
          .execute()
      : [],
    issuesBy(db, projectId, 'first_release', version, now, issueLimit),
    issuesBy(db, projectId, 'last_release', version, now, issueLimit),
  ]);

  const perBucket = new Map(hourly.map((r) => [Number(r.bucket), { events: Number(r.events), crashes: Number(r.crashes) }]));
  const timeline = bucketList(w).map((t) => ({ bucket: iso(t), events: perBucket.get(t)?.events ?? 0, crashes: perBucket.get(t)?.crashes ?? 0 }));

  const perDay = new Map<number, SessionCounts>();
  for (const r of sessionHourly) {
    const day = utcDay(Number(r.bucket));
    const d = perDay.get(day) ?? zeroSessions();
    d.total += Number(r.total);
    d.crashed += Number(r.crashed);
    d.errored += Number(r.errored);
    perDay.set(day, d);
  }
  const daily_health = dayList(w).map((day) => {
    const d = perDay.get(day) ?? zeroSessions();
    return { day: iso(day), ...d, crash_free_rate: crashFreeRate(d.total, d.crashed) };
  });

  return {
    release: releaseJson(base, counts.get(version), sessions.get(version), newIssues.get(version) ?? 0),
    from: iso(w.from),
    to: iso(w.to),
    daily_health,
    timeline,
    issues_introduced: introduced,
    issues_present: present,
  };
}
