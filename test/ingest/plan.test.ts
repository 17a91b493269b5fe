// The ingest planner's rules without a database: a snapshot and prepared works in,
// a write set out (src/ingest/plan.ts).
import { describe, expect, it } from 'vitest';
import { DAY_MS, HOUR_MS } from '../../src/clock.js';
import { alertOutboxRows, planBatch } from '../../src/ingest/plan.js';
import { prepareWork } from '../../src/ingest/prepare.js';
import {
  emptySnapshot,
  issueChangeRows,
  linkStoredEvents,
  type IssueWithTimes,
  type PreparedWork,
  type ProjectSettings,
  type ProjectSnapshot,
  type Random,
  type WriteSet,
} from '../../src/store/write-set.js';
import type { IngestWork, NormalizedEvent, SessionAggregate, SessionUpdate } from '../../src/ingest/types.js';
import { makeEvent } from '../helpers/factory.js';

const PID = 7;
const NOW = Date.UTC(2026, 10, 25, 12, 0, 0);
const RESOLVED_AT = NOW - DAY_MS;
const FP = 'f'.repeat(32);

/** An event of the default issue, without a release, a second before NOW. */
function event(overrides: Partial<NormalizedEvent> = {}): NormalizedEvent {
  return makeEvent({ timestamp: NOW - 1000, release: '', fingerprint: FP, ...overrides });
}

function work(
  events: NormalizedEvent[],
  options: {
    receivedAt?: number;
    sessions?: SessionUpdate[];
    aggregates?: SessionAggregate[];
    projectId?: number;
  } = {},
): PreparedWork {
  const w = {
    project: { id: options.projectId ?? PID },
    receivedAt: options.receivedAt ?? NOW,
    events,
    sessions: options.sessions ?? [],
    aggregates: options.aggregates ?? [],
  } as unknown as IngestWork;
  return prepareWork(w);
}

function settings(overrides: Partial<ProjectSettings> = {}): ProjectSettings {
  return { id: PID, sample_keep_first: 1_000_000, sample_rate: 1, daily_quota: 0, ...overrides };
}

function snapshot(overrides: Partial<ProjectSnapshot> = {}): ProjectSnapshot {
  return { ...emptySnapshot(), ...overrides };
}

function issue(overrides: Partial<IssueWithTimes> = {}): IssueWithTimes {
  return {
    id: 41,
    project_id: PID,
    fingerprint: FP,
    title: 'TypeError: x is undefined',
    level: 'error',
    error_type: 'TypeError',
    screen: '',
    location: 'app.js',
    platform: 'javascript',
    status: 'unresolved',
    event_count: 10,
    stored_count: 10,
    users: 0,
    first_seen: NOW - 10 * DAY_MS,
    last_seen: NOW - 2 * DAY_MS,
    first_seen_id: 1,
    last_seen_id: 2,
    first_release: '1.0',
    last_release: '1.0',
    resolved_release: null,
    resolved_at: null,
    regressed_at: null,
    created_at: NOW - 10 * DAY_MS,
    updated_at: NOW - 2 * DAY_MS,
    first_ts: NOW - 10 * DAY_MS,
    last_ts: NOW - 2 * DAY_MS,
    ignore_until: null,
    ignore_count: null,
    ignore_users: null,
    ignored_event_count: null,
    ignored_users: null,
    assignee_id: null,
    ...overrides,
  };
}

const never: Random = () => {
  throw new Error('sampling drew a random number it did not need');
};

function plan(
  works: PreparedWork[],
  project: ProjectSettings = settings(),
  snap: ProjectSnapshot = snapshot(),
  random: Random = never,
): WriteSet {
  return planBatch(
    works,
    { projects: new Map([[project.id, project]]), snapshots: new Map([[project.id, snap]]) },
    random,
  );
}

/** A resolved issue that saw release `1.0` (first at `seenAt`) before or after its resolution. */
function resolvedSnapshot(status = 'resolved', seenAt = RESOLVED_AT - HOUR_MS): ProjectSnapshot {
  return snapshot({
    issues: [issue({ status, resolved_at: RESOLVED_AT, resolved_release: '1.0' })],
    resolvedReleases: status === 'resolved' ? [{ issue_id: 41, release: '1.0', first_seen: seenAt }] : [],
  });
}

