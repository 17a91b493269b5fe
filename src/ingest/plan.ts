// The ingest rules of one group-commit batch, as pure functions: from what the
// database holds for the batch (a snapshot, read under the projects' locks), the
// batch's prepared works and a random source, to a write set of plain rows and
// counters. No SQL and no I/O: the store's dialect modules (src/store/sqlite.ts,
// postgres.ts) read the snapshot, call planBatch, and write the write set in the same
// transaction.
//
// The rules, per project and in submit order (docs/architecture.md, "Per event"):
// dedupe by event_id (against the snapshot and within the batch); the daily quota per
// UTC day of receipt (a work over it is refused whole, duplicates are not charged,
// sessions are never refused); grouping into issues (created unresolved, counts, users,
// first/last release and event fields by event time); the regression rule (resolved →
// regression); sampling (crashes always, the first `sample_keep_first`, then
// `sample_rate`); hourly and daily aggregates, releases; release-health sessions (a
// sid's latest update decides its class; `unhandled` counts as crashed).
// The rules' conditions and numbers (quota, sampling, regression, session class, snooze,
// hour bucket) are described once in ./rules.ts, which the D1 statement builder renders
// to SQL; this module evaluates them.
//
// Ids the database assigns on insert (new issues and events on SQLite) are not known
// here: the write set's issues and stored events (src/store/write-set.ts) are objects
// the store fills in (`id`), then the store's row builders turn them into rows. The
// store takes these rules as `ingestPlanner` (below), passed in by the edition's writer.
import { issueAlertOutboxRow } from '../alerts/outbox.js';
import { DAY_MS, utcDay } from '../clock.js';
import {
  releasePlatforms,
  type DailyUsageRecord,
  type IssueRecord,
  type ProjectHourlyRecord,
  type ReleaseRecord,
  type SeenEventRecord,
  type SessionHourlyRecord,
  type SessionUserRecord,
  type SessionRecord,
} from '../store/records.js';
import {
  emptySnapshot,
  type BatchSnapshot,
  type EventInput,
  type IngestOutcome,
  type IngestPlanner,
  type PlannedChange,
  type PlannedEvent,
  type PlannedIssue,
  type PlannedIssueRow,
  type PreparedWork,
  type ProjectKeys,
  type ProjectSettings,
  type ProjectSnapshot,
  type Random,
  type WriteCounts,
  type WriteSet,
} from '../store/write-set.js';
import {
  compile,
  hourBucket,
  KEEPS_EVENT,
  QUOTA_ACCEPTS,
  REGRESSES,
  sessionClass,
  SNOOZE_ENDED,
  toSql,
  type SessionClass,
} from './rules.js';

export { sessionClass, type SessionClass };

const quotaAccepts = compile(QUOTA_ACCEPTS);
const keeps = compile(KEEPS_EVENT);
const regressesRule = compile(REGRESSES);
const snoozeEndedRule = compile(SNOOZE_ENDED);

/** The keys to read, one entry per project of the batch, in project id order. */
export function batchKeys(works: PreparedWork[]): ProjectKeys[] {
  const ids = [...new Set(works.map((w) => w.projectId))].sort((a, b) => a - b);
  return ids.map((id) => projectKeys(id, works));
}

function projectKeys(projectId: number, works: PreparedWork[]): ProjectKeys {
  const eventIds = new Set<string>();
  const days = new Set<number>();
  const fingerprints = new Set<string>();
  const releases = new Set<string>();
  const sids = new Set<string>();
  const userKeys = new Set<string>();
  for (const w of works) {
    if (w.projectId !== projectId) continue;
    if (w.events.length > 0) days.add(utcDay(w.receivedAt));
    for (const e of w.events) {
      eventIds.add(e.eventId);
      fingerprints.add(e.fingerprint);
      if (e.release !== '') releases.add(e.release);
      if (e.userKey !== null) userKeys.add(e.userKey);
    }
    for (const s of w.sessions) sids.add(s.sid);
  }
  return {
    projectId,
    eventIds: [...eventIds],
    days: [...days],
    fingerprints: [...fingerprints].sort(),
    releases: [...releases],
    sids: [...sids],
    userKeys: [...userKeys],
  };
}

