// Store schema: the TypeScript shape of every table, shared by both SQL dialects.
// Times are epoch milliseconds (integers) in every dialect, so queries and
// aggregates never depend on a database's date functions. Booleans are 0/1.
import type { ColumnType, Generated, GeneratedAlways, Insertable, Selectable } from 'kysely';
import type {
  DailyUsageRecord,
  IssueRecord,
  ProjectHourlyRecord,
  ProjectRecord,
  ReleaseRecord,
  SeenEventRecord,
  SessionHourlyRecord,
  SessionUserRecord,
  SessionRecord,
} from './records.js';

type ProjectDefaults = 'scrub_defaults' | 'scrub_ip_addresses' | 'scrub_fields' | 'safe_fields' | 'storage_budget_mb';

export interface ProjectTable extends Omit<ProjectRecord, 'id' | ProjectDefaults> {
  id: Generated<number>;
  scrub_defaults: Generated<number>;
  scrub_ip_addresses: Generated<number>;
  scrub_fields: Generated<string>;
  safe_fields: Generated<string>;
  storage_budget_mb: Generated<number>;
}

/** The step of issues.last_seen_minute (migration 010 computes it in SQL with this value). */
export const LAST_SEEN_MINUTE_MS = 60_000;

export interface IssueTable extends Omit<IssueRecord, 'id'> {
  id: Generated<number>;
  /** The minute of last_seen, computed by the database: the issues list's index (migration 010). */
  last_seen_minute: GeneratedAlways<number>;
}

/** Releases an issue has been seen on, with the first time: decides regressions. */
export interface IssueReleaseTable {
  issue_id: number;
  release: string;
  first_seen: number;
}

/** Distinct user keys per issue, so `users` is exact. */
export interface IssueUserTable {
  issue_id: number;
  user_key: string;
}

export interface IssueHourlyTable {
  issue_id: number;
  bucket: number;
  events: number;
}

/**
 * An issue's activity (src/triage/activity.ts): what ingest changed (new issue,
 * regression, snooze ended: no actor, no data), status changes, comments, merges.
 * Overview and alerts read the regressions.
 */
export interface IssueChangeTable {
  id: Generated<number>;
  project_id: number;
  issue_id: number;
  kind: string;
  at: number;
  release: string;
  /** Who did it (a user's email, "api key <8 hex>", "anonymous"); null for the service. */
  actor: string | null;
  actor_user_id: number | null;
  /** JSON: a status change's from/to, a comment's text, the fingerprints merged. */
  data: string | null;
}

/** Events per issue, environment and hour: the issues list's environment filter. */
export interface IssueEnvironmentHourlyTable {
  issue_id: number;
  environment: string;
  bucket: number;
  events: number;
}

/**
 * A fingerprint whose events go to another issue: merged into it (its own issue is gone),
 * or mapped to it by re-symbolication. Never the fingerprint of an existing issue.
 */
export interface IssueMergeTable {
  project_id: number;
  fingerprint: string;
  issue_id: number;
  merged_at: number;
}

export interface EventTable {
  id: Generated<number>;
  project_id: number;
  issue_id: number;
  event_id: string;
  fingerprint: string;
  timestamp: number;
  received_at: number;
  level: string;
  platform: string;
  release: string;
  dist: string;
  environment: string;
  user_id: string | null;
  user_email: string | null;
  user_username: string | null;
  user_ip: string | null;
  device_id: string | null;
  device_model: string | null;
  os_name: string | null;
  os_version: string | null;
  screen: string;
  error_type: string;
  error_location: string;
  title: string;
  message: string;
  is_crash: number;
  sdk_name: string;
  /** JSON object of tag key -> value. */
  tags: string;
  /** Compressed JSON of the normalised detail (exception chain, breadcrumbs, contexts, ...). */
  detail: Uint8Array;
  /**
   * Compressed raw payload exactly as received, for rows written before migration 008;
   * empty when the payload is in `payload_chunk` (src/store/payloads.ts).
   */
  raw: Uint8Array;
  /** The `payload_chunks` row holding the raw payload, at `payload_start` for `payload_length` bytes once decompressed. */
  payload_chunk: number | null;
  payload_start: number | null;
  payload_length: number | null;
  /** JSON of symbolicated frames, set by symbolication; null until then. */
  symbolicated: string | null;
}