describe('regression', () => {
  it('leaves a resolved issue resolved for a release it saw before the resolution', () => {
    const out = plan([work([event({ release: '1.0' })])], settings(), resolvedSnapshot());
    expect(out.issues[0].row.status).toBe('resolved');
    expect(out.issues[0].row.regressed_at).toBeNull();
    expect(out.changes).toEqual([]);
    expect(out.issues[0].row.event_count).toBe(11);
  });

  it('reopens a resolved issue for a release new to it, at the receive time', () => {
    const out = plan([work([event({ release: '2.0' })])], settings(), resolvedSnapshot());
    expect(out.issues[0].row.status).toBe('regression');
    expect(out.issues[0].row.regressed_at).toBe(NOW);
    expect(issueChangeRows(out)).toEqual([
      { project_id: PID, issue_id: 41, kind: 'regression', at: NOW, release: '2.0' },
    ]);
  });

  it('reopens for a release first seen only at or after the resolution', () => {
    const out = plan([work([event({ release: '1.0' })])], settings(), resolvedSnapshot('resolved', RESOLVED_AT));
    expect(out.issues[0].row.status).toBe('regression');
  });

  it('without a release, reopens only for an event newer than the resolution', () => {
    const after = plan([work([event({ timestamp: RESOLVED_AT + 1 })])], settings(), resolvedSnapshot());
    expect(after.issues[0].row.status).toBe('regression');
    const at = plan([work([event({ timestamp: RESOLVED_AT })])], settings(), resolvedSnapshot());
    expect(at.issues[0].row.status).toBe('resolved');
    const before = plan([work([event({ timestamp: RESOLVED_AT - 1 })])], settings(), resolvedSnapshot());
    expect(before.issues[0].row.status).toBe('resolved');
    expect(before.changes).toEqual([]);
  });

  it.each(['ignored', 'triaged', 'regression'])('never changes a %s issue', (status) => {
    const out = plan([work([event({ release: '9.9', timestamp: NOW })])], settings(), resolvedSnapshot(status));
    expect(out.issues[0].row.status).toBe(status);
    expect(out.issues[0].row.regressed_at).toBeNull();
    expect(out.changes).toEqual([]);
  });

  it('records one regression per issue even when several events would reopen it', () => {
    const out = plan([work([event({ release: '2.0' }), event({ release: '3.0' })])], settings(), resolvedSnapshot());
    expect(out.changes.map((c) => c.kind)).toEqual(['regression']);
  });
});

describe('merged fingerprints', () => {
  const MERGED = 'a'.repeat(32);

  it('counts an event of a merged fingerprint in the issue it was merged into, with that fingerprint', () => {
    const out = plan(
      [work([event({ fingerprint: MERGED }), event()])],
      settings(),
      snapshot({ issues: [issue()], aliases: new Map([[MERGED, 41]]) }),
    );
    expect(out.issues).toHaveLength(1);
    expect(out.issues[0].row).toMatchObject({ id: 41, fingerprint: FP, event_count: 12 });
    expect(out.changes).toEqual([]);
    expect(out.stored.map((s) => s.issue.row.fingerprint)).toEqual([FP, FP]);
  });

  it("regresses the issue a merged fingerprint goes to by that issue's releases", () => {
    const snap = resolvedSnapshot();
    snap.aliases.set(MERGED, 41);
    expect(plan([work([event({ fingerprint: MERGED, release: '1.0' })])], settings(), snap).issues[0].row.status).toBe(
      'resolved',
    );
    expect(plan([work([event({ fingerprint: MERGED, release: '2.0' })])], settings(), snap).issues[0].row.status).toBe(
      'regression',
    );
  });
});

