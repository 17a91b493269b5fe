// The monitor tables (migration 025): monitors upserted from check-ins, check-ins
// recorded, and the minutely check for missed and timed-out ones. Every change of a
// monitor is one `store.atomic` unit whose first statement is a conditional write of
// the monitor row (its `version` as read, a fresh `claim` token); the unit's other
// statements (the check-in row, the `monitor` alert in the outbox) only take effect
// where the monitor row carries that token. So of two processes (or two servers)
// seeing the same miss, the one whose version still matches records it and its alert;
// the other's statements change nothing, on SQLite, PostgreSQL and D1 alike.
import { sql, type Kysely, type RawBuilder, type Selectable } from 'kysely';
import type { Store } from '../store/database.js';
import type { Database, MonitorCheckinTable, MonitorTable } from '../store/schema.js';
import { MONITOR_RECENT_CHECKINS } from '../limits.js';
import { monitorAlertPayload } from './alert.js';
import type { CheckInInput, MonitorConfig } from './config.js';
import { Schedules, type IntervalUnit, type Schedule } from './schedule.js';
import {
  applyOutcome,
  deadlineOf,
  durationMs,
  nextAfterCheckIn,
  nextAfterMiss,
  type Health,
  type Outcome,
  type Transition,
} from './state.js';
import { randomId } from '../protocol-values.js';

type Db = Kysely<Database>;
export type MonitorRow = Selectable<MonitorTable>;
export type CheckinRow = Selectable<MonitorCheckinTable>;

/** Conflicting writes a check-in retries before it gives up (each retry re-reads the monitor). */
const CHECK_IN_ATTEMPTS = 5;
/** Monitors (or timed-out check-ins) per atomic unit of the check. */
const CHECK_CHUNK = 200;

