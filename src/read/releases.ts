// Release queries: the list and the detail with release health. Counts come from
// the hourly aggregates (project_hourly for events, session_hourly for sessions),
// the issues table's indexes and, for distinct users, session_users, never from the
// events or sessions themselves. Releases
// sentry-cli created (src/uploads) are listed too, before any event arrives, with
// their dates, commits and deploys.
import type { Kysely } from 'kysely';
import { iso, utcDay } from '../clock.js';
import { releasePlatforms } from '../store/records.js';
import { chunks } from '../store/dialect.js';
import { D1_MAX_BOUND_PARAMETERS } from '../store/d1.js';
import type { CliReleaseTable, Database, IssueRow } from '../store/schema.js';
import type { DeployRow } from '../uploads/deploys.js';
import type { CommitRow } from '../uploads/release-commits.js';
import { releaseActivity, type ReleaseActivity } from '../uploads/releases.js';
import { ReadNotFoundError } from '../errors.js';
import { issuesWithSparklines } from './issues.js';
import { anrRate, compareText, crashFreeRate, type IssueJson } from './serialize.js';
import { bucketList, dayList, parseWindow, windowBuckets, type QueryParams, type TimeWindow } from './window.js';
import { DEPLOY_LIST_LIMIT, MAX_RELEASE_COMMITS, RELEASE_ISSUES_LIMIT, RELEASE_LIST_ACTIVITY } from '../limits.js';

type Db = Kysely<Database>;

export interface SessionCounts {
  total: number;
  crashed: number;
  errored: number;
  /** Sessions that ended in an ANR (`abnormal_mechanism` `anr_…`). */
  anr: number;
}

/** Distinct users (session `did`) of a release's sessions, and those with a crashed session. */
export interface UserCounts {
  total: number;
  crashed: number;
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
  /** Distinct session `did`s in the window; users whose sessions carry no `did` are not counted. */
  users: UserCounts;
  /** 1 − crashed users ÷ users; null without a session that names its user. */
  crash_free_users_rate: number | null;
  /** ANR sessions ÷ sessions; null without sessions. */
  anr_rate: number | null;
  new_issues: number;
  /** When sentry-cli created the release; null for a release only events revealed. */
  date_created: string | null;
  date_released: string | null;
  commit_count: number;
  commits: ReleaseCommitJson[];
  deploy_count: number;
  deploys: ReleaseDeployJson[];
}

export interface ReleaseCommitJson {
  id: string;
  repository: string;
  message: string | null;
  author_name: string | null;
  author_email: string | null;
  date: string | null;
}

export interface ReleaseDeployJson {
  id: string;
  environment: string;
  name: string | null;
  url: string | null;
  date_started: string | null;
  date_finished: string;
}

interface ReleaseBase {
  release: string;
  platforms: string[];
  first_seen: number | null;
  last_seen: number | null;
}

const zeroSessions = (): SessionCounts => ({ total: 0, crashed: 0, errored: 0, anr: 0 });

const isoOrNull = (ms: number | null) => (ms === null ? null : iso(Number(ms)));

function commitJson(c: CommitRow): ReleaseCommitJson {
  return {
    id: c.commit_id,
    repository: c.repository,
    message: c.message,
    author_name: c.author_name,
    author_email: c.author_email,
    date: isoOrNull(c.date),
  };
}

function deployJson(d: DeployRow): ReleaseDeployJson {
  return {
    id: d.deploy_id,
    environment: d.environment,
    name: d.name,
    url: d.url,
    date_started: isoOrNull(d.date_started),
    date_finished: iso(Number(d.date_finished)),
  };
}

function releaseJson(
  base: ReleaseBase,
  counts: { events: number; crashes: number; errors: number } | undefined,
  sessions: SessionCounts | undefined,
  users: UserCounts | undefined,
  newIssues: number,
  cli: CliReleaseTable | undefined,
  activity: ReleaseActivity | undefined,
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
    users: users ?? { total: 0, crashed: 0 },
    crash_free_users_rate: crashFreeRate(users?.total ?? 0, users?.crashed ?? 0),
    anr_rate: anrRate(s.total, s.anr),
    new_issues: newIssues,
    date_created: cli ? iso(Number(cli.date_created)) : null,
    date_released: cli ? isoOrNull(cli.date_released) : null,
    commit_count: activity?.commitCount ?? 0,
    commits: (activity?.commits ?? []).map(commitJson),
    deploy_count: activity?.deployCount ?? 0,
    deploys: (activity?.deploys ?? []).map(deployJson),
  };
}

