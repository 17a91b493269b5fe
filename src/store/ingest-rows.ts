// What the SQLite and PostgreSQL ingest batches (sqlite.ts, postgres.ts) share: the
// options and answer of a batch, the column lists of the tables a batch writes, the
// rows built from the planner's write set (src/store/write-set.ts), and the writes that
// are the same on every database as data (aggregateWrites), which each dialect module
// turns into its own statements. Web APIs only.
import type {
  CompiledQuery,
  Compilable,
  Insertable,
  Kysely,
  OnConflictBuilder,
  OnConflictDoNothingBuilder,
  OnConflictUpdateBuilder,
} from 'kysely';
import { LEVELS } from './records.js';
import {
  issueChangeRows,
  issueEnvironmentHourlyRows,
  issueHourlyRows,
  issueReleaseRows,
  rawSource,
  type EventInput,
  type IngestOutcome,
  type IngestPlanner,
  type PlannedEvent,
  type PlannedIssueRow,
  type Random,
  type WriteCounts,
  type WriteSet,
} from './write-set.js';
import {
  packPayloads,
  type CompressBlob,
  type PackedChunk,
  type PackedPayloads,
  type PayloadSlot,
} from './payloads.js';
import type { Database, EventTable } from './schema.js';
import { type ColumnName, type ColumnSpec, pgColumns } from './tables.js';

/**
 * What new rows hold in `events.detail`: nothing. The detail is rebuilt from the raw
 * payload when asked for (src/read/events.ts), which spares ingest a JSON encoding and a
 * second compression per event and halves what each event writes. Rows written before
 * keep their encoded detail.
 */
const NO_DETAIL = new Uint8Array(0);
/** What new rows hold in `events.raw`: nothing; the payload is in `payload_chunk` (src/store/payloads.ts). */
const NO_RAW = NO_DETAIL;

export interface BatchOptions {
  /** The ingest rules (src/ingest/plan.ts ingestPlanner), which the edition's writer passes in. */
  planner: IngestPlanner;
  /** Uniform draws in [0, 1) for sampling. */
  random: Random;
  /** The edition's blob codec, for the payload chunks (Node: src/editions/node/codec.ts). */
  compress: CompressBlob;
}

/** A transaction's answer: the planner's outcomes and counts, and the events stored. */
export interface BatchResult extends WriteCounts {
  /** One per work, in order. */
  outcomes: IngestOutcome[];
  stored: number;
  /**
   * Set on the answer of a request the batch thread merged into another request's
   * transaction: that request's answer carries the transaction's counts.
   */
  merged?: boolean;
}

/** The answer of a batch the planner planned as `plan`. */
export function batchResult(plan: WriteSet): BatchResult {
  return { outcomes: plan.outcomes, ...plan.counts, stored: plan.stored.length };
}

/** Runs a compiled query on the batch's connection; resolves to its rows. */
export type Send = (query: CompiledQuery) => Promise<Record<string, unknown>[]>;

export function num(value: unknown): number {
  return Number(value);
}

/** The stored events' payloads compressed into chunks (src/store/payloads.ts); `members` index plan.stored. */
export function packStoredPayloads(plan: WriteSet, compress: CompressBlob): PackedPayloads {
  return packPayloads(
    plan.stored.map((s) => ({ projectId: s.projectId, receivedAt: s.receivedAt, payload: rawSource(s.input) })),
    compress,
  );
}

/**
 * Compiles a statement kept as a text for reuse (insertText in sqlite.ts,
 * pgWriteTemplate in postgres.ts): it must take exactly the row values as parameters,
 * so its conflict clause takes none.
 */
export function compileTakingOnly(query: Compilable, parameters: number, what: string): CompiledQuery {
  const compiled = query.compile();
  if (compiled.parameters.length !== parameters)
    throw new Error(
      `${what}: takes ${compiled.parameters.length} parameters, not ${parameters} (the conflict clause must take none)`,
    );
  return compiled;
}

/** Column names with their PostgreSQL array element type, in insert order (src/store/tables.ts pgColumns). */
export type { ColumnSpec };

/**
 * The connection as a builder of inserts into a table named at run time, for the
 * statements ingest compiles once per table and shape from a ColumnSpec (insertText in
 * sqlite.ts, insertRows in postgres.ts). The one untyped Kysely of the store's queries:
 * the table and its columns are values there, which Kysely's types cannot follow; the
 * ColumnSpecs come from the tables' descriptors (pgColumns), so the names are checked there.
 */