/** Raw payloads of one batch and project, compressed together (src/store/payloads.ts). */
export interface PayloadChunkTable {
  id: Generated<number>;
  project_id: number;
  /** The newest `received_at` of the events whose payloads it holds. */
  received_at: number;
  /** A codec blob (src/editions/node/codec.ts) of the payloads one after another; empty when `r2_key` names it. */
  data: Uint8Array;
  /** The object holding the blob in the edition's bucket (src/store/blobs.ts), or null when `data` holds it. */
  r2_key: ColumnType<string | null, string | null | undefined, string | null>;
  /** The object's length when `r2_key` names it (storage_usage counts it), else null. */
  object_bytes: ColumnType<number | null, number | null | undefined, number | null>;
}

export interface EventTagTable {
  project_id: number;
  event_id: number;
  key: string;
  value: string;
}

export type SeenEventTable = SeenEventRecord;

export type ProjectHourlyTable = ProjectHourlyRecord;

/**
 * The releases events and sessions reveal, upserted by every ingest batch (first and last
 * seen, platforms). What sentry-cli creates stays in `cli_releases`: src/uploads/releases.ts
 * says why the two are not one table.
 */
export type ReleaseTable = ReleaseRecord;

export type DailyUsageTable = DailyUsageRecord;

export type SessionTable = SessionRecord;

export type SessionHourlyTable = SessionHourlyRecord;
export type SessionUserTable = SessionUserRecord;

export interface RateLimitWindowTable {
  key: string;
  window_start: number;
  /** Requests of this window handed out to instances so far (may pass the limit by the last lease). */
  claimed: number;
}

/** A lease on a background job, so one run at a time holds across processes (retention on SQLite). */
export interface JobLockTable {
  name: string;
  /** Who holds it: host, process id and a random part. */
  holder: string;
  /** Epoch ms (wall clock) after which another run may take it over. */
  expires_at: number;
}

/** One per project and alert type (src/alerts). */
export interface AlertRuleTable {
  project_id: number;
  type: string;
  /** 0 or 1. */
  enabled: number;
  cooldown_minutes: number;
  /** When the last alert of this type was claimed (the cooldown's start); null before the first. */
  last_triggered: number | null;
  /** JSON list of environments the rule fires for; empty for all. */
  environments: Generated<string>;
  /** The lowest event level the rule fires for; null for all. */
  min_level: string | null;
  /** JSON list of the channel ids the rule sends to; empty for all of the project's. */
  channels: Generated<string>;
}

export interface AlertChannelTable {
  id: Generated<number>;
  project_id: number;
  /** webhook, telegram, email, slack, discord or teams (src/alerts/rules.ts CHANNEL_KINDS). */
  kind: string;
  /** JSON: webhook {url, secret?}, telegram {chat_id}. */
  config: string;
  created_at: number;
}

/**
 * Alerts recorded before they are sent: by the ingest batch (new_issue, regression) and
 * the crash-spike check, in the transaction that found them. `state` pending until a
 * dispatcher takes it: sent (deliveries made, cooldown claimed), held (inside the
 * cooldown, waiting for the digest), digested (sent in the digest `digest_id`), filtered
 * (the rule's filters let it not through), disabled, no_channel, undelivered (no channel
 * accepted it; the cooldown was given back).
 */
export interface AlertOutboxTable {
  id: Generated<number>;
  project_id: number;
  type: string;
  issue_id: number | null;
  /** JSON: the alert's fields (title, fingerprint, level, event_count, release, recent, baseline). */
  payload: string;
  state: string;
  created_at: number;
  /** The cooldown claimed for this alert, and the value it replaced (to give it back). */
  triggered_at: number | null;
  prev_triggered: number | null;
  /** The digest (an outbox row of the same type) that sent this held-back alert. */
  digest_id: Generated<number | null>;
}

/** One alert (or test) sent to one channel. */
export interface AlertDeliveryTable {
  id: Generated<number>;
  project_id: number;
  /** The outbox row; null for test deliveries. */
  alert_id: number | null;
  channel_id: number;
  type: string;
  /** pending, sent or failed. */
  state: string;
  attempts: number;
  last_error: string | null;
  /** The channel's last HTTP status. */
  status: number | null;
  created_at: number;
  sent_at: number | null;
  /** Wall clock: when the next attempt is due. */
  next_attempt_at: number;
  /** Wall clock: while an attempt is under way, the process in `claimed_by` owns the row until then. */
  lease_until: number | null;
  claimed_by: string | null;
}

