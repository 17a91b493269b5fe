// One table of ingest rule cases (dedupe, quota, sampling, regression, session class,
// hourly buckets, the end of a snooze; docs/ingest-normalisation.md "The rules table"),
// each run by both executors of the rules on real SQLite databases migrated as in
// production: (a) the planner, through the group-commit writer's SQLite batch
// (src/ingest/plan.ts), and (b) the D1 statement builder (src/ingest/d1-commit.ts), its
// statements run in one better-sqlite3 transaction (D1 speaks SQLite's SQL). Every
// table the rules write must end the same on both, and each case's own expectation must
// hold, so a rule changed in one executor only, or in both the same wrong way, fails.
import { CompiledQuery, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DAY_MS, HOUR_MS } from '../../src/clock.js';
import { compressBlob } from '../../src/editions/workers/runtime.js';
import { prepareWork } from '../../src/ingest/prepare.js';
import type {
  IngestOutcome,
  IngestWork,
  NormalizedEvent,
  SessionAggregate,
  SessionUpdate,
} from '../../src/ingest/types.js';
import { buildD1IngestCommit } from '../../src/ingest/d1-commit.js';
import type { Store } from '../../src/store/database.js';
import type { NewProject, ProjectRow } from '../../src/store/schema.js';
import {
  createProject,
  fp,
  makeAggregate,
  makeEvent,
  makeSession,
  makeWork,
  newWriter,
  openTestStore,
  type TestStore,
} from '../helpers/factory.js';

const T = Date.UTC(2026, 0, 10, 12, 0, 0);
const RECEIVED = Date.UTC(2026, 0, 10, 12, 0, 5);
const id = (n: number) => n.toString(16).padStart(32, '0');
const sid = (n: number) => `5${n.toString(16).padStart(31, '0')}`;

type WorkParts = {
  events?: Partial<NormalizedEvent>[];
  sessions?: Partial<SessionUpdate>[];
  aggregates?: Partial<SessionAggregate>[];
  receivedAt?: number;
};
/** A step: a work to ingest, or a change made the same way on both databases (resolving, snoozing). */
type Step = { work: WorkParts } | { change: (db: Store['db'], projectId: number) => Promise<unknown> };

interface RuleCase {
  rule: 'dedupe' | 'quota' | 'sampling' | 'regression' | 'session class' | 'hourly buckets' | 'snooze end';
  name: string;
  project?: Partial<NewProject>;
  /** What every random draw returns (sampling; the D1 marker too). */
  draw?: number;
  steps: Step[];
  expect: (state: State) => void;
}

const setIssue =
  (values: Record<string, number | string | null>, fingerprint = fp('a')) =>
  async (db: Store['db'], projectId: number) =>
    db
      .updateTable('issues')
      .set(values)
      .where('project_id', '=', projectId)
      .where('fingerprint', '=', fingerprint)
      .execute();
const resolve = (resolvedAt: number) =>
  setIssue({ status: 'resolved', resolved_at: resolvedAt, resolved_release: null });
const issue = (s: State, name = 'a') => s.issues.find((i) => i.fingerprint === fp(name));
const ev = (n: number, extra: Partial<NormalizedEvent> = {}): Partial<NormalizedEvent> => ({
  eventId: id(n),
  fingerprint: fp('a'),
  ...extra,
});