function token(): string {
  const bytes = new Uint8Array(12);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

// Values in an INSERT … SELECT list carry their type: PostgreSQL would read a bare parameter as text.
const bigint = (v: number | null): RawBuilder<number | null> => sql`cast(${v} as bigint)`;
const text = (v: string | null): RawBuilder<string | null> => sql`cast(${v} as text)`;

export function scheduleOf(m: Pick<MonitorRow, 'schedule_type' | 'schedule' | 'schedule_unit' | 'timezone'>): Schedule {
  return {
    type: m.schedule_type === 'interval' ? 'interval' : 'crontab',
    value: m.schedule,
    unit: (m.schedule_unit as IntervalUnit | null) ?? null,
    timezone: m.timezone,
  };
}

export function configOf(m: MonitorRow): MonitorConfig {
  return {
    schedule: scheduleOf(m),
    checkin_margin: Number(m.checkin_margin),
    max_runtime: Number(m.max_runtime),
    failure_issue_threshold: Number(m.failure_issue_threshold),
    recovery_threshold: Number(m.recovery_threshold),
  };
}

function configColumns(c: MonitorConfig) {
  return {
    schedule_type: c.schedule.type,
    schedule: c.schedule.value,
    schedule_unit: c.schedule.unit,
    timezone: c.schedule.timezone,
    checkin_margin: c.checkin_margin,
    max_runtime: c.max_runtime,
    failure_issue_threshold: c.failure_issue_threshold,
    recovery_threshold: c.recovery_threshold,
  };
}

function sameSchedule(a: Schedule, b: Schedule): boolean {
  return a.type === b.type && a.value === b.value && a.unit === b.unit && a.timezone === b.timezone;
}

function healthOf(m: MonitorRow): Health {
  return {
    health: m.health === 'failing' ? 'failing' : 'ok',
    failures: Number(m.failures),
    successes: Number(m.successes),
  };
}

/** The outbox row of a `monitor` alert, written only where the monitor row carries `claim`. */
function alertStatement(
  db: Db,
  monitorWhere: { id?: number; projectId: number; slug: string },
  claim: string,
  payload: object,
  now: number,
) {
  let select = db
    .selectFrom('monitors')
    .select([
      'project_id',
      text('monitor').as('type'),
      bigint(null).as('issue_id'),
      text(JSON.stringify(payload)).as('payload'),
      text('pending').as('state'),
      bigint(now).as('created_at'),
    ])
    .where('project_id', '=', monitorWhere.projectId)
    .where('slug', '=', monitorWhere.slug)
    .where('claim', '=', claim);
  if (monitorWhere.id !== undefined) select = select.where('id', '=', monitorWhere.id);
  return db
    .insertInto('alert_outbox')
    .columns(['project_id', 'type', 'issue_id', 'payload', 'state', 'created_at'])
    .expression(select)
    .compile();
}

/** A new check-in row, written only where the monitor row carries `claim`. */
function insertCheckinStatement(
  db: Db,
  where: { projectId: number; slug: string },
  claim: string,
  c: {
    checkInId: string;
    status: string;
    environment: string | null;
    release: string | null;
    durationMs: number | null;
    createdAt: number;
    updatedAt: number;
    timeoutAt: number | null;
  },
) {
  return db
    .insertInto('monitor_checkins')
    .columns([
      'project_id',
      'monitor_id',
      'check_in_id',
      'status',
      'environment',
      'release',
      'duration_ms',
      'created_at',
      'updated_at',
      'timeout_at',
    ])
    .expression(
      db
        .selectFrom('monitors')
        .select([
          'project_id',
          'id',
          text(c.checkInId).as('check_in_id'),
          text(c.status).as('status'),
          text(c.environment).as('environment'),
          text(c.release).as('release'),
          bigint(c.durationMs).as('duration_ms'),
          bigint(c.createdAt).as('created_at'),
          bigint(c.updatedAt).as('updated_at'),
          bigint(c.timeoutAt).as('timeout_at'),
        ])
        .where('project_id', '=', where.projectId)
        .where('slug', '=', where.slug)
        .where('claim', '=', claim),
    )
    .compile();
}

function claimedBy(db: Db, monitorId: number, claim: string) {
  return (eb: any) =>
    eb.exists(db.selectFrom('monitors').select('id').where('id', '=', monitorId).where('claim', '=', claim));
}

const affected = (r: { numAffectedRows?: bigint } | undefined) => Number(r?.numAffectedRows ?? 0) > 0;

// ---------------------------------------------------------------------------
// Check-ins
// ---------------------------------------------------------------------------

export type CheckInOutcome = 'stored' | 'unknown_monitor' | 'disabled' | 'duplicate' | 'conflict';

/** How long a run's closing check-in waits for the in-progress one that creates its monitor. */
export const CLOSING_CHECK_IN_WAIT_MS = 2000;
const CLOSING_CHECK_IN_POLL_MS = 100;

/**
 * The check-in's monitor. SDKs send a run's two check-ins as two requests at once, and
 * only the first carries the config: the closing one (ok or error, naming its run) may
 * arrive first and would find no monitor on the run's very first time. It waits a
 * little for the in-progress one to create it (an unknown monitor is dropped after that).
 */
async function findOrAwaitMonitor(db: Db, projectId: number, ci: CheckInInput): Promise<MonitorRow | undefined> {
  const find = () =>
    db
      .selectFrom('monitors')
      .selectAll()
      .where('project_id', '=', projectId)
      .where('slug', '=', ci.slug)
      .executeTakeFirst();
  let m = await find();
  if (m || ci.config || ci.checkInId === null || ci.status === 'in_progress') return m;
  for (let waited = 0; !m && waited < CLOSING_CHECK_IN_WAIT_MS; waited += CLOSING_CHECK_IN_POLL_MS) {
    await new Promise((resolve) => setTimeout(resolve, CLOSING_CHECK_IN_POLL_MS));
    m = await find();
  }
  return m;
}

/**
 * Records one check-in at `now`: creates or updates the monitor from its config, adds the
 * check-in or closes the in-progress one it names, moves the schedule and the health, and
 * records a `monitor` alert when an incident opens or closes. A check-in for a monitor
 * that does not exist and carries no config is dropped (`unknown_monitor`), as Sentry does.
 */
export async function recordCheckIn(
  store: Store,
  projectId: number,
  ci: CheckInInput,
  now: number,
  schedules = new Schedules(),
): Promise<CheckInOutcome> {
  const db = store.db;
  for (let attempt = 0; attempt < CHECK_IN_ATTEMPTS; attempt++) {
    const m = await findOrAwaitMonitor(db, projectId, ci);
    if (!m && !ci.config) return 'unknown_monitor';
    if (m && Number(m.enabled) !== 1) return 'disabled';
    const config = ci.config ?? configOf(m!);
    const claim = token();

    // The in-progress check-in this one closes: the one with its id, or (nil id) the latest.
    let open: CheckinRow | undefined;
    if (m) {
      let q = db.selectFrom('monitor_checkins').selectAll().where('monitor_id', '=', m.id);
      q = ci.checkInId !== null ? q.where('check_in_id', '=', ci.checkInId) : q.where('status', '=', 'in_progress');
      open = await q.orderBy('id', 'desc').limit(1).executeTakeFirst();
      if (
        open &&
        ci.checkInId !== null &&
        (ci.status === 'in_progress' || (open.status !== 'in_progress' && open.status !== 'timeout'))
      )
        return 'duplicate';
      if (open && ci.status === 'in_progress') open = undefined;
    }

    const health = m ? healthOf(m) : { health: 'ok' as const, failures: 0, successes: 0 };
    // A run already counted as timed out is not counted again when it reports.
    const outcome: Outcome | null = ci.status === 'in_progress' || open?.status === 'timeout' ? null : ci.status;
    const step = outcome ? applyOutcome(health, outcome, config) : { next: health, transition: null as Transition };
    const scheduleChanged = m ? !sameSchedule(scheduleOf(m), config.schedule) : true;
    const expected = m?.next_expected_at == null ? null : Number(m.next_expected_at);
    const nextExpected =
      open && !scheduleChanged
        ? expected!
        : nextAfterCheckIn(schedules, config.schedule, now, scheduleChanged ? null : expected);
    const values = {
      ...configColumns(config),
      health: step.next.health,
      failures: step.next.failures,
      successes: step.next.successes,
      last_status: open?.status === 'timeout' ? 'timeout' : ci.status,
      last_checkin_at: now,
      next_expected_at: nextExpected,
      deadline_at: deadlineOf(nextExpected, config.checkin_margin),
      claim,
      updated_at: now,
    };

    const queries = [];
    if (!m) {
      queries.push(
        db
          .insertInto('monitors')
          .values({ project_id: projectId, slug: ci.slug, enabled: 1, version: 1, created_at: now, ...values })
          .onConflict((oc) => oc.columns(['project_id', 'slug']).doNothing())
          .compile(),
      );
    } else {
      queries.push(
        db
          .updateTable('monitors')
          .set({ ...values, version: Number(m.version) + 1 })
          .where('id', '=', m.id)
          .where('version', '=', m.version)
          .compile(),
      );
    }
    if (open) {
      queries.push(
        db
          .updateTable('monitor_checkins')
          .set({
            status: open.status === 'timeout' ? 'timeout' : ci.status,
            duration_ms: durationMs(ci.duration, Number(open.created_at), now),
            environment: ci.environment ?? open.environment,
            release: ci.release ?? open.release,
            updated_at: now,
            timeout_at: null,
          })
          .where('id', '=', open.id)
          .where(claimedBy(db, m!.id, claim))
          .compile(),
      );
    } else {
      queries.push(
        insertCheckinStatement(db, { projectId, slug: ci.slug }, claim, {
          checkInId: ci.checkInId ?? randomId(),
          status: ci.status,
          environment: ci.environment,
          release: ci.release,
          durationMs: ci.duration === null ? null : Math.round(ci.duration * 1000),
          createdAt: now,
          updatedAt: now,
          timeoutAt: ci.status === 'in_progress' ? now + config.max_runtime * 60_000 : null,
        }),
      );
    }
    if (step.transition && outcome) {
      const payload = monitorAlertPayload(ci.slug, step.transition, outcome, {
        failures: step.transition === 'recovery' ? config.recovery_threshold : step.next.failures,
        environment: ci.environment ?? open?.environment,
      });
      queries.push(alertStatement(db, { projectId, slug: ci.slug }, claim, payload, now));
    }
    const results = await store.atomic(queries);
    if (affected(results[0])) return 'stored';
  }
  return 'conflict';
}

// ---------------------------------------------------------------------------
// The minutely check
// ---------------------------------------------------------------------------

/** Bound parameters per monitor in the missed update's VALUES list. */
const MISSED_ROW_PARAMETERS = 7;

interface MissedUpdate {
  id: number;
  version: number;
  health: Health;
  next: number;
  deadline: number;
  expected: number;
}

const values = (rows: RawBuilder<unknown>[][]) => sql.join(rows.map((r) => sql`(${sql.join(r)})`));

/**
 * A chunk's misses as three statements: the monitors whose version still matches take the
 * chunk's claim (RETURNING their ids); the missed check-ins and the alerts are written
 * for those monitors only.
 */
function missedStatements(
  db: Db,
  updates: MissedUpdate[],
  alerts: { id: number; payload: string }[],
  claim: string,
  now: number,
) {
  const rows = updates.map((u) => [
    bigint(u.id),
    bigint(u.version),
    text(u.health.health),
    bigint(u.health.failures),
    bigint(u.health.successes),
    bigint(u.next),
    bigint(u.deadline),
  ]);
  const statements = [
    sql`with v(id, version, health, failures, successes, next_expected_at, deadline_at) as (values ${values(rows)})
      update monitors set health = v.health, failures = v.failures, successes = v.successes, last_status = 'missed',
        next_expected_at = v.next_expected_at, deadline_at = v.deadline_at, version = monitors.version + 1, claim = ${text(claim)}, updated_at = ${bigint(now)}
      from v where monitors.id = v.id and monitors.version = v.version
      returning monitors.id`.compile(db),
    sql`with v(id, check_in_id, created_at) as (values ${values(updates.map((u) => [bigint(u.id), text(randomId()), bigint(u.expected)]))})
      insert into monitor_checkins (project_id, monitor_id, check_in_id, status, environment, release, duration_ms, created_at, updated_at, timeout_at)
      select m.project_id, m.id, v.check_in_id, 'missed', null, null, null, v.created_at, ${bigint(now)}, null
      from v join monitors m on m.id = v.id and m.claim = ${text(claim)}`.compile(db),
  ];
  if (alerts.length > 0) {
    statements.push(
      sql`with v(id, payload) as (values ${values(alerts.map((a) => [bigint(a.id), text(a.payload)]))})
        insert into alert_outbox (project_id, type, issue_id, payload, state, created_at)
        select m.project_id, 'monitor', null, v.payload, 'pending', ${bigint(now)}
        from v join monitors m on m.id = v.id and m.claim = ${text(claim)}`.compile(db),
    );
  }
  return statements;
}

export interface MonitorCheckResult {
  /** Monitors whose deadline had passed. */
  missed: number;
  /** In-progress check-ins past max_runtime. */
  timed_out: number;
  /** `monitor` alerts recorded: incidents opened and closed. */
  incidents: number;
  recoveries: number;
  /** Changes another process made first (counted there). */
  conflicts: number;
}

export interface MonitorCheckOptions {
  /** Check-ins older than this (ms before `now`) are deleted; default 30 days. */
  keepCheckinsMs?: number;
  /** Most monitors (and timed-out check-ins) one pass looks at. */
  limit?: number;
}

/**
 * One check at `now`: every monitor whose deadline passed records a missed check-in, every
 * in-progress check-in past max_runtime becomes `timeout`, each counting as a failure;
 * incidents that open are recorded as `monitor` alerts for the dispatcher. Then check-ins
 * older than the retention are deleted (a bounded batch per pass).
 */
export async function runMonitorCheck(
  store: Store,
  now: number,
  options: MonitorCheckOptions = {},
): Promise<MonitorCheckResult> {
  const db = store.db;
  const limit = options.limit ?? 50_000;
  const schedules = new Schedules();
  const result: MonitorCheckResult = { missed: 0, timed_out: 0, incidents: 0, recoveries: 0, conflicts: 0 };

  const due = await db
    .selectFrom('monitors')
    .selectAll()
    .where('deadline_at', '<=', now)
    .where('enabled', '=', 1)
    .orderBy('deadline_at')
    .limit(limit)
    .execute();
  // Three statements per chunk of monitors (their rows as a VALUES list), so a minute in
  // which thousands are missed costs a few statements, not a few per monitor.
  const perChunk = Math.max(
    1,
    Math.min(CHECK_CHUNK, Math.floor((store.capabilities.maxBoundParameters - 4) / MISSED_ROW_PARAMETERS)),
  );
  for (let i = 0; i < due.length; i += perChunk) {
    const chunk = due.slice(i, i + perChunk);
    const claim = token();
    const updates: MissedUpdate[] = [];
    const alerts: { id: number; payload: string }[] = [];
    const transitions = new Map<number, Transition>();
    for (const m of chunk) {
      const config = configOf(m);
      const expected = Number(m.next_expected_at);
      const step = applyOutcome(healthOf(m), 'missed', config);
      const next = nextAfterMiss(schedules, config.schedule, expected, config.checkin_margin, now);
      updates.push({
        id: Number(m.id),
        version: Number(m.version),
        health: step.next,
        next,
        deadline: deadlineOf(next, config.checkin_margin),
        expected,
      });
      transitions.set(Number(m.id), step.transition);
      if (step.transition)
        alerts.push({
          id: Number(m.id),
          payload: JSON.stringify(
            monitorAlertPayload(m.slug, step.transition, 'missed', {
              failures: step.next.failures,
              expectedAt: expected,
            }),
          ),
        });
    }
    const results = await store.atomic(missedStatements(db, updates, alerts, claim, now));
    const won = (results[0].rows as { id: number }[]).map((r) => Number(r.id));
    result.missed += won.length;
    result.conflicts += chunk.length - won.length;
    for (const id of won) if (transitions.get(id) === 'incident') result.incidents++;
  }

  // In-progress check-ins past max_runtime, grouped by monitor: one write per monitor.
  // A disabled monitor's runs are left as they are (as its misses are).
  const open = await db
    .selectFrom('monitor_checkins as c')
    .innerJoin('monitors as m', 'm.id', 'c.monitor_id')
    .select(['c.id', 'c.monitor_id', 'c.environment', 'c.timeout_at'])
    .where('c.status', '=', 'in_progress')
    .where('c.timeout_at', '<=', now)
    .where('m.enabled', '=', 1)
    .orderBy('c.timeout_at')
    .limit(limit)
    .execute();
  const byMonitor = new Map<number, typeof open>();
  for (const c of open) {
    const id = Number(c.monitor_id);
    const list = byMonitor.get(id);
    if (list) list.push(c);
    else byMonitor.set(id, [c]);
  }
  const monitorIds = [...byMonitor.keys()];
  for (let i = 0; i < monitorIds.length; i += CHECK_CHUNK) {
    const ids = monitorIds.slice(i, i + CHECK_CHUNK);
    const monitors = await db.selectFrom('monitors').selectAll().where('id', 'in', ids).execute();
    const queries = [];
    const firsts: { at: number; count: number; transitions: Transition[] }[] = [];
    for (const m of monitors) {
      const checkins = byMonitor.get(Number(m.id))!;
      const claim = token();
      const config = configOf(m);
      let health = healthOf(m);
      const transitions: Transition[] = [];
      const alerts = [];
      for (const c of checkins) {
        const step = applyOutcome(health, 'timeout', config);
        health = step.next;
        transitions.push(step.transition);
        if (step.transition) {
          alerts.push(
            monitorAlertPayload(m.slug, step.transition, 'timeout', {
              failures: health.failures,
              environment: c.environment,
              maxRuntime: config.max_runtime,
            }),
          );
        }
      }
      firsts.push({ at: queries.length, count: checkins.length, transitions });
      queries.push(
        db
          .updateTable('monitors')
          .set({
            health: health.health,
            failures: health.failures,
            successes: health.successes,
            last_status: 'timeout',
            version: Number(m.version) + 1,
            claim,
            updated_at: now,
          })
          .where('id', '=', m.id)
          .where('version', '=', m.version)
          .compile(),
      );
      queries.push(
        db
          .updateTable('monitor_checkins')
          .set({ status: 'timeout', updated_at: now, timeout_at: null })
          .where(
            'id',
            'in',
            checkins.map((c) => c.id),
          )
          .where('status', '=', 'in_progress')
          .where(claimedBy(db, m.id, claim))
          .compile(),
      );
      for (const payload of alerts)
        queries.push(
          alertStatement(db, { id: m.id, projectId: Number(m.project_id), slug: m.slug }, claim, payload, now),
        );
    }
    if (queries.length === 0) continue;
    const results = await store.atomic(queries);
    for (const f of firsts) {
      if (!affected(results[f.at])) {
        result.conflicts++;
        continue;
      }
      result.timed_out += f.count;
      result.incidents += f.transitions.filter((t) => t === 'incident').length;
    }
  }

  // Old check-ins go in bounded batches (an index on created_at finds them).
  const keep = options.keepCheckinsMs ?? 30 * 86_400_000;
  await db
    .deleteFrom('monitor_checkins')
    .where(
      'id',
      'in',
      db
        .selectFrom('monitor_checkins')
        .select('id')
        .where('created_at', '<', now - keep)
        .where('status', '<>', 'in_progress')
        .limit(5000),
    )
    .execute();
  return result;
}

// ---------------------------------------------------------------------------
// Reads and management
// ---------------------------------------------------------------------------

const isoOrNull = (ms: number | null) => (ms === null ? null : new Date(Number(ms)).toISOString());

export function monitorJson(m: MonitorRow) {
  const schedule =
    m.schedule_type === 'interval'
      ? { type: 'interval', value: Number(m.schedule), unit: m.schedule_unit }
      : { type: 'crontab', value: m.schedule };
  return {
    slug: m.slug,
    status: Number(m.enabled) === 1 ? 'active' : 'disabled',
    health: m.health,
    failures: Number(m.failures),
    last_status: m.last_status,
    last_checkin: isoOrNull(m.last_checkin_at),
    next_expected: isoOrNull(m.next_expected_at),
    config: {
      schedule,
      timezone: m.timezone,
      checkin_margin: Number(m.checkin_margin),
      max_runtime: Number(m.max_runtime),
      failure_issue_threshold: Number(m.failure_issue_threshold),
      recovery_threshold: Number(m.recovery_threshold),
    },
    created_at: isoOrNull(m.created_at),
    updated_at: isoOrNull(m.updated_at),
  };
}

export function checkinJson(c: CheckinRow) {
  return {
    id: c.check_in_id,
    status: c.status,
    environment: c.environment,
    release: c.release,
    duration: c.duration_ms === null ? null : Number(c.duration_ms) / 1000,
    date_created: isoOrNull(c.created_at),
    date_updated: isoOrNull(c.updated_at),
  };
}

export async function listMonitors(db: Db, projectId: number): Promise<MonitorRow[]> {
  return db.selectFrom('monitors').selectAll().where('project_id', '=', projectId).orderBy('slug').execute();
}

export async function findMonitor(db: Db, projectId: number, slug: string): Promise<MonitorRow | undefined> {
  return db
    .selectFrom('monitors')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('slug', '=', slug)
    .executeTakeFirst();
}

export async function recentCheckins(
  db: Db,
  monitorId: number,
  limit = MONITOR_RECENT_CHECKINS,
): Promise<CheckinRow[]> {
  return db
    .selectFrom('monitor_checkins')
    .selectAll()
    .where('monitor_id', '=', monitorId)
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}

/** The latest check-ins of several monitors (the list page's status strips), newest first per monitor. */
export async function recentCheckinsOf(
  db: Db,
  monitorIds: number[],
  perMonitor: number,
): Promise<Map<number, CheckinRow[]>> {
  const out = new Map<number, CheckinRow[]>(monitorIds.map((id) => [id, []]));
  await Promise.all(monitorIds.map(async (id) => out.set(id, await recentCheckins(db, id, perMonitor))));
  return out;
}

/**
 * Applies a PATCH (status and/or a new config, already checked) as one conditional write;
 * a monitor set active again expects its next check-in from `now`. False on a conflict.
 */
export async function updateMonitor(
  store: Store,
  m: MonitorRow,
  patch: { enabled?: boolean; config?: MonitorConfig },
  now: number,
): Promise<boolean> {
  const config = patch.config ?? configOf(m);
  const enabled = patch.enabled ?? Number(m.enabled) === 1;
  const reschedule =
    (patch.enabled === true && Number(m.enabled) !== 1) || !sameSchedule(scheduleOf(m), config.schedule);
  const expected = reschedule
    ? new Schedules().next(config.schedule, now)
    : m.next_expected_at === null
      ? null
      : Number(m.next_expected_at);
  const [r] = await store.atomic([
    store.db
      .updateTable('monitors')
      .set({
        ...configColumns(config),
        enabled: enabled ? 1 : 0,
        next_expected_at: expected,
        deadline_at: expected === null ? null : deadlineOf(expected, config.checkin_margin),
        version: Number(m.version) + 1,
        claim: token(),
        updated_at: now,
      })
      .where('id', '=', m.id)
      .where('version', '=', m.version)
      .compile(),
  ]);
  return affected(r);
}

/** Deletes a monitor and its check-ins together. */
export async function deleteMonitor(store: Store, m: MonitorRow): Promise<void> {
  await store.atomic([
    store.db.deleteFrom('monitor_checkins').where('monitor_id', '=', m.id).compile(),
    store.db.deleteFrom('monitors').where('id', '=', m.id).compile(),
  ]);
}