// ---------------------------------------------------------------------------
// Planning
// ---------------------------------------------------------------------------

/** The write set of a batch: every rule applied to `works` against `snapshot`. */
export function planBatch(works: PreparedWork[], snapshot: BatchSnapshot, random: Random): WriteSet {
  const plan = new Planner(random, works.length);
  const ids = [...new Set(works.map((w) => w.projectId))].sort((a, b) => a - b);
  for (const id of ids) {
    const indexes = works.flatMap((w, i) => (w.projectId === id ? [i] : []));
    const project = snapshot.projects.get(id);
    if (!project) {
      // Deleted since the request was authenticated: there is nowhere to put its data.
      for (const i of indexes) plan.counts.dropped += works[i].events.length + works[i].sessions.length;
      continue;
    }
    plan.project(project, indexes, works, snapshot.snapshots.get(id) ?? emptySnapshot());
  }
  return plan.writeSet();
}

/** Seconds until the next UTC midnight after `at`, at least 1: a quota refusal's Retry-After. */
export function secondsToNextUtcMidnight(at: number): number {
  return Math.max(1, Math.ceil((utcDay(at) + DAY_MS - at) / 1000));
}

/**
 * The regression rule: whether an event on `release` at `timestamp` reopens an issue
 * resolved at `resolvedAt`. With a release, unless the issue saw that release before it
 * was resolved; without one, when the event is newer than the resolution.
 */
export function regresses(
  release: string,
  timestamp: number,
  resolvedAt: number,
  knownReleases: ReadonlyMap<string, number> | null,
): boolean {
  return regressesRule({ release, ts: timestamp, resolvedAt, releaseFirstSeen: knownReleases?.get(release) });
}

/** The `issues` columns the snooze rule reads: its facts here, its column names in SQL. */
const SNOOZE_COLUMNS = [
  'status',
  'event_count',
  'users',
  'ignore_until',
  'ignore_count',
  'ignore_users',
  'ignored_event_count',
  'ignored_users',
] as const satisfies readonly (keyof IssueRecord)[];

/** What the snooze rule reads of an issue. */
export type SnoozeFacts = Pick<IssueRecord, (typeof SNOOZE_COLUMNS)[number]>;

/**
 * The snooze rule (docs/api.md "Snoozing"): an `ignored` issue with a condition returns
 * to `unresolved` once its time has come, or it has `ignore_count` more events, or
 * `ignore_users` more distinct users, than when it was snoozed. Ingest applies it to
 * the issues a batch touched (SQLite and PostgreSQL here; D1 as snoozeEndedSql), the
 * periodic job to time conditions.
 */
export function snoozeEnded(issue: SnoozeFacts, now: number): boolean {
  return snoozeEndedRule({ ...issue, now });
}

/** snoozeEnded as an SQL condition on an `issues` row, `now` being the SQL text of the time (D1 ingest, the periodic job). */
export function snoozeEndedSql(now: string): string {
  return toSql(SNOOZE_ENDED, { now, ...Object.fromEntries(SNOOZE_COLUMNS.map((c) => [c, c])) });
}

/**
 * The sampling rule: a crash is always stored, then the first `sample_keep_first` events of
 * an issue, then a draw against `sample_rate`. The draw happens only when neither the crash
 * nor keep-first rule decides and the rate is strictly between 0 and 1.
 */
export function keepsEvent(isCrash: boolean, eventCount: number, project: ProjectSettings, random: Random): boolean {
  return keeps({
    crash: isCrash ? 1 : 0,
    rank: eventCount,
    keepFirst: project.sample_keep_first,
    rate: project.sample_rate,
    draw: random,
  });
}

interface ReleaseAcc {
  first: number;
  last: number;
  platforms: Set<string>;
}

interface SessionState {
  row: SessionRecord;
  before: SessionClass;
  /** The stored row's ANR flag (0 for a new session). */
  beforeAnr: number;
  changed: boolean;
}