const CASES: RuleCase[] = [
  // Dedupe
  {
    rule: 'dedupe',
    name: 'an event id counts once: the first in a work, never again once seen',
    steps: [{ work: { events: [ev(1), ev(1), ev(2)] } }, { work: { events: [ev(1), ev(3)] } }],
    expect: (s) => {
      expect(issue(s)?.event_count).toBe(3);
      expect(s.events.map((e) => e.event_id)).toEqual([id(1), id(2), id(3)]);
      expect(s.usage).toEqual([{ day: Date.UTC(2026, 0, 10), events: 3 }]);
    },
  },
  // Quota
  {
    rule: 'quota',
    name: 'accepts a work that reaches the quota exactly',
    project: { daily_quota: 3 },
    steps: [{ work: { events: [ev(1), ev(2), ev(3)] } }],
    expect: (s) => {
      expect(s.outcomes).toEqual(['ok']);
      expect(s.usage[0]?.events).toBe(3);
    },
  },
  {
    rule: 'quota',
    name: 'refuses a work one over the quota, whole, with its sessions',
    project: { daily_quota: 2 },
    steps: [{ work: { events: [ev(1), ev(2)] } }, { work: { events: [ev(3)], sessions: [{ sid: sid(1) }] } }],
    expect: (s) => {
      expect(s.outcomes).toEqual(['ok', 'quota_exceeded']);
      expect(s.events).toHaveLength(2);
      expect(s.sessions).toEqual([]);
    },
  },
  {
    rule: 'quota',
    name: 'does not charge duplicates',
    project: { daily_quota: 2 },
    steps: [{ work: { events: [ev(1), ev(2)] } }, { work: { events: [ev(1), ev(2)] } }],
    expect: (s) => {
      expect(s.outcomes).toEqual(['ok', 'ok']);
      expect(s.usage[0]?.events).toBe(2);
    },
  },
  {
    rule: 'quota',
    name: 'never refuses a work of sessions only',
    project: { daily_quota: 1 },
    steps: [{ work: { events: [ev(1)] } }, { work: { sessions: [{ sid: sid(1) }] } }],
    expect: (s) => {
      expect(s.outcomes).toEqual(['ok', 'ok']);
      expect(s.sessions).toHaveLength(1);
    },
  },
  {
    rule: 'quota',
    name: 'counts per UTC day of receipt: the next day starts from zero',
    project: { daily_quota: 1 },
    steps: [{ work: { events: [ev(1)] } }, { work: { events: [ev(2)], receivedAt: RECEIVED + DAY_MS } }],
    expect: (s) => {
      expect(s.outcomes).toEqual(['ok', 'ok']);
      expect(s.usage.map((u) => u.events)).toEqual([1, 1]);
    },
  },
  // Sampling
  {
    rule: 'sampling',
    name: 'keeps the first sample_keep_first events of an issue',
    project: { sample_keep_first: 2, sample_rate: 0 },
    steps: [{ work: { events: [ev(1), ev(2), ev(3), ev(4)] } }],
    expect: (s) => {
      expect(s.events.map((e) => e.event_id)).toEqual([id(1), id(2)]);
      expect(issue(s)).toMatchObject({ event_count: 4, stored_count: 2 });
    },
  },
  {
    rule: 'sampling',
    name: 'counts the events of an issue stored before',
    project: { sample_keep_first: 2, sample_rate: 0 },
    steps: [{ work: { events: [ev(1)] } }, { work: { events: [ev(2), ev(3)] } }],
    expect: (s) => expect(s.events.map((e) => e.event_id)).toEqual([id(1), id(2)]),
  },
  {
    rule: 'sampling',
    name: 'always stores a crash',
    project: { sample_keep_first: 0, sample_rate: 0 },
    steps: [{ work: { events: [ev(1, { isCrash: true, level: 'fatal' }), ev(2)] } }],
    expect: (s) => expect(s.events.map((e) => e.event_id)).toEqual([id(1)]),
  },
  {
    rule: 'sampling',
    name: 'stores an event whose draw is below sample_rate',
    project: { sample_keep_first: 0, sample_rate: 0.5 },
    draw: 0.4999,
    steps: [{ work: { events: [ev(1), ev(2)] } }],
    expect: (s) => expect(s.events).toHaveLength(2),
  },
  {
    rule: 'sampling',
    name: 'drops an event whose draw is at sample_rate',
    project: { sample_keep_first: 0, sample_rate: 0.5 },
    draw: 0.5,
    steps: [{ work: { events: [ev(1), ev(2)] } }],
    expect: (s) => {
      expect(s.events).toEqual([]);
      expect(issue(s)).toMatchObject({ event_count: 2, stored_count: 0 });
    },
  },
  {
    rule: 'sampling',
    name: 'a rate of 1 keeps every event, a rate of 0 none past keep-first',
    project: { sample_keep_first: 1, sample_rate: 1 },
    draw: 0.99,
    steps: [
      { work: { events: [ev(1), ev(2), ev(3)] } },
      { change: async (db, pid) => db.updateTable('projects').set({ sample_rate: 0 }).where('id', '=', pid).execute() },
      { work: { events: [ev(4)] } },
    ],
    expect: (s) => expect(s.events.map((e) => e.event_id)).toEqual([id(1), id(2), id(3)]),
  },
  // Regression
  {
    rule: 'regression',
    name: 'leaves a resolved issue resolved for a release it saw before the resolution',
    steps: [
      { work: { events: [ev(1, { release: 'app@1' })] } },
      { change: resolve(T + 10) },
      { work: { events: [ev(2, { release: 'app@1', timestamp: T + 20 })] } },
    ],
    expect: (s) => {
      expect(issue(s)?.status).toBe('resolved');
      expect(s.changes.map((c) => c.kind)).toEqual(['new_issue']);
    },
  },
  {
    rule: 'regression',
    name: 'reopens a resolved issue for a release new to it, at the receive time',
    steps: [
      { work: { events: [ev(1, { release: 'app@1' })] } },
      { change: resolve(T + 10) },
      { work: { events: [ev(2, { release: 'app@2', environment: 'staging' })], receivedAt: RECEIVED + 60_000 } },
    ],
    expect: (s) => {
      expect(issue(s)).toMatchObject({ status: 'regression', regressed_at: RECEIVED + 60_000 });
      expect(s.changes).toEqual([
        { fingerprint: fp('a'), kind: 'new_issue', at: RECEIVED, release: 'app@1' },
        { fingerprint: fp('a'), kind: 'regression', at: RECEIVED + 60_000, release: 'app@2' },
      ]);
      expect(s.outbox.map((o) => [o.type, (o.payload as { environment: string }).environment])).toEqual([
        ['new_issue', 'production'],
        ['regression', 'staging'],
      ]);
    },
  },
  {
    rule: 'regression',
    name: 'reopens for a release first seen only at the resolution',
    steps: [
      { work: { events: [ev(1, { release: 'app@1' })] } },
      { change: resolve(T) },
      { work: { events: [ev(2, { release: 'app@1' })] } },
    ],
    expect: (s) => expect(issue(s)?.status).toBe('regression'),
  },
  {
    rule: 'regression',
    name: 'without a release, reopens only for an event newer than the resolution',
    steps: [
      { work: { events: [ev(1, { release: '' })] } },
      { change: resolve(T + 10) },
      { work: { events: [ev(2, { release: '', timestamp: T + 10 })] } },
      { work: { events: [ev(3, { release: '', timestamp: T + 11 })] } },
    ],
    expect: (s) => expect(s.changes.map((c) => c.kind)).toEqual(['new_issue', 'regression']),
  },
  {
    rule: 'regression',
    name: 'records one regression per issue even when several events would reopen it',
    steps: [
      { work: { events: [ev(1, { release: 'app@1' })] } },
      { change: resolve(T + 10) },
      { work: { events: [ev(2, { release: 'app@2' }), ev(3, { release: 'app@3' })] } },
    ],
    expect: (s) =>
      expect(s.changes.map((c) => `${c.kind} ${c.release}`)).toEqual(['new_issue app@1', 'regression app@2']),
  },
  // Session class
  {
    rule: 'session class',
    name: 'crashed and unhandled are crashed; errored, abnormal or any error errored; else ok',
    steps: [
      {
        work: {
          sessions: [
            { sid: sid(1), status: 'ok' },
            { sid: sid(2), status: 'errored', errors: 1 },
            { sid: sid(3), status: 'abnormal' },
            { sid: sid(4), status: 'crashed', errors: 1, did: 'd1' },
            { sid: sid(5), status: 'unhandled', did: 'd2' },
            { sid: sid(6), status: 'ok', errors: 2, did: 'd3' },
            { sid: sid(7), status: 'exited' },
          ],
          aggregates: [{ exited: 3, errored: 2, crashed: 1, unhandled: 1 }],
        },
      },
    ],
    expect: (s) => {
      expect(s.sessionHourly).toEqual([{ release: 'app@1.0.0', bucket: T, total: 14, crashed: 4, errored: 5, anr: 0 }]);
      expect(s.sessionUsers.map((u) => [u.did, u.crashed])).toEqual([
        ['d1', 1],
        ['d2', 1],
        ['d3', 0],
      ]);
    },
  },
  {
    rule: 'session class',
    name: 'moves a known session between classes without counting it twice',
    steps: [
      { work: { sessions: [{ sid: sid(1), status: 'ok', timestamp: T + 1 }] } },
      { work: { sessions: [{ sid: sid(1), status: 'unhandled', timestamp: T + 2 }] } },
    ],
    expect: (s) =>
      expect(s.sessionHourly).toEqual([{ release: 'app@1.0.0', bucket: T, total: 1, crashed: 1, errored: 0, anr: 0 }]),
  },
  {
    rule: 'session class',
    name: 'ignores an update older than the stored one',
    steps: [
      { work: { sessions: [{ sid: sid(1), status: 'crashed', timestamp: T + 5 }] } },
      { work: { sessions: [{ sid: sid(1), status: 'ok', timestamp: T + 4 }] } },
    ],
    expect: (s) => {
      expect(s.sessions.map((x) => x.status)).toEqual(['crashed']);
      expect(s.sessionHourly).toEqual([{ release: 'app@1.0.0', bucket: T, total: 1, crashed: 1, errored: 0, anr: 0 }]);
    },
  },
  // Hourly buckets
  {
    rule: 'hourly buckets',
    name: 'an event or session counts in the UTC hour it happened, the hour end in the next',
    steps: [
      {
        work: {
          events: [
            ev(1, { timestamp: T + HOUR_MS - 1 }),
            ev(2, { timestamp: T + HOUR_MS, environment: 'staging' }),
            ev(3, { timestamp: T - 1, release: 'app@2' }),
          ],
          sessions: [{ sid: sid(1), started: T + HOUR_MS - 1, timestamp: T + HOUR_MS }],
          aggregates: [{ started: T + HOUR_MS, exited: 2 }],
        },
      },
    ],
    expect: (s) => {
      expect(s.issueHourly.map((h) => [h.bucket, h.events])).toEqual([
        [T - HOUR_MS, 1],
        [T, 1],
        [T + HOUR_MS, 1],
      ]);
      expect(s.projectHourly.map((h) => h.bucket)).toEqual([T - HOUR_MS, T, T + HOUR_MS]);
      expect(s.sessionHourly.map((h) => [h.bucket, h.total])).toEqual([
        [T, 1],
        [T + HOUR_MS, 2],
      ]);
    },
  },
  // Snooze end
  {
    rule: 'snooze end',
    name: 'ends a snooze once the issue has ignore_count more events',
    steps: [
      { work: { events: [ev(1)] } },
      { change: setIssue({ status: 'ignored', ignore_count: 2, ignored_event_count: 1 }) },
      { work: { events: [ev(2)] } },
      { change: async () => undefined },
      { work: { events: [ev(3)], receivedAt: RECEIVED + 1_000 } },
    ],
    expect: (s) => {
      expect(issue(s)).toMatchObject({ status: 'unresolved', updated_at: RECEIVED + 1_000 });
      expect(s.changes.map((c) => [c.kind, c.at])).toEqual([
        ['new_issue', RECEIVED],
        ['snooze_ended', RECEIVED + 1_000],
      ]);
    },
  },
  {
    rule: 'snooze end',
    name: 'ends a snooze whose time has come, keeps one whose time has not',
    steps: [
      { work: { events: [ev(1), ev(2, { fingerprint: fp('b') })] } },
      { change: setIssue({ status: 'ignored', ignore_until: RECEIVED + 1_000 }) },
      { change: setIssue({ status: 'ignored', ignore_until: RECEIVED + 1_001 }, fp('b')) },
      { work: { events: [ev(3), ev(4, { fingerprint: fp('b') })], receivedAt: RECEIVED + 1_000 } },
    ],
    expect: (s) => {
      expect(issue(s)?.status).toBe('unresolved');
      expect(issue(s, 'b')?.status).toBe('ignored');
    },
  },
  {
    rule: 'snooze end',
    name: 'ends a snooze once the issue has ignore_users more distinct users',
    steps: [
      { work: { events: [ev(1, { userKey: 'u1' })] } },
      { change: setIssue({ status: 'ignored', ignore_users: 1, ignored_users: 1 }) },
      { work: { events: [ev(2, { userKey: 'u1' })] } },
      { work: { events: [ev(3, { userKey: 'u2' })] } },
    ],
    expect: (s) => {
      expect(issue(s)).toMatchObject({ status: 'unresolved', users: 2 });
      expect(s.changes.map((c) => c.kind)).toEqual(['new_issue', 'snooze_ended']);
    },
  },
];

