// The row-shaped side of an ingest batch, which the store owns: a prepared work (every
// field checked and clamped so the database accepts the row, src/ingest/prepare.ts
// makes them), the snapshot a batch reads for it, the write set the planner
// (src/ingest/plan.ts) returns, the rows built from a write set once the database
// assigned its ids, and `IngestPlanner`, the rules a batch is handed: the store runs
// them and never imports them. Web APIs only.
import type {
  EventRowFields,
  IssueRecord,
  DailyUsageRecord,
  ProjectHourlyRecord,
  ProjectRecord,
  ReleaseRecord,
  SeenEventRecord,
  SessionHourlyRecord,
  SessionUserRecord,
  SessionRecord,
} from './records.js';

// ---------------------------------------------------------------------------
// A work in row shape
// ---------------------------------------------------------------------------

/** An event in the shape of its row, checked so that the database accepts it. */
export type EventInput = EventRowFields & {
  /** What was received: the payload exactly as received, which the batch stores in a payload chunk. */
  source: { raw?: Uint8Array };
  /** Distinct keys, clamped, in the payload's order. */
  tags: [string, string][];
  tagsJson: string;
  /** JSON of the frames symbolicated at ingest (NormalizedEvent.symbolicated), else null. */
  symbolicated: string | null;
};

/** A session update in row shape: `anr` as the 0/1 the tables hold. */
export interface SessionInput {
  sid: string;
  did: string | null;
  started: number;
  timestamp: number;
  status: SessionStatus;
  errors: number;
  release: string;
  environment: string;
  anr: number;
}

export type SessionStatus = 'ok' | 'exited' | 'crashed' | 'abnormal' | 'errored' | 'unhandled';

export interface AggregateInput {
  started: number;
  release: string;
  total: number;
  crashed: number;
  errored: number;
}

export interface PreparedWork {
  projectId: number;
  receivedAt: number;
  events: EventInput[];
  sessions: SessionInput[];
  aggregates: AggregateInput[];
}

/** The payload as received, which the batch stores in a payload chunk. */
export function rawSource(e: EventInput): Uint8Array {
  return e.source.raw ?? new Uint8Array(0);
}

/** A work's answer: committed, or refused whole by the daily quota. */
export type IngestOutcome = { kind: 'ok' } | { kind: 'quota_exceeded'; retryAfterSeconds: number };

/** Uniform draws in [0, 1), for sampling. */
export type Random = () => number;

/**
 * The ingest rules a batch runs (src/ingest/plan.ts `ingestPlanner`), handed to the
 * store's batch by the edition's writer: the keys to read, the plan, and the alert
 * outbox rows of the plan's changes once their issues have ids.
 */
export interface IngestPlanner {
  batchKeys(works: PreparedWork[]): ProjectKeys[];
  planBatch(works: PreparedWork[], snapshot: BatchSnapshot, random: Random): WriteSet;
  alertOutboxRows(plan: WriteSet): Record<string, unknown>[];
}

// ---------------------------------------------------------------------------
// The snapshot: what the batch reads before planning
// ---------------------------------------------------------------------------

/** A project's ingest settings, read fresh under its lock. */
export type ProjectSettings = Pick<ProjectRecord, 'id' | 'sample_keep_first' | 'sample_rate' | 'daily_quota'>;

/** The keys one project's works touch: what the store reads for it. */
export interface ProjectKeys {
  projectId: number;
  eventIds: string[];
  /** UTC days of the works that carry events (the daily quota). */
  days: number[];
  /** Sorted: PostgreSQL locks the issues in this order. */
  fingerprints: string[];
  releases: string[];
  sids: string[];
  /** The events' user keys (read only for issues snoozed until a number of users). */
  userKeys: string[];
}

/** An issue row with the event times behind first_seen_id / last_seen_id (null: that event is gone). */
export type IssueWithTimes = IssueRecord & { first_ts: number | null; last_ts: number | null };

