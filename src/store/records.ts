// The rows of the ingest tables as plain data: the one definition that the store's
// schema (src/store/schema.ts) builds its tables from and that the ingest planner
// (src/ingest/plan.ts) reads and writes; the store owns them, ingest imports them.
// Times are epoch milliseconds.

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
export interface ProjectRecord {
  id: number;
  slug: string;
  name: string;
  platform: string;
  dsn_key: string;
  sample_keep_first: number;
  sample_rate: number;
  daily_quota: number;
  created_at: number;
  /** Scrubbing (src/privacy/scrub.ts): 0/1 flags, JSON lists of key names. */
  scrub_defaults: number;
  scrub_ip_addresses: number;
  scrub_fields: string;
  safe_fields: string;
  /** Past this many MB of stored data, retention removes the oldest events; 0 = no budget. */
  storage_budget_mb: number;
}

/** An issue row as read (the database fills `id`; `last_seen_minute` is the store's own column). */
export interface IssueRecord {
  id: number;
  project_id: number;
  fingerprint: string;
  title: string;
  level: string;
  error_type: string;
  screen: string;
  location: string;
  platform: string;
  status: string;
  event_count: number;
  stored_count: number;
  users: number;
  first_seen: number;
  last_seen: number;
  first_seen_id: number | null;
  last_seen_id: number | null;
  first_release: string;
  last_release: string;
  resolved_release: string | null;
  resolved_at: number | null;
  regressed_at: number | null;
  created_at: number;
  updated_at: number;
  /**
   * A snooze (status `ignored`, docs/api.md "Snoozing"): until a time, or until this
   * many more events or users than `ignored_event_count` / `ignored_users`, the counts
   * when it began. They count only while the status is `ignored`.
   */
  ignore_until: number | null;
  ignore_count: number | null;
  ignore_users: number | null;
  ignored_event_count: number | null;
  ignored_users: number | null;
  assignee_id: number | null;
}

/**
 * Every accepted event_id per project (stored or sampled out): makes resends idempotent,
 * and finds a stored event by its event_id (`stored_id`).
 */
export interface SeenEventRecord {
  project_id: number;
  event_id: string;
  received_at: number;
  /** The `events.id` of the stored event; null when sampling dropped it. */
  stored_id: number | null;
}

export interface ProjectHourlyRecord {
  project_id: number;
  bucket: number;
  release: string;
  events: number;
  crashes: number;
  errors: number;
  fatal: number;
  error: number;
  warning: number;
  info: number;
  debug: number;
}

export interface ReleaseRecord {
  project_id: number;
  release: string;
  first_seen: number;
  last_seen: number;
  /** JSON array of platform names (releasePlatforms reads it). */
  platforms: string;
}

/** The platform names of a release row's `platforms`; none when it is not a JSON array. */
export function releasePlatforms(json: string): string[] {
  try {
    const v = JSON.parse(json);
    return Array.isArray(v) ? v.filter((p): p is string => typeof p === 'string') : [];
  } catch {
    return [];
  }
}

export interface DailyUsageRecord {
  project_id: number;
  day: number;
  events: number;
}

export interface SessionRecord {
  project_id: number;
  sid: string;
  did: string | null;
  release: string;
  environment: string;
  started: number;
  status: string;
  errors: number;
  updated_at: number;
  /** 1 when the session ended in an ANR (`abnormal_mechanism` `anr_…`); the column's default is 0. */
  anr?: number;
}

/**
 * A user (session `did`) of a release in one hour of session starts, and whether one of
 * those sessions crashed: the aggregate crash-free users are counted from (distinct users
 * cannot be summed from hourly totals). Kept as long as session_hourly.
 */
export interface SessionUserRecord {
  project_id: number;
  release: string;
  bucket: number;
  did: string;
  crashed: number;
}

export interface SessionHourlyRecord {
  project_id: number;
  release: string;
  bucket: number;
  total: number;
  crashed: number;
  errored: number;
  /** Sessions that ended in an ANR (the ANR rate's numerator); the column's default is 0. */
  anr?: number;
}