// ---------------------------------------------------------------------------
// The two executors
// ---------------------------------------------------------------------------

function work(project: ProjectRow, parts: WorkParts): IngestWork {
  return makeWork(project, {
    receivedAt: parts.receivedAt ?? RECEIVED,
    events: (parts.events ?? []).map((e) => makeEvent(e)),
    sessions: (parts.sessions ?? []).map((s) => makeSession(s)),
    aggregates: (parts.aggregates ?? []).map((a) => makeAggregate(a)),
  });
}

type Executor = (store: Store, project: ProjectRow, parts: WorkParts, draw: number) => Promise<IngestOutcome>;

/** (a) The planner: the group-commit writer's batch on SQLite. */
const planner: Executor = async (store, project, parts, draw) => {
  const writer = newWriter(store, { random: () => draw });
  try {
    return await writer.submit(work(project, parts));
  } finally {
    await writer.close();
  }
};

/**
 * A D1 statement for better-sqlite3, which binds an array only to anonymous parameters:
 * each numbered `?N` becomes `?` with its value repeated in order, blobs as Buffers.
 */
function anonymousParameters(q: CompiledQuery): CompiledQuery {
  const parameters: unknown[] = [];
  const text = q.sql.replace(/\?(\d+)/g, (_, n: string) => {
    const v = q.parameters[Number(n) - 1];
    parameters.push(v instanceof Uint8Array ? Buffer.from(v) : v);
    return '?';
  });
  return CompiledQuery.raw(text, parameters);
}