export function anyTableInserts(db: Kysely<Database>): Kysely<any> {
  return db as unknown as Kysely<any>;
}

/** An ON CONFLICT clause a write takes (it binds no parameters: see compileTakingOnly). */
export type Conflict = (
  oc: OnConflictBuilder<any, any>,
) => OnConflictUpdateBuilder<any, any> | OnConflictDoNothingBuilder<any, any>;

/** Rows to insert into one table, with what to do on a conflict. */
export interface TableWrite {
  table: keyof Database;
  spec: ColumnSpec;
  rows: Record<string, unknown>[];
  conflict?: Conflict;
}

/** An issue row written back: ingest's columns take the batch's final values. */
export function issueUpsert(oc: OnConflictBuilder<any, any>) {
  return oc
    .columns(['project_id', 'fingerprint'])
    .doUpdateSet(Object.fromEntries(ISSUE_UPDATED.map((c) => [c, (eb: any) => eb.ref(`excluded.${c}`)])));
}

/** The issue columns ingest writes, in the order its rows carry them. */
const ISSUE_WRITTEN = [
  'project_id',
  'fingerprint',
  'title',
  'level',
  'error_type',
  'screen',
  'location',
  'platform',
  'status',
  'event_count',
  'stored_count',
  'users',
  'first_seen',
  'last_seen',
  'first_seen_id',
  'last_seen_id',
  'first_release',
  'last_release',
  'resolved_release',
  'resolved_at',
  'regressed_at',
  'created_at',
  'updated_at',
] as const satisfies readonly ColumnName<'issues'>[];

export const ISSUE_COLUMNS = pgColumns('issues', ISSUE_WRITTEN);

/** Left alone when an issue row is written back: its key, resolved_release/resolved_at and created_at. */
const ISSUE_KEPT: readonly string[] = ['project_id', 'fingerprint', 'resolved_release', 'resolved_at', 'created_at'];

/** What ingest owns in an issue row: the rest of what it writes. */
export const ISSUE_UPDATED = ISSUE_WRITTEN.filter((c) => !ISSUE_KEPT.includes(c));

/**
 * The `events` columns an event's own fields fill (`eventFields`), in table order: the one
 * list that ingest's inserts (with the PostgreSQL array types the table's descriptor gives,
 * EVENT_FIELD_COLUMNS), the D1 batch's JSON fields (src/ingest/d1-commit.ts) and the read
 * API's event summaries take.
 */
export const EVENT_FIELD_NAMES = [
  'event_id',
  'fingerprint',
  'timestamp',
  'received_at',
  'level',
  'platform',
  'release',
  'dist',
  'environment',
  'user_id',
  'user_email',
  'user_username',
  'user_ip',
  'device_id',
  'device_model',
  'os_name',
  'os_version',
  'screen',
  'error_type',
  'error_location',
  'title',
  'message',
  'is_crash',
  'sdk_name',
  'tags',
] as const satisfies readonly ColumnName<'events'>[];
export type EventFieldColumn = (typeof EVENT_FIELD_NAMES)[number];
export const EVENT_FIELD_COLUMNS = pgColumns('events', EVENT_FIELD_NAMES);

export const EVENT_COLUMNS = pgColumns('events', [
  'project_id',
  'issue_id',
  ...EVENT_FIELD_NAMES,
  'detail',
  'raw',
  'payload_chunk',
  'payload_start',
  'payload_length',
  'symbolicated',
]);
export const CHUNK_COLUMNS = pgColumns('payload_chunks', ['project_id', 'received_at', 'data']);
export const CHUNK_COLUMNS_WITH_ID = [...pgColumns('payload_chunks', ['id']), ...CHUNK_COLUMNS];

export const EVENT_COLUMNS_WITH_ID = [...pgColumns('events', ['id']), ...EVENT_COLUMNS];
export const ISSUE_COLUMNS_WITH_ID = [...pgColumns('issues', ['id']), ...ISSUE_COLUMNS];

