// The tables described once: one descriptor per table, a column name → what it holds
// (kind), whether it may be null, whether the database fills it when an insert leaves it
// out, and how the export file carries it. Everything else that restates a row derives
// from here: the Kysely table types (src/store/schema.ts, mapped types below), the
// PostgreSQL array type of each column ingest writes through `unnest` (pgColumns), and
// the export and import columns of each line type (src/transfer/format.ts lineColumns).
// The DDL stays in the migrations, which keep the SQL of their time;
// test/store/tables.test.ts checks every descriptor against the schema the migrations
// leave on SQLite and PostgreSQL (columns, nullability, kinds, defaults).
//
// Times are epoch milliseconds (integers) in every dialect; booleans are 0/1 integers.
// A table's columns are listed with its exported ones in the order an export line
// carries them. Web APIs only.
import type { Generated, GeneratedAlways } from 'kysely';
import type { PgArrayElement } from './pg-arrays.js';

/** What a column holds: `json` is JSON text, `blob` bytes. */
export type ColumnKind = 'int' | 'real' | 'text' | 'json' | 'blob';

/**
 * How a column travels in an export line (src/transfer/format.ts says how each is
 * checked and converted). The `-added` kinds are columns newer than the format's first
 * files, which leave them out.
 */
export type LineKind =
  | 'int'
  | 'count'
  | 'count?'
  | 'counter-added'
  | 'number'
  | 'text'
  | 'text?'
  | 'time'
  | 'time?'
  | 'bool'
  | 'json'
  | 'json?'
  | 'list'
  | 'text-added'
  | 'count-added'
  | 'time-added'
  | 'bytes';

export interface ColumnDescriptor {
  kind: ColumnKind;
  /** The column may hold NULL. */
  nullable?: true;
  /** The database fills it when an insert leaves it out (an id, a column default, NULL). */
  default?: true;
  /** Computed by the database from other columns; never written. */
  computed?: true;
  /** How an export line carries it; absent when lines do not carry it (ids, parents, local state). */
  line?: LineKind;
  /** The line's field name when it is not the column's. */
  field?: string;
}

export type TableDescriptor = Readonly<Record<string, ColumnDescriptor>>;