/** (b) The D1 statement builder, its statements in one transaction (Store.atomic on better-sqlite3), as D1 runs its batch. */
const d1Statements: Executor = async (store, project, parts, draw) => {
  const commit = buildD1IngestCommit(prepareWork(work(project, parts)), { random: () => draw, compress: compressBlob });
  const results = await store.atomic(commit.statements.map(anonymousParameters));
  return commit.outcome(results as { rows: Record<string, unknown>[] }[]);
};

/** Every row the rules write for a project, by natural keys (ids differ between the databases). */
async function stateOf(db: Store['db'], pid: number, outcomes: IngestOutcome[]) {
  const q = async <R>(text: string) => (await sql<R>`${sql.raw(text)}`.execute(db)).rows;
  const P = `project_id = ${pid}`;
  const ISSUE = `(SELECT fingerprint FROM issues WHERE id = t.issue_id)`;
  return {
    outcomes: outcomes.map((o) => o.kind),
    issues: await q<
      Record<string, unknown> & { fingerprint: string }
    >(`SELECT fingerprint, title, level, status, event_count, stored_count, users, first_seen, last_seen,
        first_release, last_release, resolved_at, regressed_at, created_at, updated_at,
        (SELECT event_id FROM events WHERE id = i.first_seen_id) AS first_event, (SELECT event_id FROM events WHERE id = i.last_seen_id) AS last_event
      FROM issues i WHERE ${P} ORDER BY fingerprint`),
    seen: await q(
      `SELECT event_id, received_at, stored_id IS NOT NULL AS stored FROM seen_events WHERE ${P} ORDER BY event_id`,
    ),
    events: await q<{
      event_id: string;
    }>(`SELECT event_id, timestamp, level, release, environment, is_crash, (SELECT fingerprint FROM issues WHERE id = t.issue_id) AS issue
      FROM events t WHERE ${P} ORDER BY id`),
    usage: await q<{ day: number; events: number }>(`SELECT day, events FROM daily_usage WHERE ${P} ORDER BY day`),
    issueHourly: await q<{ bucket: number; events: number }>(
      `SELECT ${ISSUE} AS issue, bucket, events FROM issue_hourly t WHERE issue_id IN (SELECT id FROM issues WHERE ${P}) ORDER BY 1, 2`,
    ),
    issueEnvironmentHourly: await q(
      `SELECT ${ISSUE} AS issue, environment, bucket, events FROM issue_environment_hourly t WHERE issue_id IN (SELECT id FROM issues WHERE ${P}) ORDER BY 1, 2, 3`,
    ),
    projectHourly: await q<{ bucket: number }>(
      `SELECT bucket, release, events, crashes, errors, fatal, error, warning, info, debug FROM project_hourly WHERE ${P} ORDER BY 1, 2`,
    ),
    changes: await q<{ kind: string; release: string; at: number }>(
      `SELECT ${ISSUE} AS fingerprint, kind, at, release FROM issue_changes t WHERE ${P} ORDER BY id`,
    ),
    outbox: (
      await q<{ type: string; payload: string; state: string }>(
        `SELECT type, ${ISSUE} AS issue, payload, state, created_at FROM alert_outbox t WHERE ${P} ORDER BY id`,
      )
    ).map((o) => ({
      ...o,
      payload: JSON.parse(o.payload) as unknown,
    })),
    releases: await q(`SELECT release, first_seen, last_seen, platforms FROM releases WHERE ${P} ORDER BY release`),
    issueReleases: await q(
      `SELECT ${ISSUE} AS issue, release, first_seen FROM issue_releases t WHERE issue_id IN (SELECT id FROM issues WHERE ${P}) ORDER BY 1, 2`,
    ),
    issueUsers: await q(
      `SELECT ${ISSUE} AS issue, user_key FROM issue_users t WHERE issue_id IN (SELECT id FROM issues WHERE ${P}) ORDER BY 1, 2`,
    ),
    sessions: await q<{ status: string }>(
      `SELECT sid, did, release, environment, started, status, errors, updated_at, anr FROM sessions WHERE ${P} ORDER BY sid`,
    ),
    sessionHourly: await q<{ bucket: number; total: number }>(
      `SELECT release, bucket, total, crashed, errored, anr FROM session_hourly WHERE ${P} ORDER BY bucket, release`,
    ),
    sessionUsers: await q<{ did: string; crashed: number }>(
      `SELECT release, bucket, did, crashed FROM session_users WHERE ${P} ORDER BY bucket, release, did`,
    ),
  };
}