/** A stored symbol file (src/symbols/storage.ts). */
export interface SymbolFileTable {
  id: Generated<number>;
  project_id: number;
  /** proguard, sourcemap or dsym. */
  kind: string;
  /** `writing` while its chunks stream in (never listed or matched), then `ready`. */
  state: string;
  release: string;
  dist: string;
  /** Lowercase dashed UUID, or '' when the file has none. */
  debug_id: string;
  filename: string;
  /** Source maps: the minified file the map serves (its `file`, or the name without `.map`); else ''. */
  serves: string;
  /** The basename of `serves`, what release matching looks up by. */
  serves_basename: string;
  size: number;
  /** Bytes of the derived lookup index (part 1), 0 when the kind builds none. */
  index_size: number;
  /** JSON object of kind-specific facts (e.g. a dSYM slice's architecture). */
  meta: string;
  uploaded_at: number;
}

/** A symbol file's bytes: part 0 the file, part 1 its derived index; `seq` from 0. */
export interface SymbolChunkTable {
  file_id: number;
  part: number;
  seq: number;
  /** The chunk's bytes; empty when `r2_key` names the object holding them (src/store/blobs.ts). */
  data: Uint8Array;
  r2_key: ColumnType<string | null, string | null | undefined, string | null>;
  /** The object's length when `r2_key` names it (migration 033; null before it or when `data` holds the bytes). */
  object_bytes: ColumnType<number | null, number | null | undefined, number | null>;
}

/** A background re-symbolication run (src/symbols/resymbolicate.ts). */
export interface SymbolJobTable {
  id: Generated<number>;
  project_id: number;
  /** The events' release; '' means every release. */
  release: string;
  /** Events received at or after this time (epoch ms). */
  since: number;
  /** The last event id handled; the run goes on above it. */
  cursor: number;
  /** pending or done. */
  state: string;
  /** Events symbolicated so far. */
  done: number;
  /** Epoch ms (wall clock) until which an instance holds the run. */
  lease_until: number;
  created_at: number;
}

/** A chunk of a sentry-cli upload (src/uploads), by the SHA-1 of its bytes. */
export interface UploadChunkTable {
  sha1: string;
  size: number;
  /** The chunk's bytes; empty when `r2_key` names the object holding them (src/store/blobs.ts). */
  data: Uint8Array;
  r2_key: ColumnType<string | null, string | null | undefined, string | null>;
  /** Epoch ms of the (last) upload; chunks older than an hour are gone. */
  created_at: number;
  /** The chunk-upload request still writing it (invisible); null once that request succeeded. */
  batch: string | null;
}

/** The outcome of assembling one uploaded file for a project (src/uploads). */
export interface UploadAssemblyTable {
  project_id: number;
  /** `dif` (difs/assemble) or `artifact_bundle`. */
  kind: string;
  /** SHA-1 of the whole file. */
  checksum: string;
  /** assembling, ok, error */
  state: string;
  detail: string | null;
  /** JSON of what was stored (the `dif` answer), when ok. */
  result: string | null;
  updated_at: number;
}

/**
 * A release created or updated by sentry-cli (`releases new|finalize`): url and dates only
 * the CLI says, apart from `releases`, which ingest upserts in every batch (the reason is
 * in src/uploads/releases.ts). The releases API shows both side by side.
 */
export interface CliReleaseTable {
  project_id: number;
  version: string;
  url: string | null;
  date_created: number;
  date_started: number | null;
  date_released: number | null;
}

/** A commit of a CLI release (`releases set-commits`), kept in the order sent (`position`). */
export interface ReleaseCommitTable {
  project_id: number;
  version: string;
  repository: string;
  commit_id: string;
  position: number;
  message: string | null;
  author_name: string | null;
  author_email: string | null;
  /** The commit's time, epoch ms, when sent. */
  date: number | null;
}

/** A deploy of a CLI release (`deploys new`); one id for every project row of the deploy. */
export interface ReleaseDeployTable {
  project_id: number;
  deploy_id: string;
  version: string;
  environment: string;
  name: string | null;
  url: string | null;
  date_started: number | null;
  date_finished: number;
}

