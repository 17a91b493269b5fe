// The rows of the ingest tables as plain data, which the ingest planner
// (src/ingest/plan.ts) reads and writes: the store owns them, ingest imports them. The
// table rows derive from the tables' descriptors (src/store/tables.ts) through the
// schema's types (src/store/schema.ts). Times are epoch milliseconds.
import type { Selectable } from 'kysely';
import type {
  DailyUsageTable,
  IssueTable,
  ProjectHourlyTable,
  ProjectTable,
  ReleaseTable,
  SeenEventTable,
  SessionHourlyTable,
  SessionTable,
  SessionUserTable,
} from './schema.js';

/** Event levels, most severe first (the `level` column and project_hourly's counters). */
export const LEVELS = ['fatal', 'error', 'warning', 'info', 'debug'] as const;
export type Level = (typeof LEVELS)[number];

/**
 * An event's fields as its row holds them, named as normalisation names them
 * (src/ingest/types.ts NormalizedEvent adds tags, payload and symbolication): the
 * columns each maps to are in src/store/ingest-rows.ts eventFields.
 */
export interface EventRowFields {
  eventId: string; // 32 lowercase hex
  timestamp: number; // epoch ms
  level: Level;
  platform: string;
  release: string; // '' when none
  dist: string;
  environment: string;
  userId: string | null;
  userEmail: string | null;
  userUsername: string | null;
  userIp: string | null;
  /** Identity for the issue's distinct-users count: id, else email, else username, else ip. */
  userKey: string | null;
  deviceId: string | null;
  deviceModel: string | null;
  osName: string | null;
  osVersion: string | null;
  screen: string; // transaction
  title: string;
  message: string;
  errorType: string;
  location: string; // error_location
  isCrash: boolean;
  sdkName: string;
  /** Grouping hash, 32 lowercase hex. */
  fingerprint: string;
}

/** A project row as read (the database fills `id`). */
export type ProjectRecord = Selectable<ProjectTable>;

/** An issue row as read (the database fills `id`; `last_seen_minute` is the store's own column). */
export type IssueRecord = Omit<Selectable<IssueTable>, 'last_seen_minute'>;

/**
 * Every accepted event_id per project (stored or sampled out): makes resends idempotent,
 * and finds a stored event by its event_id (`stored_id`).
 */
export type SeenEventRecord = Selectable<SeenEventTable>;

export type ProjectHourlyRecord = Selectable<ProjectHourlyTable>;

export type ReleaseRecord = Selectable<ReleaseTable>;

/** The platform names of a release row's `platforms`; none when it is not a JSON array. */
export function releasePlatforms(json: string): string[] {
  try {
    const v = JSON.parse(json);
    return Array.isArray(v) ? v.filter((p): p is string => typeof p === 'string') : [];
  } catch {
    return [];
  }
}

export type DailyUsageRecord = Selectable<DailyUsageTable>;

/** A session row as ingest writes it (`anr` left out is the column's default, 0). */
export type SessionRecord = Omit<Selectable<SessionTable>, 'anr'> & Partial<Pick<Selectable<SessionTable>, 'anr'>>;

/**
 * A user (session `did`) of a release in one hour of session starts, and whether one of
 * those sessions crashed: the aggregate crash-free users are counted from.
 */
export type SessionUserRecord = Selectable<SessionUserTable>;

/** Sessions per release and hour of start, as ingest writes them (`anr` left out is 0). */
export type SessionHourlyRecord = Omit<Selectable<SessionHourlyTable>, 'anr'> &
  Partial<Pick<Selectable<SessionHourlyTable>, 'anr'>>;