/** A work's events that passed dedupe and quota, each with its seen_events row. */
interface AcceptedWork {
  work: PreparedWork;
  events: EventInput[];
  seen: SeenEventRecord[];
}

function num(value: unknown): number {
  return Number(value);
}

class Planner {
  readonly counts: WriteCounts = { accepted: 0, duplicates: 0, refused: 0, dropped: 0, sessionUpdates: 0 };
  private readonly outcomes: IngestOutcome[];
  private readonly issues: PlannedIssue[] = [];
  private readonly stored: PlannedEvent[] = [];
  private readonly changes: PlannedChange[] = [];
  private readonly projectHourly = new Map<string, ProjectHourlyRecord>();
  private readonly releaseRows: ReleaseRecord[] = [];
  private readonly usage = new Map<string, DailyUsageRecord>();
  private readonly seen: SeenEventRecord[] = [];
  private readonly sessions: SessionRecord[] = [];
  private readonly sessionHourly = new Map<string, SessionHourlyRecord>();
  private readonly sessionUsers = new Map<string, SessionUserRecord>();

  constructor(
    private readonly random: Random,
    works: number,
  ) {
    this.outcomes = Array.from({ length: works }, () => ({ kind: 'ok' }) as IngestOutcome);
  }

  writeSet(): WriteSet {
    return {
      outcomes: this.outcomes,
      counts: this.counts,
      issues: this.issues,
      stored: this.stored,
      changes: this.changes,
      projectHourly: [...this.projectHourly.values()],
      releases: this.releaseRows,
      usage: [...this.usage.values()],
      seen: this.seen,
      sessions: this.sessions,
      sessionHourly: [...this.sessionHourly.values()].filter(
        (h) => h.total !== 0 || h.crashed !== 0 || h.errored !== 0 || (h.anr ?? 0) !== 0,
      ),
      sessionUsers: [...this.sessionUsers.values()],
    };
  }

  project(project: ProjectSettings, indexes: number[], works: PreparedWork[], snap: ProjectSnapshot): void {
    const pid = project.id;

    // 1. Dedupe against what the project has seen.
    const seen = new Set(snap.seen);

    // 2. Daily quota, in submit order.
    const used = project.daily_quota > 0 ? new Map(snap.used) : new Map<number, number>();
    const accepted: AcceptedWork[] = [];
    for (const i of indexes) {
      const work = works[i];
      const local = new Set<string>();
      const fresh: EventInput[] = [];
      for (const e of work.events) {
        if (seen.has(e.eventId) || local.has(e.eventId)) {
          this.counts.duplicates++;
          continue;
        }
        local.add(e.eventId);
        fresh.push(e);
      }
      const day = utcDay(work.receivedAt);
      if (fresh.length > 0) {
        const sofar = used.get(day) ?? 0;
        if (!quotaAccepts({ quota: project.daily_quota, used: sofar, fresh: fresh.length })) {
          this.outcomes[i] = { kind: 'quota_exceeded', retryAfterSeconds: secondsToNextUtcMidnight(work.receivedAt) };
          this.counts.refused += fresh.length;
          continue;
        }
        used.set(day, sofar + fresh.length);
        const key = `${pid}:${day}`;
        const u = this.usage.get(key) ?? { project_id: pid, day, events: 0 };
        u.events += fresh.length;
        this.usage.set(key, u);
      }
      for (const id of local) seen.add(id);
      // stored_id is filled in once the stored events have their ids (linkStoredEvents).
      const rows: SeenEventRecord[] = fresh.map((e) => ({
        project_id: pid,
        event_id: e.eventId,
        received_at: work.receivedAt,
        stored_id: null,
      }));
      this.seen.push(...rows);
      accepted.push({ work, events: fresh, seen: rows });
    }

    this.events(project, accepted, snap);
    this.sessionUpdates(
      pid,
      accepted.map((a) => a.work),
      snap,
    );
  }