/**
 * The project's CLI releases created or released in the window, and those among
 * `versions` (releases the window shows for their events or sessions).
 */
async function cliReleases(
  db: Db,
  projectId: number,
  w: TimeWindow,
  versions: string[],
): Promise<Map<string, CliReleaseTable>> {
  const inWindow = await db
    .selectFrom('cli_releases')
    .selectAll()
    .where('project_id', '=', projectId)
    .where((eb) =>
      eb.or([
        eb.and([eb('date_created', '>=', w.from), eb('date_created', '<', w.to)]),
        eb.and([eb('date_released', '>=', w.from), eb('date_released', '<', w.to)]),
      ]),
    )
    .execute();
  const out = new Map(inWindow.map((r) => [r.version, r]));
  const others = versions.filter((v) => !out.has(v));
  // Versions per query: within what every database binds in one statement (D1 the fewest).
  for (const part of chunks(others, D1_MAX_BOUND_PARAMETERS - 1)) {
    for (const r of await db
      .selectFrom('cli_releases')
      .selectAll()
      .where('project_id', '=', projectId)
      .where('version', 'in', part)
      .execute())
      out.set(r.version, r);
  }
  return out;
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
      eb.fn.sum<number>('anr').as('anr'),
    ])
    .where('project_id', '=', projectId)
    .where('bucket', '>=', b.first)
    .where('bucket', '<=', b.last);
  if (release !== undefined) q = q.where('release', '=', release);
  for (const r of await q.groupBy('release').execute()) {
    out.set(r.release, {
      total: Number(r.total),
      crashed: Number(r.crashed),
      errored: Number(r.errored),
      anr: Number(r.anr),
    });
  }
  return out;
}

/** The users of `versions` in the hours [first, last] (exported for the query-plan test). */
export function userCountsQuery(db: Db, projectId: number, first: number, last: number, versions: string[]) {
  return db
    .selectFrom('session_users')
    .select((eb) => [
      'release',
      eb.fn.count<number>('did').distinct().as('total'),
      eb.fn
        .count<number>(eb.case().when('crashed', '=', 1).then(eb.ref('did')).end())
        .distinct()
        .as('crashed'),
    ])
    .where('project_id', '=', projectId)
    .where('release', 'in', versions)
    .where('bucket', '>=', first)
    .where('bucket', '<=', last)
    .groupBy('release');
}

/**
 * Distinct users per release among the sessions started in the window's buckets (the
 * hours session_hourly counts), from session_users (its primary key: one range per
 * release of `versions`). A user is crashed when any of those sessions crashed.
 */
async function userCounts(
  db: Db,
  projectId: number,
  w: TimeWindow,
  versions: string[],
): Promise<Map<string, UserCounts>> {
  const b = windowBuckets(w);
  const out = new Map<string, UserCounts>();
  if (!b || versions.length === 0) return out;
  // Versions per query: within what every database binds in one statement (D1 the fewest).
  for (const part of chunks(versions, D1_MAX_BOUND_PARAMETERS - 4)) {
    for (const r of await userCountsQuery(db, projectId, b.first, b.last, part).execute()) {
      out.set(r.release, { total: Number(r.total), crashed: Number(r.crashed) });
    }
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
export async function listReleases(
  db: Db,
  projectId: number,
  query: QueryParams,
  now: number,
): Promise<{ releases: ReleaseJson[] }> {
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
    bases.set(r.release, {
      release: r.release,
      platforms: releasePlatforms(r.platforms),
      first_seen: Number(r.first_seen),
      last_seen: Number(r.last_seen),
    });
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
      bases.set(r.release, {
        release: r.release,
        platforms: releasePlatforms(r.platforms),
        first_seen: Number(r.first_seen),
        last_seen: Number(r.last_seen),
      });
    }
    for (const release of new Set(missing)) {
      if (bases.has(release)) continue;
      const span = await sessionSpan(db, projectId, release);
      bases.set(release, { release, platforms: [], first_seen: span?.first ?? null, last_seen: span?.last ?? null });
    }
  }
  bases.delete('');
  const cli = await cliReleases(db, projectId, w, [...bases.keys()]);
  for (const version of cli.keys()) {
    if (!bases.has(version)) bases.set(version, { release: version, platforms: [], first_seen: null, last_seen: null });
  }
  const [activity, users] = await Promise.all([
    cli.size > 0
      ? releaseActivity(db, [projectId], [...cli.keys()], RELEASE_LIST_ACTIVITY)
      : new Map<string, ReleaseActivity>(),
    // Only releases with sessions in the window can have users in it.
    userCounts(
      db,
      projectId,
      w,
      [...bases.keys()].filter((r) => sessions.has(r)),
    ),
  ]);
  // A release the CLI created before any event sorts by its creation.
  const since = (base: ReleaseBase) => base.first_seen ?? Number(cli.get(base.release)?.date_created ?? 0);
  const releases = [...bases.values()]
    .sort((a, b) => since(b) - since(a) || compareText(b.release, a.release))
    .map((base) =>
      releaseJson(
        base,
        counts.get(base.release),
        sessions.get(base.release),
        users.get(base.release),
        newIssues.get(base.release) ?? 0,
        cli.get(base.release),
        activity.get(base.release),
      ),
    );
  return { releases };
}