type State = Awaited<ReturnType<typeof stateOf>>;

async function run(store: Store, executor: Executor, c: RuleCase): Promise<State> {
  const project = await createProject(store, c.project);
  const outcomes: IngestOutcome[] = [];
  for (const step of c.steps) {
    if ('change' in step) await step.change(store.db, project.id);
    else outcomes.push(await executor(store, project, step.work, c.draw ?? 0.5));
  }
  return stateOf(store.db, project.id, outcomes);
}

describe('the ingest rules table: the planner and the D1 statements agree', () => {
  let a: TestStore;
  let b: TestStore;
  beforeAll(async () => {
    [a, b] = await Promise.all([openTestStore('sqlite'), openTestStore('sqlite')]);
  });
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
  });

  it('covers every rule', () => {
    expect(new Set(CASES.map((c) => c.rule))).toEqual(
      new Set(['dedupe', 'quota', 'sampling', 'regression', 'session class', 'hourly buckets', 'snooze end']),
    );
  });

  it.each(CASES.map((c) => [`${c.rule}: ${c.name}`, c] as const))('%s', async (_name, c) => {
    const fromPlanner = await run(a.store, planner, c);
    const fromD1 = await run(b.store, d1Statements, c);
    expect(fromD1).toEqual(fromPlanner);
    c.expect(fromPlanner);
  });
});