  private events(project: ProjectSettings, accepted: AcceptedWork[], snap: ProjectSnapshot): void {
    const pid = project.id;
    if (!accepted.some((a) => a.events.length > 0)) return;

    // 3. The issues these events belong to, with the event times behind first/last_seen_id.
    const byFingerprint = new Map<string, PlannedIssue>();
    const byId = new Map<number, PlannedIssue>();
    for (const { first_ts, last_ts, ...row } of snap.issues) {
      const state = newIssue({ ...row, id: num(row.id) });
      // A referenced event retention already deleted: first_seen_id stays (repairing it
      // is retention's job); last_seen_id moves to the newest stored event.
      state.firstStoredTs = row.first_seen_id === null ? Infinity : first_ts === null ? -Infinity : Number(first_ts);
      state.lastStoredTs = row.last_seen_id === null || last_ts === null ? -Infinity : Number(last_ts);
      byFingerprint.set(row.fingerprint, state);
      byId.set(num(row.id), state);
    }
    // A merged fingerprint's events count in the issue it was merged into.
    for (const [fingerprint, id] of snap.aliases) {
      const target = byId.get(id);
      if (target && !byFingerprint.has(fingerprint)) byFingerprint.set(fingerprint, target);
    }
    for (const s of byId.values()) if (s.row.status === 'resolved') s.knownReleases = new Map();
    for (const r of snap.resolvedReleases) byId.get(num(r.issue_id))?.knownReleases?.set(r.release, num(r.first_seen));
    // Only the issues an accepted event reaches are written back.
    const touched = new Set<PlannedIssue>();

    // 4. Every event in order: grouping, regression, sampling, aggregates.
    const releases = new Map<string, ReleaseAcc>();
    for (const { work, events, seen } of accepted) {
      const at = work.receivedAt;
      for (const [i, e] of events.entries()) {
        let issue = byFingerprint.get(e.fingerprint);
        if (!issue) {
          issue = newIssue({
            id: snap.newIssueIds?.get(e.fingerprint) ?? null,
            project_id: pid,
            fingerprint: e.fingerprint,
            title: e.title,
            level: e.level,
            error_type: e.errorType,
            screen: e.screen,
            location: e.location,
            platform: e.platform,
            status: 'unresolved',
            event_count: 0,
            stored_count: 0,
            users: 0,
            first_seen: e.timestamp,
            last_seen: e.timestamp,
            first_seen_id: null,
            last_seen_id: null,
            first_release: e.release,
            last_release: e.release,
            resolved_release: null,
            resolved_at: null,
            regressed_at: null,
            created_at: at,
            updated_at: at,
            ignore_until: null,
            ignore_count: null,
            ignore_users: null,
            ignored_event_count: null,
            ignored_users: null,
            assignee_id: null,
          });
          byFingerprint.set(e.fingerprint, issue);
          this.changes.push({ issue, kind: 'new_issue', at, release: e.release, environment: e.environment });
        }
        if (!touched.has(issue)) {
          touched.add(issue);
          this.issues.push(issue);
        }
        const row = issue.row;

        // `ignored`, `triaged` and `regression` are never changed by ingest.
        if (row.status === 'resolved' && regresses(e.release, e.timestamp, row.resolved_at ?? 0, issue.knownReleases)) {
          row.status = 'regression';
          row.regressed_at = at;
          this.changes.push({ issue, kind: 'regression', at, release: e.release, environment: e.environment });
        }

        row.event_count += 1;
        if (e.timestamp >= row.last_seen) {
          row.last_seen = e.timestamp;
          row.last_release = e.release;
          row.level = e.level;
          row.title = e.title;
          row.error_type = e.errorType;
          row.screen = e.screen;
          row.location = e.location;
          row.platform = e.platform;
        }
        if (e.timestamp < row.first_seen) {
          row.first_seen = e.timestamp;
          row.first_release = e.release;
        }
        if (at > row.updated_at) row.updated_at = at;
        if (e.userKey !== null) issue.userKeys.add(e.userKey);
        if (e.release !== '') {
          const f = issue.releaseFirstSeen.get(e.release);
          if (f === undefined || e.timestamp < f) issue.releaseFirstSeen.set(e.release, e.timestamp);
          const acc = releases.get(e.release);
          if (acc) {
            if (e.timestamp < acc.first) acc.first = e.timestamp;
            if (e.timestamp > acc.last) acc.last = e.timestamp;
            if (e.platform !== '') acc.platforms.add(e.platform);
          } else {
            releases.set(e.release, {
              first: e.timestamp,
              last: e.timestamp,
              platforms: new Set(e.platform !== '' ? [e.platform] : []),
            });
          }
        }
        const bucket = hourBucket(e.timestamp);
        issue.hourly.set(bucket, (issue.hourly.get(bucket) ?? 0) + 1);
        const envKey = `${bucket}:${e.environment}`;
        const envHour = issue.environmentHourly.get(envKey);
        if (envHour) envHour.events += 1;
        else issue.environmentHourly.set(envKey, { environment: e.environment, bucket, events: 1 });
        this.countProjectHourly(pid, bucket, e);

        if (keepsEvent(e.isCrash, row.event_count, project, this.random)) {
          row.stored_count += 1;
          this.stored.push({
            input: e,
            issue,
            projectId: pid,
            receivedAt: at,
            id: snap.eventIds?.get(e.eventId) ?? null,
            seen: seen[i],
          });
        }
        this.counts.accepted++;
      }
    }

    // 5. Snoozes that this batch's events end (the issue's users as the store will count them).
    for (const issue of touched) {
      const row = issue.row;
      if (row.status !== 'ignored' || row.id === null) continue;
      let users = row.users;
      if (row.ignore_users !== null) {
        const known = snap.knownUsers.get(row.id);
        for (const key of issue.userKeys) if (!known?.has(key)) users += 1;
      }
      const at = accepted[accepted.length - 1].work.receivedAt;
      if (snoozeEnded({ ...row, users }, at)) {
        row.status = 'unresolved';
        if (at > row.updated_at) row.updated_at = at;
        this.changes.push({ issue, kind: 'snooze_ended', at, release: row.last_release, environment: '' });
      }
    }

    // 6. Releases: merge first/last seen and platforms with the stored rows.
    for (const r of snap.releases) {
      const acc = releases.get(r.release);
      if (!acc) continue;
      acc.first = Math.min(acc.first, num(r.first_seen));
      acc.last = Math.max(acc.last, num(r.last_seen));
      for (const p of releasePlatforms(r.platforms)) acc.platforms.add(p);
    }
    for (const [release, acc] of releases) {
      this.releaseRows.push({
        project_id: pid,
        release,
        first_seen: acc.first,
        last_seen: acc.last,
        platforms: JSON.stringify([...acc.platforms].sort()),
      });
    }
  }