describe('daily quota', () => {
  const day = Date.UTC(2026, 10, 25);
  const quota = (used: number, limit = 3) =>
    [settings({ daily_quota: limit }), snapshot({ used: new Map([[day, used]]) })] as const;

  it('accepts a work that reaches the quota exactly', () => {
    const out = plan([work([event()])], ...quota(2));
    expect(out.outcomes).toEqual([{ kind: 'ok' }]);
    expect(out.usage).toEqual([{ project_id: PID, day, events: 1 }]);
    expect(out.counts.accepted).toBe(1);
  });

  it('refuses a work one over the quota, whole, until the next UTC midnight', () => {
    const out = plan([work([event(), event()])], ...quota(2));
    expect(out.outcomes).toEqual([{ kind: 'quota_exceeded', retryAfterSeconds: 12 * 3600 }]);
    expect(out.counts).toMatchObject({ accepted: 0, refused: 2 });
    expect(out.stored).toEqual([]);
    expect(out.seen).toEqual([]);
    expect(out.usage).toEqual([]);
    expect(out.issues).toEqual([]);
  });

  it('refuses a later work of the batch once earlier ones used the quota, and drops its sessions with it', () => {
    const sid = 'a'.repeat(32);
    const session: SessionUpdate = {
      sid,
      did: null,
      init: true,
      started: NOW,
      timestamp: NOW,
      status: 'ok',
      errors: 0,
      release: '1.0',
      environment: 'p',
    };
    const out = plan([work([event()]), work([event()], { sessions: [session] })], ...quota(2));
    expect(out.outcomes.map((o) => o.kind)).toEqual(['ok', 'quota_exceeded']);
    expect(out.sessions).toEqual([]);
  });

  it('never refuses a work of sessions only', () => {
    const session: SessionUpdate = {
      sid: 'b'.repeat(32),
      did: null,
      init: true,
      started: NOW,
      timestamp: NOW,
      status: 'ok',
      errors: 0,
      release: '1.0',
      environment: 'p',
    };
    // Usage can be above the quota (lowered after the day's events): sessions still go in.
    const out = plan([work([], { sessions: [session] })], ...quota(5));
    expect(out.outcomes).toEqual([{ kind: 'ok' }]);
    expect(out.sessions.map((s) => s.sid)).toEqual([session.sid]);
  });

  it('does not charge duplicates', () => {
    const seenBefore = event();
    const again = event();
    const [project, snap] = quota(2);
    snap.seen.add(seenBefore.eventId);
    const out = plan([work([seenBefore, again, { ...again }])], project, snap);
    expect(out.outcomes).toEqual([{ kind: 'ok' }]);
    expect(out.counts).toMatchObject({ accepted: 1, duplicates: 2, refused: 0 });
    expect(out.usage).toEqual([{ project_id: PID, day, events: 1 }]);
  });

  it('counts per UTC day of receipt: the next day starts from zero', () => {
    const lastMs = day + DAY_MS - 1;
    const refused = plan([work([event()], { receivedAt: lastMs })], ...quota(3));
    expect(refused.outcomes).toEqual([{ kind: 'quota_exceeded', retryAfterSeconds: 1 }]);
    const nextDay = plan([work([event()], { receivedAt: day + DAY_MS })], ...quota(3));
    expect(nextDay.outcomes).toEqual([{ kind: 'ok' }]);
    expect(nextDay.usage).toEqual([{ project_id: PID, day: day + DAY_MS, events: 1 }]);
  });
});

describe('sampling', () => {
  it('keeps the first sample_keep_first events of an issue, counting the ones stored before', () => {
    const snap = snapshot({ issues: [issue({ event_count: 1 })] });
    const events = [event(), event(), event()];
    const out = plan([work(events)], settings({ sample_keep_first: 2, sample_rate: 0 }), snap);
    expect(out.stored.map((s) => s.input.eventId)).toEqual([events[0].eventId]);
    expect(out.issues[0].row).toMatchObject({ event_count: 4, stored_count: 11 });
    // Sampled-out events are still seen (resends stay duplicates), with no stored row.
    expect(out.seen.map((s) => s.event_id)).toEqual(events.map((e) => e.eventId));
  });

  it('always stores a crash', () => {
    const crash = event({ isCrash: true });
    const out = plan([work([event(), crash])], settings({ sample_keep_first: 0, sample_rate: 0 }));
    expect(out.stored.map((s) => s.input.eventId)).toEqual([crash.eventId]);
  });

  it('draws against sample_rate only when crash and keep-first do not decide', () => {
    const draws = [0.49, 0.5, 0.1];
    let calls = 0;
    const random: Random = () => draws[calls++];
    const events = [event(), event({ isCrash: true }), event(), event(), event()];
    const out = plan([work(events)], settings({ sample_keep_first: 1, sample_rate: 0.5 }), snapshot(), random);
    expect(calls).toBe(3);
    expect(out.stored.map((s) => s.input.eventId)).toEqual(
      [events[0], events[1], events[2], events[4]].map((e) => e.eventId),
    );
  });
});