/** What the database holds for one project's keys. */
export interface ProjectSnapshot {
  /** Event ids of the batch the project has seen before. */
  seen: Set<string>;
  /** PostgreSQL: an id taken from the events sequence for each event id new to the project. */
  eventIds: Map<string, number> | null;
  /** Events counted per UTC day (the daily quota). */
  used: Map<number, number>;
  issues: IssueWithTimes[];
  /**
   * Fingerprints no issue has that were merged into (or mapped to) an issue, with that
   * issue's id; the issue is among `issues` (docs/api.md "Merging issues").
   */
  aliases: Map<string, number>;
  /**
   * For issues snoozed until a number of users (`ignore_users`): the batch's user keys
   * each one has already (the snooze rule counts the new ones; see snoozeEnded).
   */
  knownUsers: Map<number, Set<string>>;
  /** The releases (and when each was first seen) of the issues that are resolved. */
  resolvedReleases: { issue_id: number; release: string; first_seen: number }[];
  /** PostgreSQL: an id taken from the issues sequence for each fingerprint without an issue. */
  newIssueIds: Map<string, number> | null;
  releases: ReleaseRecord[];
  sessions: SessionRecord[];
}

/** A snapshot with nothing in it, for a project whose keys are not read. */
export function emptySnapshot(): ProjectSnapshot {
  return {
    seen: new Set(),
    eventIds: null,
    used: new Map(),
    issues: [],
    aliases: new Map(),
    knownUsers: new Map(),
    resolvedReleases: [],
    newIssueIds: null,
    releases: [],
    sessions: [],
  };
}

export interface BatchSnapshot {
  /** The projects that still exist (a deleted one's works are dropped). */
  projects: Map<number, ProjectSettings>;
  /** What was read for each project, by id; a missing one reads as empty. */
  snapshots: Map<number, ProjectSnapshot>;
}

// ---------------------------------------------------------------------------
// The write set
// ---------------------------------------------------------------------------

/** An issue row as ingest leaves it; `id` is null for a new issue until the store inserts it (SQLite). */
export type PlannedIssueRow = Omit<IssueRecord, 'id'> & { id: number | null };

/** An issue an accepted event reached: its final row and what the batch adds around it. */
export interface PlannedIssue {
  row: PlannedIssueRow;
  /** Releases with the first time seen, loaded only for resolved issues (the regression rule). */
  knownReleases: Map<string, number> | null;
  /** The batch's user keys; `row.users` grows by those new to the issue (the store counts them). */
  userKeys: Set<string>;
  /** The batch's releases with their earliest event time (`issue_releases`). */
  releaseFirstSeen: Map<string, number>;
  /** Events per hour bucket (`issue_hourly`, additive). */
  hourly: Map<number, number>;
  /** Events per environment and hour bucket (`issue_environment_hourly`, additive), keyed `bucket:environment`. */
  environmentHourly: Map<string, { environment: string; bucket: number; events: number }>;
  /** Event times behind first_seen_id / last_seen_id, to compare new stored events with. */
  firstStoredTs: number;
  lastStoredTs: number;
}

/** An event sampling keeps. */
export interface PlannedEvent {
  input: EventInput;
  issue: PlannedIssue;
  projectId: number;
  receivedAt: number;
  /** Known from the snapshot on PostgreSQL; the store fills it in on SQLite. */
  id: number | null;
  /** The event's seen_events row, which names the stored row once `id` is known (linkStoredEvents). */
  seen: SeenEventRecord;
}

/**
 * A `new_issue` or `regression` (an `issue_changes` row and an alert outbox row), or a
 * `snooze_ended` (an `issue_changes` row only).
 */
export interface PlannedChange {
  issue: PlannedIssue;
  kind: 'new_issue' | 'regression' | 'snooze_ended';
  at: number;
  release: string;
  /** The environment of the event that caused it. */
  environment: string;
}

export interface WriteCounts {
  /** Events counted (not duplicates, not refused). */
  accepted: number;
  duplicates: number;
  /** Events of works refused by the daily quota. */
  refused: number;
  /** Events and sessions of works whose project no longer exists. */
  dropped: number;
  sessionUpdates: number;
}