export const TABLES = {
  projects: {
    // The project line starts with the slug, its key.
    slug: { kind: 'text', line: 'text' },
    id: { kind: 'int', default: true, line: 'int' },
    dsn_key: { kind: 'text', line: 'text' },
    name: { kind: 'text', line: 'text' },
    platform: { kind: 'text', line: 'text' },
    sample_keep_first: { kind: 'int', line: 'int' },
    sample_rate: { kind: 'real', line: 'number' },
    daily_quota: { kind: 'int', line: 'int' },
    created_at: { kind: 'int', line: 'time' },
    /** Scrubbing (src/privacy/scrub.ts): 0/1 flags, JSON lists of key names. */
    scrub_defaults: { kind: 'int', default: true, line: 'bool' },
    scrub_ip_addresses: { kind: 'int', default: true, line: 'bool' },
    scrub_fields: { kind: 'json', default: true, line: 'list' },
    safe_fields: { kind: 'json', default: true, line: 'list' },
    /** Past this many MB of stored data, retention removes the oldest events; 0 = no budget. */
    storage_budget_mb: { kind: 'int', default: true, line: 'int' },
  },
  issues: {
    id: { kind: 'int', default: true },
    project_id: { kind: 'int' },
    fingerprint: { kind: 'text', line: 'text' },
    status: { kind: 'text', line: 'text' },
    title: { kind: 'text', line: 'text' },
    level: { kind: 'text', line: 'text' },
    error_type: { kind: 'text', line: 'text' },
    screen: { kind: 'text', line: 'text' },
    location: { kind: 'text', line: 'text' },
    platform: { kind: 'text', line: 'text' },
    event_count: { kind: 'int', line: 'count' },
    stored_count: { kind: 'int', line: 'count' },
    users: { kind: 'int', line: 'count' },
    first_seen: { kind: 'int', line: 'time' },
    last_seen: { kind: 'int', line: 'time' },
    /** Database ids: the event lines carry them instead (first_of_issue / last_of_issue). */
    first_seen_id: { kind: 'int', nullable: true },
    last_seen_id: { kind: 'int', nullable: true },
    first_release: { kind: 'text', line: 'text' },
    last_release: { kind: 'text', line: 'text' },
    resolved_release: { kind: 'text', nullable: true, line: 'text?' },
    resolved_at: { kind: 'int', nullable: true, line: 'time?' },
    regressed_at: { kind: 'int', nullable: true, line: 'time?' },
    /**
     * A snooze (status `ignored`, docs/api.md "Snoozing"): until a time, or until this
     * many more events or users than `ignored_event_count` / `ignored_users`, the counts
     * when it began. They count only while the status is `ignored`.
     */
    ignore_until: { kind: 'int', nullable: true, line: 'time-added' },
    ignore_count: { kind: 'int', nullable: true, line: 'count-added' },
    ignore_users: { kind: 'int', nullable: true, line: 'count-added' },
    ignored_event_count: { kind: 'int', nullable: true, line: 'count-added' },
    ignored_users: { kind: 'int', nullable: true, line: 'count-added' },
    created_at: { kind: 'int', line: 'time' },
    updated_at: { kind: 'int', line: 'time' },
    assignee_id: { kind: 'int', nullable: true },
    /** The minute of last_seen, computed by the database: the issues list's index (migration 010). */
    last_seen_minute: { kind: 'int', computed: true },
  },
  /** Releases an issue has been seen on, with the first time: decides regressions. */
  issue_releases: {
    issue_id: { kind: 'int' },
    release: { kind: 'text', line: 'text' },
    first_seen: { kind: 'int', line: 'time' },
  },
  /** Distinct user keys per issue, so `users` is exact. */
  issue_users: {
    issue_id: { kind: 'int' },
    user_key: { kind: 'text', line: 'text' },
  },
  issue_hourly: {
    issue_id: { kind: 'int' },
    bucket: { kind: 'int', line: 'time', field: 'hour' },
    events: { kind: 'int', line: 'count' },
  },
  /**
   * An issue's activity (src/triage/activity.ts): what ingest changed (new issue,
   * regression, snooze ended: no actor, no data), status changes, comments, merges.
   */
  issue_changes: {
    id: { kind: 'int', default: true },
    project_id: { kind: 'int' },
    issue_id: { kind: 'int' },
    kind: { kind: 'text', line: 'text' },
    at: { kind: 'int', line: 'time' },
    release: { kind: 'text', line: 'text' },
    /** Who did it (a user's email, "api key <8 hex>", "anonymous"); null for the service. */
    actor: { kind: 'text', nullable: true, line: 'text-added' },
    actor_user_id: { kind: 'int', nullable: true, line: 'count-added' },
    /** JSON: a status change's from/to, a comment's text, the fingerprints merged. */
    data: { kind: 'json', nullable: true, line: 'text-added' },
  },
  /** Events per issue, environment and hour: the issues list's environment filter. */
  issue_environment_hourly: {
    issue_id: { kind: 'int' },
    environment: { kind: 'text', line: 'text' },
    bucket: { kind: 'int', line: 'time', field: 'hour' },
    events: { kind: 'int', line: 'count' },
  },
  /**
   * A fingerprint whose events go to another issue: merged into it (its own issue is gone),
   * or mapped to it by re-symbolication. Never the fingerprint of an existing issue.
   */
  issue_merges: {
    project_id: { kind: 'int' },
    fingerprint: { kind: 'text', line: 'text' },
    issue_id: { kind: 'int' },
    merged_at: { kind: 'int', line: 'time' },
  },
  events: {
    id: { kind: 'int', default: true },
    project_id: { kind: 'int' },
    issue_id: { kind: 'int' },
    event_id: { kind: 'text', line: 'text' },
    fingerprint: { kind: 'text', line: 'text' },
    timestamp: { kind: 'int', line: 'time' },
    received_at: { kind: 'int', line: 'time' },
    level: { kind: 'text', line: 'text' },
    platform: { kind: 'text', line: 'text' },
    release: { kind: 'text', line: 'text' },
    dist: { kind: 'text', line: 'text' },
    environment: { kind: 'text', line: 'text' },
    user_id: { kind: 'text', nullable: true, line: 'text?' },
    user_email: { kind: 'text', nullable: true, line: 'text?' },
    user_username: { kind: 'text', nullable: true, line: 'text?' },
    user_ip: { kind: 'text', nullable: true, line: 'text?' },
    device_id: { kind: 'text', nullable: true, line: 'text?' },
    device_model: { kind: 'text', nullable: true, line: 'text?' },
    os_name: { kind: 'text', nullable: true, line: 'text?' },
    os_version: { kind: 'text', nullable: true, line: 'text?' },
    screen: { kind: 'text', line: 'text' },
    error_type: { kind: 'text', line: 'text' },
    error_location: { kind: 'text', line: 'text' },
    title: { kind: 'text', line: 'text' },
    message: { kind: 'text', line: 'text' },
    is_crash: { kind: 'int', line: 'bool' },
    sdk_name: { kind: 'text', line: 'text' },
    /** JSON object of tag key -> value. */
    tags: { kind: 'json', line: 'json' },
    /** Compressed JSON of the normalised detail (exception chain, breadcrumbs, contexts, ...). */
    detail: { kind: 'blob' },
    /**
     * Compressed raw payload exactly as received, for rows written before migration 008;
     * empty when the payload is in `payload_chunk` (src/store/payloads.ts).
     */
    raw: { kind: 'blob' },
    /** The `payload_chunks` row holding the raw payload, at `payload_start` for `payload_length` bytes once decompressed. */
    payload_chunk: { kind: 'int', nullable: true },
    payload_start: { kind: 'int', nullable: true },
    payload_length: { kind: 'int', nullable: true },
    /** JSON of symbolicated frames, set by symbolication; null until then. */
    symbolicated: { kind: 'json', nullable: true, line: 'json?' },
  },
  /** An event's tags, one row each, for the events list's tag filters (the line carries the event's `tags`). */
  event_tags: {
    project_id: { kind: 'int' },
    event_id: { kind: 'int' },
    key: { kind: 'text' },
    value: { kind: 'text' },
  },
  /** Raw payloads of one batch and project, compressed together (src/store/payloads.ts); event lines carry the payloads. */
  payload_chunks: {
    /** PostgreSQL's ingest gives a chunk the id of its first event, so only SQLite fills it. */
    id: { kind: 'int', default: true },
    project_id: { kind: 'int' },
    /** The newest `received_at` of the events whose payloads it holds. */
    received_at: { kind: 'int' },
    /** A codec blob (src/editions/node/codec.ts) of the payloads one after another; empty when `r2_key` names it. */
    data: { kind: 'blob' },
    /** The object holding the blob in the edition's bucket (src/store/blobs.ts), or null when `data` holds it. */
    r2_key: { kind: 'text', nullable: true, default: true },
    /** The object's length when `r2_key` names it (storage_usage counts it), else null. */
    object_bytes: { kind: 'int', nullable: true, default: true },
  },
  /**
   * Every accepted event_id per project (stored or sampled out): makes resends idempotent,
   * and finds a stored event by its event_id (`stored_id`). Lines carry the sampled-out
   * ones; a stored event's row comes with its event line.
   */
  seen_events: {
    project_id: { kind: 'int' },
    event_id: { kind: 'text', line: 'text' },
    received_at: { kind: 'int', line: 'time' },
    /** The `events.id` of the stored event; null when sampling dropped it. */
    stored_id: { kind: 'int', nullable: true },
  },
  project_hourly: {
    project_id: { kind: 'int' },
    bucket: { kind: 'int', line: 'time', field: 'hour' },
    release: { kind: 'text', line: 'text' },
    events: { kind: 'int', line: 'count' },
    crashes: { kind: 'int', line: 'count' },
    errors: { kind: 'int', line: 'count' },
    fatal: { kind: 'int', line: 'count' },
    error: { kind: 'int', line: 'count' },
    warning: { kind: 'int', line: 'count' },
    info: { kind: 'int', line: 'count' },
    debug: { kind: 'int', line: 'count' },
  },
  /**
   * The releases events and sessions reveal, upserted by every ingest batch (first and last
   * seen, platforms). What sentry-cli creates stays in `cli_releases`: src/uploads/releases.ts
   * says why the two are not one table.
   */
  releases: {
    project_id: { kind: 'int' },
    release: { kind: 'text', line: 'text' },
    first_seen: { kind: 'int', line: 'time' },
    last_seen: { kind: 'int', line: 'time' },
    /** JSON array of platform names (releasePlatforms reads it). */
    platforms: { kind: 'json', line: 'json' },
  },
  daily_usage: {
    project_id: { kind: 'int' },
    day: { kind: 'int', line: 'time' },
    events: { kind: 'int', line: 'count' },
  },
  sessions: {
    project_id: { kind: 'int' },
    sid: { kind: 'text', line: 'text' },
    did: { kind: 'text', nullable: true, line: 'text?' },
    release: { kind: 'text', line: 'text' },
    environment: { kind: 'text', line: 'text' },
    started: { kind: 'int', line: 'time' },
    status: { kind: 'text', line: 'text' },
    errors: { kind: 'int', line: 'count' },
    updated_at: { kind: 'int', line: 'time' },
    /** 1 when the session ended in an ANR (`abnormal_mechanism` `anr_…`). */
    anr: { kind: 'int', default: true, line: 'counter-added' },
  },
  session_hourly: {
    project_id: { kind: 'int' },
    release: { kind: 'text', line: 'text' },
    bucket: { kind: 'int', line: 'time', field: 'hour' },
    total: { kind: 'int', line: 'count' },
    crashed: { kind: 'int', line: 'count' },
    errored: { kind: 'int', line: 'count' },
    /** Sessions that ended in an ANR (the ANR rate's numerator). */
    anr: { kind: 'int', default: true, line: 'counter-added' },
  },
  /**
   * A user (session `did`) of a release in one hour of session starts, and whether one of
   * those sessions crashed: the aggregate crash-free users are counted from (distinct users
   * cannot be summed from hourly totals). Kept as long as session_hourly.
   */
  session_users: {
    project_id: { kind: 'int' },
    release: { kind: 'text', line: 'text' },
    bucket: { kind: 'int', line: 'time', field: 'hour' },
    did: { kind: 'text', line: 'text' },
    crashed: { kind: 'int', line: 'count' },
  },
  rate_limit_windows: {
    key: { kind: 'text' },
    window_start: { kind: 'int' },
    /** Requests of this window handed out to instances so far (may pass the limit by the last lease). */
    claimed: { kind: 'int' },
  },
  /** A lease on a background job, so one run at a time holds across processes (retention on SQLite). */
  job_locks: {
    name: { kind: 'text' },
    /** Who holds it: host, process id and a random part. */
    holder: { kind: 'text' },
    /** Epoch ms (wall clock) after which another run may take it over. */
    expires_at: { kind: 'int' },
  },
  /** One per project and alert type (src/alerts). */
  alert_rules: {
    project_id: { kind: 'int' },
    /** `type` names the line type, so the rule's type travels as `alert`. */
    type: { kind: 'text', line: 'text', field: 'alert' },
    enabled: { kind: 'int', line: 'bool' },
    cooldown_minutes: { kind: 'int', line: 'int' },
    /** When the last alert of this type was claimed (the cooldown's start); null before the first. */
    last_triggered: { kind: 'int', nullable: true, line: 'time?' },
    /** JSON list of environments the rule fires for; empty for all. */
    environments: { kind: 'json', default: true, line: 'list' },
    /** The lowest event level the rule fires for; null for all. */
    min_level: { kind: 'text', nullable: true, line: 'text-added' },
    /**
     * JSON list of the channel ids the rule sends to; empty for all of the project's. The
     * ids are this instance's: alert_rule_channel lines carry the list.
     */
    channels: { kind: 'json', default: true },
  },
  alert_channels: {
    id: { kind: 'int', default: true },
    project_id: { kind: 'int' },
    /** webhook, telegram, email, slack, discord or teams (src/alerts/rules.ts CHANNEL_KINDS). */
    kind: { kind: 'text', line: 'text' },
    /** JSON: webhook {url, secret?}, telegram {chat_id}. */
    config: { kind: 'json', line: 'json' },
    created_at: { kind: 'int', line: 'time' },
  },
  /**
   * Alerts recorded before they are sent: by the ingest batch (new_issue, regression) and
   * the crash-spike check, in the transaction that found them. `state` pending until a
   * dispatcher takes it: sent (deliveries made, cooldown claimed), held (inside the
   * cooldown, waiting for the digest), digested (sent in the digest `digest_id`), filtered
   * (the rule's filters let it not through), disabled, no_channel, undelivered (no channel
   * accepted it; the cooldown was given back). The instance's history of sending: not exported.
   */
  alert_outbox: {
    id: { kind: 'int', default: true },
    project_id: { kind: 'int' },
    type: { kind: 'text' },
    issue_id: { kind: 'int', nullable: true },
    /** JSON: the alert's fields (title, fingerprint, level, event_count, release, recent, baseline). */
    payload: { kind: 'json' },
    state: { kind: 'text' },
    created_at: { kind: 'int' },
    /** The cooldown claimed for this alert, and the value it replaced (to give it back). */
    triggered_at: { kind: 'int', nullable: true },
    prev_triggered: { kind: 'int', nullable: true },
    /** The digest (an outbox row of the same type) that sent this held-back alert. */
    digest_id: { kind: 'int', nullable: true, default: true },
  },
  /** One alert (or test) sent to one channel. Not exported. */
  alert_deliveries: {
    id: { kind: 'int', default: true },
    project_id: { kind: 'int' },
    /** The outbox row; null for test deliveries. */
    alert_id: { kind: 'int', nullable: true },
    channel_id: { kind: 'int' },
    type: { kind: 'text' },
    /** pending, sent or failed. */
    state: { kind: 'text' },
    attempts: { kind: 'int' },
    last_error: { kind: 'text', nullable: true },
    /** The channel's last HTTP status. */
    status: { kind: 'int', nullable: true },
    created_at: { kind: 'int' },
    sent_at: { kind: 'int', nullable: true },
    /** Wall clock: when the next attempt is due. */
    next_attempt_at: { kind: 'int' },
    /** Wall clock: while an attempt is under way, the process in `claimed_by` owns the row until then. */
    lease_until: { kind: 'int', nullable: true },
    claimed_by: { kind: 'text', nullable: true },
  },
  /** A chunk of a sentry-cli upload (src/uploads), by the SHA-1 of its bytes. Lives an hour: not exported. */
  upload_chunks: {
    sha1: { kind: 'text' },
    size: { kind: 'int' },
    /** The chunk's bytes; empty when `r2_key` names the object holding them (src/store/blobs.ts). */
    data: { kind: 'blob' },
    r2_key: { kind: 'text', nullable: true, default: true },
    /** Epoch ms of the (last) upload; chunks older than an hour are gone. */
    created_at: { kind: 'int' },
    /** The chunk-upload request still writing it (invisible); null once that request succeeded. */
    batch: { kind: 'text', nullable: true },
  },
  /** The outcome of assembling one uploaded file for a project (src/uploads). Not exported. */
  upload_assemblies: {
    project_id: { kind: 'int' },
    /** `dif` (difs/assemble) or `artifact_bundle`. */
    kind: { kind: 'text' },
    /** SHA-1 of the whole file. */
    checksum: { kind: 'text' },
    /** assembling, ok, error */
    state: { kind: 'text' },
    detail: { kind: 'text', nullable: true },
    /** JSON of what was stored (the `dif` answer), when ok. */
    result: { kind: 'json', nullable: true },
    updated_at: { kind: 'int' },
  },
  /**
   * A release created or updated by sentry-cli (`releases new|finalize`): url and dates only
   * the CLI says, apart from `releases`, which ingest upserts in every batch (the reason is
   * in src/uploads/releases.ts). The releases API shows both side by side.
   */
  cli_releases: {
    project_id: { kind: 'int' },
    version: { kind: 'text', line: 'text' },
    url: { kind: 'text', nullable: true, line: 'text?' },
    date_created: { kind: 'int', line: 'time' },
    date_started: { kind: 'int', nullable: true, line: 'time?' },
    date_released: { kind: 'int', nullable: true, line: 'time?' },
  },
  /**
   * A ProGuard mapping associated with a release by the build plugins (sentry-cli
   * `upload-proguard --app-id --version`). A pair table, not a column of the mapping's
   * symbol file or of `cli_releases`: one mapping serves several releases (build variants
   * share it) and a release several mappings, while a symbol file has one release (its
   * replacement rule and matching by release read it). Kept to answer a repeated association
   * 409 as Sentry does; symbolication never reads it (events name their mapping by debug id).
   */
  proguard_releases: {
    project_id: { kind: 'int' },
    release: { kind: 'text', line: 'text' },
    proguard_uuid: { kind: 'text', line: 'text' },
    created_at: { kind: 'int', line: 'time' },
  },
  /** A commit of a CLI release (`releases set-commits`), kept in the order sent (`position`). */
  release_commits: {
    project_id: { kind: 'int' },
    version: { kind: 'text', line: 'text' },
    repository: { kind: 'text', line: 'text' },
    commit_id: { kind: 'text', line: 'text' },
    position: { kind: 'int', line: 'int' },
    message: { kind: 'text', nullable: true, line: 'text?' },
    author_name: { kind: 'text', nullable: true, line: 'text?' },
    author_email: { kind: 'text', nullable: true, line: 'text?' },
    /** The commit's time, epoch ms, when sent. */
    date: { kind: 'int', nullable: true, line: 'time?' },
  },
  /** A deploy of a CLI release (`deploys new`); one id for every project row of the deploy. */
  release_deploys: {
    project_id: { kind: 'int' },
    deploy_id: { kind: 'text', line: 'text' },
    version: { kind: 'text', line: 'text' },
    environment: { kind: 'text', line: 'text' },
    name: { kind: 'text', nullable: true, line: 'text?' },
    url: { kind: 'text', nullable: true, line: 'text?' },
    date_started: { kind: 'int', nullable: true, line: 'time?' },
    date_finished: { kind: 'int', line: 'time' },
  },
  /** A stored symbol file (src/symbols/storage.ts); lines carry the ready ones. */
  symbol_files: {
    id: { kind: 'int', default: true },
    project_id: { kind: 'int' },
    /** proguard, sourcemap or dsym. */
    kind: { kind: 'text', line: 'text' },
    /** `writing` while its chunks stream in (never listed or matched), then `ready`. */
    state: { kind: 'text' },
    release: { kind: 'text', line: 'text' },
    dist: { kind: 'text', line: 'text' },
    /** Lowercase dashed UUID, or '' when the file has none. */
    debug_id: { kind: 'text', line: 'text' },
    filename: { kind: 'text', line: 'text' },
    /** Source maps: the minified file the map serves (its `file`, or the name without `.map`); else ''. */
    serves: { kind: 'text', line: 'text' },
    /** The basename of `serves`, what release matching looks up by. */
    serves_basename: { kind: 'text', line: 'text' },
    size: { kind: 'int', line: 'count' },
    /** Bytes of the derived lookup index (part 1), 0 when the kind builds none. */
    index_size: { kind: 'int', line: 'count' },
    /** JSON object of kind-specific facts (e.g. a dSYM slice's architecture). */
    meta: { kind: 'json', line: 'json' },
    uploaded_at: { kind: 'int', line: 'time' },
  },
  /** A symbol file's bytes: part 0 the file, part 1 its derived index; `seq` from 0. */
  symbol_chunks: {
    file_id: { kind: 'int' },
    part: { kind: 'int', line: 'int' },
    seq: { kind: 'int', line: 'count' },
    /** The chunk's bytes; empty when `r2_key` names the object holding them (src/store/blobs.ts). */
    data: { kind: 'blob', line: 'bytes' },
    r2_key: { kind: 'text', nullable: true, default: true },
    /** The object's length when `r2_key` names it (migration 033; null before it or when `data` holds the bytes). */
    object_bytes: { kind: 'int', nullable: true, default: true },
  },
  /** A background re-symbolication run (src/symbols/resymbolicate.ts). Not exported. */
  symbol_jobs: {
    id: { kind: 'int', default: true },
    project_id: { kind: 'int' },
    /** The events' release; '' means every release. */
    release: { kind: 'text' },
    /** Events received at or after this time (epoch ms). */
    since: { kind: 'int' },
    /** The last event id handled; the run goes on above it. */
    cursor: { kind: 'int' },
    /** pending or done. */
    state: { kind: 'text' },
    /** Events symbolicated so far. */
    done: { kind: 'int' },
    /** Epoch ms (wall clock) until which an instance holds the run. */
    lease_until: { kind: 'int' },
    created_at: { kind: 'int' },
  },
  /** A queue message the serverless edition's consumer committed (migration 020). */
  ingest_receipts: {
    message_id: { kind: 'text' },
    committed_at: { kind: 'int' },
  },
  /** Accounts (src/accounts). Emails are stored normalised (trimmed, lower case). */
  users: {
    id: { kind: 'int', default: true },
    email: { kind: 'text', line: 'text' },
    name: { kind: 'text', line: 'text' },
    /** viewer, member or admin. */
    role: { kind: 'text', line: 'text' },
    /** 1 when disabled: no sign-in, tokens and sessions refused. */
    disabled: { kind: 'int', default: true, line: 'bool' },
    /** The KDF's self-describing hash (src/accounts/password.ts); null until a password is set. */
    password_hash: { kind: 'text', nullable: true, line: 'text?' },
    created_at: { kind: 'int', line: 'time' },
    last_login_at: { kind: 'int', nullable: true, line: 'time?' },
  },
  /** Personal API tokens: only the SHA-256 of the token is kept. */
  personal_tokens: {
    id: { kind: 'int', default: true },
    user_id: { kind: 'int' },
    name: { kind: 'text', line: 'text' },
    token_hash: { kind: 'text', line: 'text' },
    created_at: { kind: 'int', line: 'time' },
    expires_at: { kind: 'int', nullable: true, line: 'time?' },
    last_used_at: { kind: 'int', nullable: true, line: 'time?' },
  },
  /** Dashboard sessions, keyed by the SHA-256 of the cookie's session id. One instance's secrets: not exported. */
  user_sessions: {
    id_hash: { kind: 'text' },
    /** The signed-in user, or null for an API-key sign-in (allowed while no user exists). */
    user_id: { kind: 'int', nullable: true },
    /** For an API-key sign-in: the first 16 hex digits of the key's SHA-256. */
    api_key_id: { kind: 'text', nullable: true },
    created_at: { kind: 'int' },
    last_seen_at: { kind: 'int' },
    expires_at: { kind: 'int' },
    ip: { kind: 'text', nullable: true },
    user_agent: { kind: 'text', nullable: true },
  },
  /** One-time links that let an invited user set a password. Not exported. */
  user_invites: {
    token_hash: { kind: 'text' },
    user_id: { kind: 'int' },
    created_at: { kind: 'int' },
    expires_at: { kind: 'int' },
  },
  /** Setup tokens `serve` logs while no user exists; any instance accepts them. Not exported. */
  setup_tokens: {
    token_hash: { kind: 'text' },
    created_at: { kind: 'int' },
  },
  audit_log: {
    id: { kind: 'int', default: true },
    /** Random, unique: the entry's key in export files. */
    uid: { kind: 'text', line: 'text' },
    at: { kind: 'int', line: 'time' },
    actor: { kind: 'text', line: 'text' },
    action: { kind: 'text', line: 'text' },
    target: { kind: 'text', nullable: true, line: 'text?' },
    /** JSON object. */
    details: { kind: 'json', line: 'json' },
    ip: { kind: 'text', nullable: true, line: 'text?' },
  },
  /** A file sent with an event (src/attachments); its bytes are in `attachment_chunks`. */
  attachments: {
    id: { kind: 'int', default: true },
    project_id: { kind: 'int' },
    /** The event's `event_id` (32 lowercase hex). */
    event_id: { kind: 'text', line: 'text' },
    /** MD5 of the name and bytes: a resent file is stored once. */
    digest: { kind: 'text', line: 'text' },
    name: { kind: 'text', line: 'text' },
    content_type: { kind: 'text', line: 'text' },
    /** `event.attachment`, `event.view_hierarchy`, `event.minidump`, `event.applecrashreport`. */
    attachment_type: { kind: 'text', line: 'text' },
    size: { kind: 'int', line: 'count' },
    /** The event's receive time (retention removes both together). */
    received_at: { kind: 'int', line: 'time' },
  },
  attachment_chunks: {
    attachment_id: { kind: 'int' },
    seq: { kind: 'int', line: 'count' },
    /** The chunk's bytes; empty when `r2_key` names the object holding them. */
    data: { kind: 'blob', line: 'bytes' },
    /** The object holding the bytes in the edition's bucket (src/store/blobs.ts), or null. */
    r2_key: { kind: 'text', nullable: true, default: true },
  },
  /** SSO sign-ins under way (src/accounts/oidc.ts): one row per state, used once. Not exported. */
  sso_states: {
    state_hash: { kind: 'text' },
    nonce: { kind: 'text' },
    code_verifier: { kind: 'text' },
    /** Where to go after signing in. */
    next: { kind: 'text' },
    created_at: { kind: 'int' },
  },
  /** A cron monitor (src/monitors), created or updated by a check-in's monitor_config. */
  monitors: {
    id: { kind: 'int', default: true },
    project_id: { kind: 'int' },
    slug: { kind: 'text', line: 'text' },
    /** crontab or interval */
    schedule_type: { kind: 'text', line: 'text' },
    /** The crontab, or the interval's number of units. */
    schedule: { kind: 'text', line: 'text' },
    /** The interval's unit (minute, hour, day, week, month, year); null for a crontab. */
    schedule_unit: { kind: 'text', nullable: true, line: 'text?' },
    timezone: { kind: 'text', line: 'text' },
    /** Minutes. */
    checkin_margin: { kind: 'int', line: 'int' },
    /** Minutes. */
    max_runtime: { kind: 'int', line: 'int' },
    failure_issue_threshold: { kind: 'int', line: 'int' },
    recovery_threshold: { kind: 'int', line: 'int' },
    enabled: { kind: 'int', line: 'bool' },
    /** ok or failing */
    health: { kind: 'text', line: 'text' },
    /** Failures in a row; check-ins ok in a row while failing. */
    failures: { kind: 'int', line: 'count' },
    successes: { kind: 'int', line: 'count' },
    /** The last check-in's status (ok, error, in_progress, missed, timeout). */
    last_status: { kind: 'text', nullable: true, line: 'text?' },
    last_checkin_at: { kind: 'int', nullable: true, line: 'time?' },
    next_expected_at: { kind: 'int', nullable: true, line: 'time?' },
    /** next_expected_at plus the margin: a monitor is missed once this passes. */
    deadline_at: { kind: 'int', nullable: true, line: 'time?' },
    /** Every state change adds one; writes are conditional on it. A moved monitor starts a new history. */
    version: { kind: 'int' },
    /** The token of the write that last changed the row (what its other statements check). */
    claim: { kind: 'text', nullable: true },
    created_at: { kind: 'int', line: 'time' },
    updated_at: { kind: 'int', line: 'time' },
  },
  /** One check-in of a monitor, as received or as the check recorded it (missed, timeout). */
  monitor_checkins: {
    id: { kind: 'int', default: true },
    project_id: { kind: 'int' },
    monitor_id: { kind: 'int' },
    check_in_id: { kind: 'text', line: 'text' },
    /** ok, error, in_progress, missed, timeout */
    status: { kind: 'text', line: 'text' },
    environment: { kind: 'text', nullable: true, line: 'text?' },
    release: { kind: 'text', nullable: true, line: 'text?' },
    duration_ms: { kind: 'int', nullable: true, line: 'count?' },
    created_at: { kind: 'int', line: 'time' },
    updated_at: { kind: 'int', line: 'time' },
    /** For an in-progress check-in: when it times out. */
    timeout_at: { kind: 'int', nullable: true, line: 'time?' },
  },
  /**
   * Stored bytes per project, kind and hour, kept by triggers (migration 021): `payloads`
   * counts payload chunks and their compressed bytes by the chunk's `received_at`. Not exported.
   */
  storage_usage: {
    project_id: { kind: 'int' },
    kind: { kind: 'text' },
    bucket: { kind: 'int' },
    count: { kind: 'int' },
    bytes: { kind: 'int' },
  },
  /** A user's feedback (src/feedback), linked to its event by `event_id` when read. */
  user_feedback: {
    id: { kind: 'int', default: true },
    project_id: { kind: 'int' },
    /** SHA-1 of what it says: a resend is stored once. */
    digest: { kind: 'text', line: 'text' },
    /** The event it is about; '' when it names none. */
    event_id: { kind: 'text', line: 'text' },
    name: { kind: 'text', line: 'text' },
    email: { kind: 'text', line: 'text' },
    comments: { kind: 'text', line: 'text' },
    url: { kind: 'text', line: 'text' },
    /** `user_report`, `feedback` or `api`. */
    source: { kind: 'text', line: 'text' },
    created_at: { kind: 'int', line: 'time' },
    received_at: { kind: 'int', line: 'time' },
  },
} as const satisfies Record<string, TableDescriptor>;