export const TAG_COLUMNS = pgColumns('event_tags', ['project_id', 'event_id', 'key', 'value']);
export const USER_COLUMNS = pgColumns('issue_users', ['issue_id', 'user_key']);
export const ISSUE_RELEASE_COLUMNS = pgColumns('issue_releases', ['issue_id', 'release', 'first_seen']);
export const ISSUE_HOURLY_COLUMNS = pgColumns('issue_hourly', ['issue_id', 'bucket', 'events']);
export const ISSUE_ENVIRONMENT_HOURLY_COLUMNS = pgColumns('issue_environment_hourly', [
  'issue_id',
  'environment',
  'bucket',
  'events',
]);
export const CHANGE_COLUMNS = pgColumns('issue_changes', ['project_id', 'issue_id', 'kind', 'at', 'release']);
export const OUTBOX_COLUMNS = pgColumns('alert_outbox', [
  'project_id',
  'type',
  'issue_id',
  'payload',
  'state',
  'created_at',
]);
/** project_hourly's counters: events, crashes, errors and one per level. */
const PROJECT_HOURLY_COUNTERS = ['events', 'crashes', 'errors', ...LEVELS] as const;
export const PROJECT_HOURLY_COLUMNS = pgColumns('project_hourly', [
  'project_id',
  'bucket',
  'release',
  ...PROJECT_HOURLY_COUNTERS,
]);
export const RELEASE_COLUMNS = pgColumns('releases', ['project_id', 'release', 'first_seen', 'last_seen', 'platforms']);
export const USAGE_COLUMNS = pgColumns('daily_usage', ['project_id', 'day', 'events']);
export const SEEN_COLUMNS = pgColumns('seen_events', ['project_id', 'event_id', 'received_at', 'stored_id']);
export const SESSION_COLUMNS = pgColumns('sessions', [
  'project_id',
  'sid',
  'did',
  'release',
  'environment',
  'started',
  'status',
  'errors',
  'updated_at',
  'anr',
]);
export const SESSION_HOURLY_COLUMNS = pgColumns('session_hourly', [
  'project_id',
  'release',
  'bucket',
  'total',
  'crashed',
  'errored',
  'anr',
]);

export const SESSION_USER_COLUMNS = pgColumns('session_users', ['project_id', 'release', 'bucket', 'did', 'crashed']);

/** ON CONFLICT (key) DO UPDATE SET c = table.c + excluded.c for each counter. */
export function additive(table: string, key: string[], counters: readonly string[]) {
  return (oc: OnConflictBuilder<any, any>) =>
    oc
      .columns(key)
      .doUpdateSet(
        Object.fromEntries(counters.map((c) => [c, (eb: any) => eb(`${table}.${c}`, '+', eb.ref(`excluded.${c}`))])),
      );
}

export function issueColumns(row: PlannedIssueRow): Record<string, unknown> {
  const { id: _id, ...values } = row;
  return values;
}

export function chunkRow(c: PackedChunk): Record<string, unknown> {
  return { project_id: c.projectId, received_at: c.receivedAt, data: c.data };
}

/** The columns an event's row takes from its input, in column order: every store writes these. */
export function eventFields(e: EventInput, receivedAt: number) {
  // `satisfies`: a column added to EVENT_FIELD_COLUMNS must be filled here too.
  return {
    event_id: e.eventId,
    fingerprint: e.fingerprint,
    timestamp: e.timestamp,
    received_at: receivedAt,
    level: e.level,
    platform: e.platform,
    release: e.release,
    dist: e.dist,
    environment: e.environment,
    user_id: e.userId,
    user_email: e.userEmail,
    user_username: e.userUsername,
    user_ip: e.userIp,
    device_id: e.deviceId,
    device_model: e.deviceModel,
    os_name: e.osName,
    os_version: e.osVersion,
    screen: e.screen,
    error_type: e.errorType,
    error_location: e.location,
    title: e.title,
    message: e.message,
    is_crash: e.isCrash ? 1 : 0,
    sdk_name: e.sdkName,
    tags: e.tagsJson,
  } satisfies Record<EventFieldColumn, unknown>;
}

/** An event's row; its payload is at `slot` of the chunk whose id is `chunkIds[slot.chunk]`. */
export function eventValues(
  s: PlannedEvent,
  chunkIds: number[],
  slot: PayloadSlot,
): Insertable<EventTable> & Record<string, unknown> {
  const e = s.input;
  return {
    project_id: s.projectId,
    issue_id: s.issue.row.id!,
    ...eventFields(e, s.receivedAt),
    // The issue's: an event of a merged fingerprint is stored under the issue it went to.
    fingerprint: s.issue.row.fingerprint,
    detail: NO_DETAIL,
    raw: NO_RAW,
    payload_chunk: chunkIds[slot.chunk],
    payload_start: slot.start,
    payload_length: slot.length,
    symbolicated: e.symbolicated,
  };
}