describe('dedupe', () => {
  it('drops an event id seen before, within a work, and in an earlier work of the batch', () => {
    const old = event();
    const a = event();
    const b = event();
    const out = plan(
      [work([old, a, { ...a }]), work([{ ...a }, b])],
      settings(),
      snapshot({ seen: new Set([old.eventId]) }),
    );
    expect(out.counts).toMatchObject({ accepted: 2, duplicates: 3 });
    expect(out.seen.map((s) => s.event_id)).toEqual([a.eventId, b.eventId]);
    expect(out.issues[0].row.event_count).toBe(2);
  });
});

describe('sessions', () => {
  const sid = 'c'.repeat(32);
  const base: SessionUpdate = {
    sid,
    did: null,
    init: false,
    started: NOW - HOUR_MS,
    timestamp: NOW,
    status: 'ok',
    errors: 0,
    release: '1.0',
    environment: 'p',
  };
  const bucket = NOW - HOUR_MS;

  it('lets the latest update of a sid decide, whatever the arrival order', () => {
    const latest = { ...base, timestamp: NOW + 2000, status: 'crashed' as const };
    const older = { ...base, timestamp: NOW + 1000, status: 'exited' as const };
    const out = plan([work([], { sessions: [latest, older] })]);
    expect(out.sessions).toMatchObject([{ sid, status: 'crashed', updated_at: NOW + 2000 }]);
    expect(out.sessionHourly).toEqual([
      { project_id: PID, release: '1.0', bucket, total: 1, crashed: 1, errored: 0, anr: 0 },
    ]);
  });

  it('moves a known session between classes without counting it twice', () => {
    const known = {
      project_id: PID,
      sid,
      did: null,
      release: '1.0',
      environment: 'p',
      started: bucket,
      status: 'errored',
      errors: 1,
      updated_at: NOW - 1,
    };
    const out = plan(
      [work([], { sessions: [{ ...base, status: 'crashed' }] })],
      settings(),
      snapshot({ sessions: [known] }),
    );
    expect(out.sessionHourly).toEqual([
      { project_id: PID, release: '1.0', bucket, total: 0, crashed: 1, errored: -1, anr: 0 },
    ]);
  });

  it('ignores an update older than the stored one', () => {
    const known = {
      project_id: PID,
      sid,
      did: null,
      release: '1.0',
      environment: 'p',
      started: bucket,
      status: 'ok',
      errors: 0,
      updated_at: NOW + 5,
    };
    const out = plan(
      [work([], { sessions: [{ ...base, status: 'crashed' }] })],
      settings(),
      snapshot({ sessions: [known] }),
    );
    expect(out.sessions).toEqual([]);
    expect(out.sessionHourly).toEqual([]);
    expect(out.counts.sessionUpdates).toBe(1);
  });

  it('counts unhandled as crashed, in updates and in aggregates', () => {
    const update = plan([work([], { sessions: [{ ...base, status: 'unhandled' }] })]);
    expect(update.sessionHourly).toEqual([
      { project_id: PID, release: '1.0', bucket, total: 1, crashed: 1, errored: 0, anr: 0 },
    ]);
    const aggregate: SessionAggregate = {
      started: bucket,
      release: '1.0',
      environment: 'p',
      exited: 2,
      errored: 0,
      abnormal: 0,
      crashed: 0,
      unhandled: 1,
    };
    const agg = plan([work([], { aggregates: [aggregate] })]);
    expect(agg.sessionHourly).toEqual([
      { project_id: PID, release: '1.0', bucket, total: 3, crashed: 1, errored: 0, anr: 0 },
    ]);
  });

  it('counts a session that ends in an ANR once, and moves it when a later update says otherwise', () => {
    const anr = plan([
      work([], { sessions: [{ ...base }, { ...base, timestamp: NOW + 1, status: 'abnormal', anr: true }] }),
    ]);
    expect(anr.sessions).toMatchObject([{ sid, status: 'abnormal', anr: 1 }]);
    expect(anr.sessionHourly).toEqual([
      { project_id: PID, release: '1.0', bucket, total: 1, crashed: 0, errored: 1, anr: 1 },
    ]);
    const known = {
      project_id: PID,
      sid,
      did: null,
      release: '1.0',
      environment: 'p',
      started: bucket,
      status: 'abnormal',
      errors: 0,
      updated_at: NOW - 1,
      anr: 1,
    };
    const again = plan(
      [work([], { sessions: [{ ...base, status: 'abnormal', anr: true }] })],
      settings(),
      snapshot({ sessions: [known] }),
    );
    expect(again.sessionHourly).toEqual([]);
    const crashed = plan(
      [work([], { sessions: [{ ...base, status: 'crashed' }] })],
      settings(),
      snapshot({ sessions: [known] }),
    );
    expect(crashed.sessionHourly).toEqual([
      { project_id: PID, release: '1.0', bucket, total: 0, crashed: 1, errored: -1, anr: -1 },
    ]);
  });
});