/**
 * A ProGuard mapping associated with a release by the build plugins (sentry-cli
 * `upload-proguard --app-id --version`). A pair table, not a column of the mapping's
 * symbol file or of `cli_releases`: one mapping serves several releases (build variants
 * share it) and a release several mappings, while a symbol file has one release (its
 * replacement rule and matching by release read it). Kept to answer a repeated association
 * 409 as Sentry does; symbolication never reads it (events name their mapping by debug id).
 */
export interface ProguardReleaseTable {
  project_id: number;
  release: string;
  proguard_uuid: string;
  created_at: number;
}

/** A queue message the serverless edition's consumer committed (migration 020). */
export interface IngestReceiptTable {
  message_id: string;
  committed_at: number;
}

/** Accounts (src/accounts). Emails are stored normalised (trimmed, lower case). */
export interface UserTable {
  id: Generated<number>;
  email: string;
  name: string;
  /** viewer, member or admin. */
  role: string;
  /** 1 when disabled: no sign-in, tokens and sessions refused. */
  disabled: Generated<number>;
  /** The KDF's self-describing hash (src/accounts/password.ts); null until a password is set. */
  password_hash: string | null;
  created_at: number;
  last_login_at: number | null;
}

/** Personal API tokens: only the SHA-256 of the token is kept. */
export interface PersonalTokenTable {
  id: Generated<number>;
  user_id: number;
  name: string;
  token_hash: string;
  created_at: number;
  expires_at: number | null;
  last_used_at: number | null;
}

/** Dashboard sessions, keyed by the SHA-256 of the cookie's session id. */
export interface UserSessionTable {
  id_hash: string;
  /** The signed-in user, or null for an API-key sign-in (allowed while no user exists). */
  user_id: number | null;
  /** For an API-key sign-in: the first 16 hex digits of the key's SHA-256. */
  api_key_id: string | null;
  created_at: number;
  last_seen_at: number;
  expires_at: number;
  ip: string | null;
  user_agent: string | null;
}

/** One-time links that let an invited user set a password. */
export interface UserInviteTable {
  token_hash: string;
  user_id: number;
  created_at: number;
  expires_at: number;
}

/** Setup tokens `serve` logs while no user exists; any instance accepts them. */
export interface SetupTokenTable {
  token_hash: string;
  created_at: number;
}

export interface AuditLogTable {
  id: Generated<number>;
  /** Random, unique: the entry's key in export files. */
  uid: string;
  at: number;
  actor: string;
  action: string;
  target: string | null;
  /** JSON object. */
  details: string;
  ip: string | null;
}

/** A file sent with an event (src/attachments); its bytes are in `attachment_chunks`. */
export interface AttachmentTable {
  id: Generated<number>;
  project_id: number;
  /** The event's `event_id` (32 lowercase hex). */
  event_id: string;
  /** MD5 of the name and bytes: a resent file is stored once. */
  digest: string;
  name: string;
  content_type: string;
  /** `event.attachment`, `event.view_hierarchy`, `event.minidump`, `event.applecrashreport`. */
  attachment_type: string;
  size: number;
  /** The event's receive time (retention removes both together). */
  received_at: number;
}

export interface AttachmentChunkTable {
  attachment_id: number;
  seq: number;
  /** The chunk's bytes; empty when `r2_key` names the object holding them. */
  data: Uint8Array;
  /** The object holding the bytes in the edition's bucket (src/store/blobs.ts), or null. */
  r2_key: ColumnType<string | null, string | null | undefined, string | null>;
}

/** SSO sign-ins under way (src/accounts/oidc.ts): one row per state, used once. */
export interface SsoStateTable {
  state_hash: string;
  nonce: string;
  code_verifier: string;
  /** Where to go after signing in. */
  next: string;
  created_at: number;
}