  private countProjectHourly(pid: number, bucket: number, e: EventInput): void {
    const key = `${pid}:${bucket}:${e.release}`;
    let h = this.projectHourly.get(key);
    if (!h) {
      h = {
        project_id: pid,
        bucket,
        release: e.release,
        events: 0,
        crashes: 0,
        errors: 0,
        fatal: 0,
        error: 0,
        warning: 0,
        info: 0,
        debug: 0,
      };
      this.projectHourly.set(key, h);
    }
    h.events += 1;
    if (e.isCrash) h.crashes += 1;
    else if (e.level === 'error') h.errors += 1;
    h[e.level] += 1;
  }

  /**
   * 7. Sessions of the works the quota let through (a work refused is refused whole; one
   * that carries only sessions is never refused).
   */
  private sessionUpdates(pid: number, works: PreparedWork[], snap: ProjectSnapshot): void {
    const states = new Map<string, SessionState>();
    for (const r of snap.sessions) {
      const row = {
        ...r,
        started: num(r.started),
        errors: num(r.errors),
        updated_at: num(r.updated_at),
        anr: num(r.anr ?? 0),
      };
      states.set(r.sid, { row, before: sessionClass(row.status, row.errors), beforeAnr: row.anr, changed: false });
    }
    for (const work of works) {
      for (const u of work.sessions) {
        this.counts.sessionUpdates++;
        const state = states.get(u.sid);
        if (!state) {
          states.set(u.sid, {
            row: {
              project_id: pid,
              sid: u.sid,
              did: u.did,
              release: u.release,
              environment: u.environment,
              started: u.started,
              status: u.status,
              errors: u.errors,
              updated_at: u.timestamp,
              anr: u.anr,
            },
            before: 'none',
            beforeAnr: 0,
            changed: true,
          });
          continue;
        }
        // The latest update wins; an older one arriving late changes nothing.
        if (u.timestamp < state.row.updated_at) continue;
        state.row.status = u.status;
        state.row.errors = u.errors;
        state.row.updated_at = u.timestamp;
        state.row.anr = u.anr;
        if (state.row.did === null && u.did !== null) state.row.did = u.did;
        state.changed = true;
      }
      for (const a of work.aggregates) {
        if (a.total === 0) continue;
        const h = this.sessionBucket(pid, a.release, hourBucket(a.started));
        h.total += a.total;
        h.crashed += a.crashed;
        h.errored += a.errored;
      }
    }
    for (const state of states.values()) {
      if (!state.changed) continue;
      this.sessions.push(state.row);
      const after = sessionClass(state.row.status, state.row.errors);
      if (state.row.did !== null)
        this.sessionUser(pid, state.row.release, hourBucket(state.row.started), state.row.did, after === 'crashed');
      const anr = state.row.anr ?? 0;
      if (after === state.before && anr === state.beforeAnr) continue;
      const h = this.sessionBucket(pid, state.row.release, hourBucket(state.row.started));
      h.anr = (h.anr ?? 0) + anr - state.beforeAnr;
      if (state.before === 'none') h.total += 1;
      if (state.before === 'crashed') h.crashed -= 1;
      if (state.before === 'errored') h.errored -= 1;
      if (after === 'crashed') h.crashed += 1;
      if (after === 'errored') h.errored += 1;
    }
  }