describe('outbox', () => {
  it('records a new issue once, with its id once the store knows it', () => {
    const first = event({ fingerprint: 'a'.repeat(32), title: 'first', level: 'warning', release: '3.0' });
    const out = plan([
      work([first, event({ fingerprint: 'a'.repeat(32), title: 'second', timestamp: first.timestamp - 1 })]),
    ]);
    expect(out.changes.map((c) => c.kind)).toEqual(['new_issue']);
    expect(out.issues[0].row).toMatchObject({
      id: null,
      status: 'unresolved',
      event_count: 2,
      first_release: '',
      last_release: '3.0',
    });
    out.issues[0].row.id = 99;
    expect(alertOutboxRows(out)).toEqual([
      {
        project_id: PID,
        type: 'new_issue',
        issue_id: 99,
        payload: JSON.stringify({
          title: 'first',
          fingerprint: 'a'.repeat(32),
          level: 'warning',
          event_count: 2,
          release: '3.0',
          environment: 'production',
          // The issue's first seen: the older of the two events.
          first_seen: first.timestamp - 1,
        }),
        state: 'pending',
        created_at: NOW,
      },
    ]);
  });

  it('takes a new issue id from the snapshot when the database gave one ahead (PostgreSQL)', () => {
    const out = plan(
      [work([event({ fingerprint: 'b'.repeat(32) })])],
      settings(),
      snapshot({ newIssueIds: new Map([['b'.repeat(32), 500]]) }),
    );
    expect(issueChangeRows(out)).toMatchObject([{ issue_id: 500, kind: 'new_issue' }]);
  });

  it('records a regression with the release that caused it', () => {
    const out = plan([work([event({ release: '2.0' })])], settings(), resolvedSnapshot());
    const [row] = alertOutboxRows(out);
    expect(row).toMatchObject({ type: 'regression', issue_id: 41, created_at: NOW });
    expect(JSON.parse(String(row.payload))).toMatchObject({
      release: '2.0',
      event_count: 11,
      first_seen: NOW - 10 * DAY_MS,
    });
  });

  it('records nothing for events of a known unresolved issue', () => {
    const out = plan([work([event()])], settings(), snapshot({ issues: [issue()] }));
    expect(alertOutboxRows(out)).toEqual([]);
  });
});

describe('stored events', () => {
  it('links first/last_seen_id by event time once ids are known, and names the stored row on its seen row', () => {
    const late = event({ timestamp: NOW - 10 });
    const early = event({ timestamp: NOW - 20 });
    const out = plan([work([late, early])]);
    out.stored.forEach((s, i) => (s.id = 100 + i));
    linkStoredEvents(out);
    expect(out.issues[0].row).toMatchObject({ first_seen_id: 101, last_seen_id: 100 });
    expect(out.seen.map((s) => s.stored_id)).toEqual([100, 101]);
  });

  it('on equal event times, takes the later arrival as the latest', () => {
    const snap = snapshot({ issues: [issue({ last_seen: NOW - 10, last_ts: NOW - 10, last_release: '1.0' })] });
    const first = event({ timestamp: NOW - 10, release: '2.0' });
    const second = event({ timestamp: NOW - 10, release: '3.0' });
    const out = plan([work([first, second])], settings(), snap);
    expect(out.issues[0].row.last_release).toBe('3.0');
    out.stored.forEach((s, i) => (s.id = 100 + i));
    linkStoredEvents(out);
    expect(out.issues[0].row.last_seen_id).toBe(101);
  });

  it('drops the works of a project that no longer exists', () => {
    const out = planBatch([work([event()], { projectId: 8 })], { projects: new Map(), snapshots: new Map() }, never);
    expect(out.counts.dropped).toBe(1);
    expect(out.outcomes).toEqual([{ kind: 'ok' }]);
    expect(out.seen).toEqual([]);
  });
});