/** A cron monitor (src/monitors), created or updated by a check-in's monitor_config. */
export interface MonitorTable {
  id: Generated<number>;
  project_id: number;
  slug: string;
  /** crontab or interval */
  schedule_type: string;
  /** The crontab, or the interval's number of units. */
  schedule: string;
  /** The interval's unit (minute, hour, day, week, month, year); null for a crontab. */
  schedule_unit: string | null;
  timezone: string;
  /** Minutes. */
  checkin_margin: number;
  /** Minutes. */
  max_runtime: number;
  failure_issue_threshold: number;
  recovery_threshold: number;
  enabled: number;
  /** ok or failing */
  health: string;
  /** Failures in a row; check-ins ok in a row while failing. */
  failures: number;
  successes: number;
  /** The last check-in's status (ok, error, in_progress, missed, timeout). */
  last_status: string | null;
  last_checkin_at: number | null;
  next_expected_at: number | null;
  /** next_expected_at plus the margin: a monitor is missed once this passes. */
  deadline_at: number | null;
  /** Every state change adds one; writes are conditional on it. */
  version: number;
  /** The token of the write that last changed the row (what its other statements check). */
  claim: string | null;
  created_at: number;
  updated_at: number;
}

/** One check-in of a monitor, as received or as the check recorded it (missed, timeout). */
export interface MonitorCheckinTable {
  id: Generated<number>;
  project_id: number;
  monitor_id: number;
  check_in_id: string;
  /** ok, error, in_progress, missed, timeout */
  status: string;
  environment: string | null;
  release: string | null;
  duration_ms: number | null;
  created_at: number;
  updated_at: number;
  /** For an in-progress check-in: when it times out. */
  timeout_at: number | null;
}

/**
 * Stored bytes per project, kind and hour, kept by triggers (migration 021): `payloads`
 * counts payload chunks and their compressed bytes by the chunk's `received_at`.
 */
export interface StorageUsageTable {
  project_id: number;
  kind: string;
  bucket: number;
  count: number;
  bytes: number;
}

/** A user's feedback (src/feedback), linked to its event by `event_id` when read. */
export interface UserFeedbackTable {
  id: Generated<number>;
  project_id: number;
  /** SHA-1 of what it says: a resend is stored once. */
  digest: string;
  /** The event it is about; '' when it names none. */
  event_id: string;
  name: string;
  email: string;
  comments: string;
  url: string;
  /** `user_report`, `feedback` or `api`. */
  source: string;
  created_at: number;
  received_at: number;
}

export interface Database {
  projects: ProjectTable;
  issues: IssueTable;
  issue_releases: IssueReleaseTable;
  issue_users: IssueUserTable;
  issue_hourly: IssueHourlyTable;
  issue_changes: IssueChangeTable;
  issue_environment_hourly: IssueEnvironmentHourlyTable;
  issue_merges: IssueMergeTable;
  events: EventTable;
  event_tags: EventTagTable;
  payload_chunks: PayloadChunkTable;
  seen_events: SeenEventTable;
  project_hourly: ProjectHourlyTable;
  releases: ReleaseTable;
  daily_usage: DailyUsageTable;
  sessions: SessionTable;
  session_hourly: SessionHourlyTable;
  session_users: SessionUserTable;
  rate_limit_windows: RateLimitWindowTable;
  job_locks: JobLockTable;
  alert_rules: AlertRuleTable;
  alert_channels: AlertChannelTable;
  alert_outbox: AlertOutboxTable;
  alert_deliveries: AlertDeliveryTable;
  upload_chunks: UploadChunkTable;
  upload_assemblies: UploadAssemblyTable;
  cli_releases: CliReleaseTable;
  proguard_releases: ProguardReleaseTable;
  release_commits: ReleaseCommitTable;
  release_deploys: ReleaseDeployTable;
  symbol_files: SymbolFileTable;
  symbol_chunks: SymbolChunkTable;
  symbol_jobs: SymbolJobTable;
  ingest_receipts: IngestReceiptTable;
  users: UserTable;
  personal_tokens: PersonalTokenTable;
  user_sessions: UserSessionTable;
  user_invites: UserInviteTable;
  setup_tokens: SetupTokenTable;
  audit_log: AuditLogTable;
  attachments: AttachmentTable;
  attachment_chunks: AttachmentChunkTable;
  sso_states: SsoStateTable;
  monitors: MonitorTable;
  monitor_checkins: MonitorCheckinTable;
  storage_usage: StorageUsageTable;
  user_feedback: UserFeedbackTable;
}

export type ProjectRow = Selectable<ProjectTable>;
export type NewProject = Insertable<ProjectTable>;
export type IssueRow = Selectable<IssueTable>;
export type EventRow = Selectable<EventTable>;
export type ReleaseRow = Selectable<ReleaseTable>;
export type SessionRow = Selectable<SessionTable>;