export interface WriteSet {
  /** One per work, in order. */
  outcomes: IngestOutcome[];
  counts: WriteCounts;
  /** Issues an accepted event reached, in the order first reached (upserted with their final values). */
  issues: PlannedIssue[];
  /** Events to store, in order. */
  stored: PlannedEvent[];
  changes: PlannedChange[];
  /** Counters to add. */
  projectHourly: ProjectHourlyRecord[];
  /** Merged with the snapshot's rows: written as they are. */
  releases: ReleaseRecord[];
  /** Counters to add. */
  usage: DailyUsageRecord[];
  /** Every accepted event (insert, or nothing on conflict). */
  seen: SeenEventRecord[];
  /** Sessions changed by the batch, with their final values. */
  sessions: SessionRecord[];
  /** Counter deltas to add (none all zero). */
  sessionHourly: SessionHourlyRecord[];
  /** Users of each release and hour with a session updated in the batch (crashed only grows). */
  sessionUsers: SessionUserRecord[];
}

// ---------------------------------------------------------------------------
// After the ids are known: the rows that name them
// ---------------------------------------------------------------------------

/** The stored events' ids (known by now) on their seen rows, and each issue's first/last_seen_id by event time. */
export function linkStoredEvents(plan: WriteSet): void {
  for (const s of plan.stored) {
    s.seen.stored_id = s.id;
    const issue = s.issue;
    const ts = s.input.timestamp;
    if (ts < issue.firstStoredTs) {
      issue.firstStoredTs = ts;
      issue.row.first_seen_id = s.id;
    }
    if (ts >= issue.lastStoredTs) {
      issue.lastStoredTs = ts;
      issue.row.last_seen_id = s.id;
    }
  }
}

export function tagRows(plan: WriteSet): { project_id: number; event_id: number | null; key: string; value: string }[] {
  const tags: { project_id: number; event_id: number | null; key: string; value: string }[] = [];
  for (const s of plan.stored) {
    for (const [key, value] of s.input.tags) tags.push({ project_id: s.projectId, event_id: s.id, key, value });
  }
  return tags;
}

export function issueUserRows(plan: WriteSet): { issue_id: number | null; user_key: string }[] {
  const users: { issue_id: number | null; user_key: string }[] = [];
  for (const s of plan.issues) for (const key of s.userKeys) users.push({ issue_id: s.row.id, user_key: key });
  return users;
}

export function issueReleaseRows(plan: WriteSet): { issue_id: number | null; release: string; first_seen: number }[] {
  const rows: { issue_id: number | null; release: string; first_seen: number }[] = [];
  for (const s of plan.issues)
    for (const [release, first] of s.releaseFirstSeen) rows.push({ issue_id: s.row.id, release, first_seen: first });
  return rows;
}

export function issueHourlyRows(plan: WriteSet): { issue_id: number | null; bucket: number; events: number }[] {
  const rows: { issue_id: number | null; bucket: number; events: number }[] = [];
  for (const s of plan.issues)
    for (const [bucket, events] of s.hourly) rows.push({ issue_id: s.row.id, bucket, events });
  return rows;
}

export function issueEnvironmentHourlyRows(
  plan: WriteSet,
): { issue_id: number | null; environment: string; bucket: number; events: number }[] {
  const rows: { issue_id: number | null; environment: string; bucket: number; events: number }[] = [];
  for (const s of plan.issues) for (const h of s.environmentHourly.values()) rows.push({ issue_id: s.row.id, ...h });
  return rows;
}

export function issueChangeRows(
  plan: WriteSet,
): { project_id: number; issue_id: number | null; kind: string; at: number; release: string }[] {
  return plan.changes.map((c) => ({
    project_id: c.issue.row.project_id,
    issue_id: c.issue.row.id,
    kind: c.kind,
    at: c.at,
    release: c.release,
  }));
}