async function issuesBy(
  db: Db,
  projectId: number,
  column: 'first_release' | 'last_release',
  release: string,
  now: number,
  limit: number,
): Promise<IssueJson[]> {
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
export async function releaseDetail(
  db: Db,
  projectId: number,
  version: string,
  query: QueryParams,
  now: number,
  issueLimit = RELEASE_ISSUES_LIMIT,
) {
  const w = parseWindow(query, now);
  const row = await db
    .selectFrom('releases')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('release', '=', version)
    .executeTakeFirst();
  const cli =
    version === ''
      ? undefined
      : await db
          .selectFrom('cli_releases')
          .selectAll()
          .where('project_id', '=', projectId)
          .where('version', '=', version)
          .executeTakeFirst();
  let base: ReleaseBase;
  if (row) {
    base = {
      release: row.release,
      platforms: releasePlatforms(row.platforms),
      first_seen: Number(row.first_seen),
      last_seen: Number(row.last_seen),
    };
  } else {
    const span = version === '' ? null : await sessionSpan(db, projectId, version);
    if (!span && !cli) throw new ReadNotFoundError(`release ${JSON.stringify(version)} not found in this project`);
    base = { release: version, platforms: [], first_seen: span?.first ?? null, last_seen: span?.last ?? null };
  }
  const activity = cli
    ? (await releaseActivity(db, [projectId], [version], Math.max(MAX_RELEASE_COMMITS, DEPLOY_LIST_LIMIT))).get(version)
    : undefined;
  const b = windowBuckets(w);
  const [counts, sessions, users, newIssues, hourly, sessionHourly, introduced, present] = await Promise.all([
    eventCounts(db, projectId, w, version),
    sessionCounts(db, projectId, w, version),
    userCounts(db, projectId, w, [version]),
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
          .select(['bucket', 'total', 'crashed', 'errored', 'anr'])
          .where('project_id', '=', projectId)
          .where('release', '=', version)
          .where('bucket', '>=', b.first)
          .where('bucket', '<=', b.last)
          .execute()
      : [],
    issuesBy(db, projectId, 'first_release', version, now, issueLimit),
    issuesBy(db, projectId, 'last_release', version, now, issueLimit),
  ]);

  const perBucket = new Map(
    hourly.map((r) => [Number(r.bucket), { events: Number(r.events), crashes: Number(r.crashes) }]),
  );
  const timeline = bucketList(w).map((t) => ({
    bucket: iso(t),
    events: perBucket.get(t)?.events ?? 0,
    crashes: perBucket.get(t)?.crashes ?? 0,
  }));

  const perDay = new Map<number, SessionCounts>();
  for (const r of sessionHourly) {
    const day = utcDay(Number(r.bucket));
    const d = perDay.get(day) ?? zeroSessions();
    d.total += Number(r.total);
    d.crashed += Number(r.crashed);
    d.errored += Number(r.errored);
    d.anr += Number(r.anr);
    perDay.set(day, d);
  }
  const daily_health = dayList(w).map((day) => {
    const d = perDay.get(day) ?? zeroSessions();
    return {
      day: iso(day),
      ...d,
      crash_free_rate: crashFreeRate(d.total, d.crashed),
      anr_rate: anrRate(d.total, d.anr),
    };
  });

  return {
    release: releaseJson(
      base,
      counts.get(version),
      sessions.get(version),
      users.get(version),
      newIssues.get(version) ?? 0,
      cli,
      activity,
    ),
    from: iso(w.from),
    to: iso(w.to),
    daily_health,
    timeline,
    issues_introduced: introduced,
    issues_present: present,
  };
}