/**
 * Everything a batch writes after its events and issues, in order: the same rows and
 * conflict clauses on every database.
 */
export function aggregateWrites(plan: WriteSet, planner: IngestPlanner): TableWrite[] {
  return [
    // Only an earlier first time rewrites a known (issue, release) row: nearly every batch
    // names releases its issues already had, and an update that keeps the value still
    // writes a row version and its WAL on PostgreSQL (one per issue and release a batch).
    {
      table: 'issue_releases',
      spec: ISSUE_RELEASE_COLUMNS,
      rows: issueReleaseRows(plan),
      conflict: (oc) =>
        oc
          .columns(['issue_id', 'release'])
          .doUpdateSet({ first_seen: (eb: any) => eb.ref('excluded.first_seen') })
          .where((eb: any) => eb('excluded.first_seen', '<', eb.ref('issue_releases.first_seen'))),
    },
    {
      table: 'issue_hourly',
      spec: ISSUE_HOURLY_COLUMNS,
      rows: issueHourlyRows(plan),
      conflict: additive('issue_hourly', ['issue_id', 'bucket'], ['events']),
    },
    {
      table: 'issue_environment_hourly',
      spec: ISSUE_ENVIRONMENT_HOURLY_COLUMNS,
      rows: issueEnvironmentHourlyRows(plan),
      conflict: additive('issue_environment_hourly', ['issue_id', 'environment', 'bucket'], ['events']),
    },
    { table: 'issue_changes', spec: CHANGE_COLUMNS, rows: issueChangeRows(plan) },
    { table: 'alert_outbox', spec: OUTBOX_COLUMNS, rows: planner.alertOutboxRows(plan) },
    {
      table: 'project_hourly',
      spec: PROJECT_HOURLY_COLUMNS,
      rows: plan.projectHourly as unknown as Record<string, unknown>[],
      conflict: additive('project_hourly', ['project_id', 'bucket', 'release'], PROJECT_HOURLY_COUNTERS),
    },
    {
      table: 'releases',
      spec: RELEASE_COLUMNS,
      rows: plan.releases as unknown as Record<string, unknown>[],
      conflict: (oc) =>
        oc.columns(['project_id', 'release']).doUpdateSet({
          first_seen: (eb: any) => eb.ref('excluded.first_seen'),
          last_seen: (eb: any) => eb.ref('excluded.last_seen'),
          platforms: (eb: any) => eb.ref('excluded.platforms'),
        }),
    },
    {
      table: 'daily_usage',
      spec: USAGE_COLUMNS,
      rows: plan.usage as unknown as Record<string, unknown>[],
      conflict: additive('daily_usage', ['project_id', 'day'], ['events']),
    },
    {
      table: 'seen_events',
      spec: SEEN_COLUMNS,
      rows: plan.seen as unknown as Record<string, unknown>[],
      conflict: (oc) => oc.columns(['project_id', 'event_id']).doNothing(),
    },
    {
      table: 'sessions',
      spec: SESSION_COLUMNS,
      rows: plan.sessions as unknown as Record<string, unknown>[],
      conflict: (oc) =>
        oc.columns(['project_id', 'sid']).doUpdateSet({
          did: (eb: any) => eb.ref('excluded.did'),
          status: (eb: any) => eb.ref('excluded.status'),
          errors: (eb: any) => eb.ref('excluded.errors'),
          updated_at: (eb: any) => eb.ref('excluded.updated_at'),
          anr: (eb: any) => eb.ref('excluded.anr'),
        }),
    },
    {
      table: 'session_hourly',
      spec: SESSION_HOURLY_COLUMNS,
      rows: plan.sessionHourly as unknown as Record<string, unknown>[],
      conflict: additive('session_hourly', ['project_id', 'release', 'bucket'], ['total', 'crashed', 'errored', 'anr']),
    },
    {
      table: 'session_users',
      spec: SESSION_USER_COLUMNS,
      rows: plan.sessionUsers as unknown as Record<string, unknown>[],
      // A user once crashed in that hour stays crashed (CASE: SQLite's max() is PostgreSQL's greatest()).
      conflict: (oc) =>
        oc.columns(['project_id', 'release', 'bucket', 'did']).doUpdateSet({
          crashed: (eb: any) =>
            eb
              .case()
              .when('excluded.crashed', '>', eb.ref('session_users.crashed'))
              .then(eb.ref('excluded.crashed'))
              .else(eb.ref('session_users.crashed'))
              .end(),
        }),
    },
  ];
}