  private sessionUser(pid: number, release: string, bucket: number, did: string, crashed: boolean): void {
    const key = `${pid}:${bucket}:${release}:${did}`;
    const u = this.sessionUsers.get(key);
    if (u) u.crashed = Math.max(u.crashed, crashed ? 1 : 0);
    else this.sessionUsers.set(key, { project_id: pid, release, bucket, did, crashed: crashed ? 1 : 0 });
  }

  private sessionBucket(pid: number, release: string, bucket: number): SessionHourlyRecord {
    const key = `${pid}:${bucket}:${release}`;
    let h = this.sessionHourly.get(key);
    if (!h) {
      h = { project_id: pid, release, bucket, total: 0, crashed: 0, errored: 0, anr: 0 };
      this.sessionHourly.set(key, h);
    }
    return h;
  }
}

function newIssue(row: PlannedIssueRow): PlannedIssue {
  return {
    row,
    knownReleases: null,
    userKeys: new Set(),
    releaseFirstSeen: new Map(),
    hourly: new Map(),
    environmentHourly: new Map(),
    firstStoredTs: Infinity,
    lastStoredTs: -Infinity,
  };
}

/** Alerts are recorded with what caused them (src/alerts/outbox.ts); a dispatcher sends them. */
export function alertOutboxRows(plan: WriteSet): Record<string, unknown>[] {
  const rows: Record<string, unknown>[] = [];
  for (const c of plan.changes) {
    // A snooze that ended is activity, not an alert.
    if (c.kind === 'snooze_ended') continue;
    rows.push(
      issueAlertOutboxRow(c.issue.row.project_id, c.issue.row.id, c.kind, c.at, {
        ...c.issue.row,
        release: c.release,
        environment: c.environment,
      }),
    );
  }
  return rows;
}

/** The rules as the store's batches take them (src/store/write-set.ts IngestPlanner). */
export const ingestPlanner: IngestPlanner = { batchKeys, planBatch, alertOutboxRows };
