// The project overview: totals, levels and the per-release hourly timeline from
// project_hourly; new issues and regressions from the issues and issue_changes
// indexes; crash-free rate of the newest release with sessions in the window (the
// one first seen last) from session_hourly.
import type { Kysely } from 'kysely';
import { iso } from '../clock.js';
import { chunks } from '../store/dialect.js';
import { D1_MAX_BOUND_PARAMETERS } from '../store/d1.js';
import type { Database } from '../store/schema.js';
import { compareText, crashFreeRate } from './serialize.js';
import { parseWindow, windowBuckets, type QueryParams } from './window.js';

type Db = Kysely<Database>;

export interface OverviewJson {
  from: string;
  to: string;
  totals: { events: number; crashes: number; errors: number };
  levels: { fatal: number; error: number; warning: number; info: number };
  new_issues: number;
  regressions: number;
  crash_free: { release: string; rate: number; sessions: number } | null;
  timeline: { bucket: string; release: string; events: number; crashes: number }[];
}

export async function overview(db: Db, projectId: number, query: QueryParams, now: number): Promise<OverviewJson> {
  const w = parseWindow(query, now);
  const b = windowBuckets(w);
  const [hourly, sessionRows, newIssues, regressions] = await Promise.all([
    b
      ? db
          .selectFrom('project_hourly')
          .selectAll()
          .where('project_id', '=', projectId)
          .where('bucket', '>=', b.first)
          .where('bucket', '<=', b.last)
          .execute()
      : [],
    b
      ? db
          .selectFrom('session_hourly')
          .select((eb) => [
            'release',
            eb.fn.sum<number>('total').as('total'),
            eb.fn.sum<number>('crashed').as('crashed'),
          ])
          .where('project_id', '=', projectId)
          .where('bucket', '>=', b.first)
          .where('bucket', '<=', b.last)
          .where('total', '>', 0)
          .groupBy('release')
          .execute()
      : [],
    db
      .selectFrom('issues')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('project_id', '=', projectId)
      .where('first_seen', '>=', w.from)
      .where('first_seen', '<', w.to)
      .executeTakeFirstOrThrow(),
    db
      .selectFrom('issue_changes')
      .select((eb) => eb.fn.count<number>('issue_id').distinct().as('n'))
      .where('project_id', '=', projectId)
      .where('kind', '=', 'regression')
      .where('at', '>=', w.from)
      .where('at', '<', w.to)
      .executeTakeFirstOrThrow(),
  ]);

  const totals = { events: 0, crashes: 0, errors: 0 };
  const levels = { fatal: 0, error: 0, warning: 0, info: 0 };
  const timeline: OverviewJson['timeline'] = [];
  for (const r of hourly) {
    totals.events += Number(r.events);
    totals.crashes += Number(r.crashes);
    totals.errors += Number(r.errors);
    levels.fatal += Number(r.fatal);
    levels.error += Number(r.error);
    levels.warning += Number(r.warning);
    levels.info += Number(r.info) + Number(r.debug);
    if (Number(r.events) > 0) {
      timeline.push({
        bucket: iso(Number(r.bucket)),
        release: r.release,
        events: Number(r.events),
        crashes: Number(r.crashes),
      });
    }
  }

  let crash_free: OverviewJson['crash_free'] = null;
  if (sessionRows.length > 0) {
    const candidates = sessionRows.map((r) => ({
      release: r.release,
      total: Number(r.total),
      crashed: Number(r.crashed),
    }));
    const chosen = await newestSessionRelease(db, projectId, candidates);
    crash_free = {
      release: chosen.release,
      rate: crashFreeRate(chosen.total, chosen.crashed) ?? 1,
      sessions: chosen.total,
    };
  }

  timeline.sort((a, b) => compareText(a.bucket, b.bucket) || compareText(a.release, b.release));

  return {
    from: iso(w.from),
    to: iso(w.to),
    totals,
    levels,
    new_issues: Number(newIssues.n),
    regressions: Number(regressions.n),
    crash_free,
    timeline,
  };
}

interface SessionCandidate {
  release: string;
  total: number;
  crashed: number;
}

/**
 * The newest release among those with sessions in the window: the one first seen last,
 * ties to the greater version string (docs/api.md "Overview"), so a fresh release's
 * health is never hidden behind an older one whose clients are still running. A
 * release is first seen at its first event (releases.first_seen) or its first session
 * hour (session_hourly's primary key, one seek per release), whichever came first.
 */
async function newestSessionRelease(
  db: Db,
  projectId: number,
  candidates: SessionCandidate[],
): Promise<SessionCandidate> {
  if (candidates.length === 1) return candidates[0];
  const firstSeen = new Map<string, number>();
  const seen = (release: string, at: number) => firstSeen.set(release, Math.min(firstSeen.get(release) ?? at, at));
  // Versions per query: within what every database binds in one statement (D1 the fewest).
  for (const part of chunks(
    candidates.map((c) => c.release),
    D1_MAX_BOUND_PARAMETERS - 1,
  )) {
    const [events, sessions] = await Promise.all([
      db
        .selectFrom('releases')
        .select(['release', 'first_seen'])
        .where('project_id', '=', projectId)
        .where('release', 'in', part)
        .execute(),
      db
        .selectFrom('session_hourly')
        .select((eb) => ['release', eb.fn.min<number>('bucket').as('first')])
        .where('project_id', '=', projectId)
        .where('release', 'in', part)
        .groupBy('release')
        .execute(),
    ]);
    for (const r of events) seen(r.release, Number(r.first_seen));
    for (const r of sessions) seen(r.release, Number(r.first));
  }
  return [...candidates].sort(
    (x, y) => (firstSeen.get(y.release) ?? -1) - (firstSeen.get(x.release) ?? -1) || compareText(y.release, x.release),
  )[0];
}

/**
 * Whether the project has received nothing yet: no issue and no session (one index
 * seek each), so its pages can show how to set up an SDK instead of empty charts.
 */
export async function projectIsEmpty(db: Db, projectId: number): Promise<boolean> {
  const [issue, session] = await Promise.all([
    db.selectFrom('issues').select('id').where('project_id', '=', projectId).limit(1).executeTakeFirst(),
    db.selectFrom('session_hourly').select('bucket').where('project_id', '=', projectId).limit(1).executeTakeFirst(),
  ]);
  return issue === undefined && session === undefined;
}