export type Tables = typeof TABLES;
export type TableName = keyof Tables;
export type ColumnName<T extends TableName> = keyof Tables[T] & string;

/** The TypeScript value of a column of this kind. */
type KindValue<K extends ColumnKind> = K extends 'int' | 'real' ? number : K extends 'blob' ? Uint8Array : string;

type ColumnValue<C extends ColumnDescriptor> = C extends { nullable: true }
  ? KindValue<C['kind']> | null
  : KindValue<C['kind']>;

/** A column as Kysely types it: `Generated` when inserts may leave it out, `GeneratedAlways` when computed. */
type KyselyColumn<C extends ColumnDescriptor> = C extends { computed: true }
  ? GeneratedAlways<ColumnValue<C>>
  : C extends { default: true }
    ? Generated<ColumnValue<C>>
    : ColumnValue<C>;

/** The Kysely table type of a descriptor (src/store/schema.ts `Database`). */
export type KyselyTable<D extends TableDescriptor> = { -readonly [K in keyof D]: KyselyColumn<D[K]> };

/** The descriptor of one column. */
export function columnOf<T extends TableName>(table: T, column: ColumnName<T>): ColumnDescriptor {
  return (TABLES[table] as TableDescriptor)[column];
}

/** The element type of a column's PostgreSQL array parameter (`unnest($1::int8[], …)`). */
export function pgArrayType(kind: ColumnKind): PgArrayElement {
  switch (kind) {
    case 'int':
      return 'int8';
    case 'real':
      return 'float8';
    case 'blob':
      return 'bytea';
    default:
      return 'text';
  }
}

/** Column names with their PostgreSQL array element type, in insert order. */
export type ColumnSpec<C extends string = string> = readonly (readonly [C, PgArrayElement])[];

/** The named columns of a table with their PostgreSQL array types, in the order given (ingest's inserts). */
export function pgColumns<T extends TableName, const N extends ColumnName<T>>(
  table: T,
  names: readonly N[],
): ColumnSpec<N> {
  return names.map((name) => [name, pgArrayType(columnOf(table, name).kind)] as const);
}
