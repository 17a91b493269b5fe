// The project overview: totals, levels and the per-release hourly timeline from
// project_hourly; new issues and regressions from the issues and issue_changes
// indexes; crash-free rate of the newest release from session_hourly.
import type { Kysely } from 'kysely';
import { HOUR_MS, iso } from '../clock.js';
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
            eb.fn.max<number>('bucket').as('newest'),
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
      timeline.push({ bucket: iso(Number(r.bucket)), release: r.release, events: Number(r.events), crashes: Number(r.crashes) });
    }
  }

  let crash_free: OverviewJson['crash_free'] = null;
  if (sessionRows.length > 0) {
    const candidates = sessionRows.map((r) => ({ release: r.release, newest: Number(r.newest), total: Number(r.total), crashed: Number(r.crashed) }));
    const chosen = await newestSessionRelease(db, projectId, candidates);
    crash_free = { release: chosen.release, rate: crashFreeRate(chosen.total, chosen.crashed) ?? 1, sessions: chosen.total };
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
  /** Newest hour bucket with sessions in the window. */
  newest: number;
  total: number;
  crashed: number;
}

/**
 * The release whose latest session is newest in the window. The hourly
 * aggregate finds the newest hour; when several releases have sessions in it,
 * their sessions' exact start times decide (sessions_project_release_started, newest first),
 * and when those cannot (aggregate-only sessions), the newest release by
 * first_seen, then the greater version string.
 */
async function newestSessionRelease(db: Db, projectId: number, candidates: SessionCandidate[]): Promise<SessionCandidate> {
  const newestHour = Math.max(...candidates.map((c) => c.newest));
  const tied = candidates.filter((c) => c.newest === newestHour);
  if (tied.length === 1) return tied[0];
  const names = tied.map((c) => c.release);
  // One index seek per release for its latest start: a grouped max() would read every
  // session of the hour.
  const [starts, releases] = await Promise.all([
    Promise.all(
      names.map((release) =>
        db
          .selectFrom('sessions')
          .select('started')
          .where('project_id', '=', projectId)
          .where('release', '=', release)
          .where('started', '>=', newestHour)
          .where('started', '<', newestHour + HOUR_MS)
          .orderBy('started', 'desc')
          .limit(1)
          .executeTakeFirst()
          .then((row) => [release, row] as const),
      ),
    ),
    db.selectFrom('releases').select(['release', 'first_seen']).where('project_id', '=', projectId).where('release', 'in', names).execute(),
  ]);
  const latest = new Map(starts.filter(([, row]) => row !== undefined).map(([release, row]) => [release, Number(row!.started)]));
  const firstSeen = new Map(releases.map((r) => [r.release, Number(r.first_seen)]));
  const key = (c: SessionCandidate) => [latest.get(c.release) ?? -1, firstSeen.get(c.release) ?? -1];
  return [...tied].sort((x, y) => {
    const [lx, fx] = key(x);
    const [ly, fy] = key(y);
    return ly - lx || fy - fx || compareText(y.release, x.release);
  })[0];
}
