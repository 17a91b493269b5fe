// Every protocol and request limit, named once with its reason (as Relay's `Limits`).
// A limit here bounds what a client can make the server read, hold, store or answer;
// the modules that enforce them import them from here. Bounds that are internal to a
// parser (Mach-O load commands, ProGuard lines) or tuning of a cache stay with their
// code. Web APIs only: every edition imports this.

const KiB = 1024;
const MiB = 1024 * KiB;
const GiB = 1024 * MiB;

// ---------------------------------------------------------------------------
// Ingest (SDK envelopes and /store/ bodies)
// ---------------------------------------------------------------------------

/**
 * Bytes of an ingest body, received and again after Content-Encoding: 20 MB, counted as
 * 20 × 1024 × 1024 = 20 971 520 bytes (Sentry's envelope limit); past it a 413, and a
 * gzip bomb stops there without allocating more.
 */
export const MAX_BODY_BYTES = 20 * MiB;
/**
 * How far past its arrival an event's own timestamp may lie (device clocks run ahead):
 * one hour; a later timestamp is replaced by the arrival time. Reads whose window ends
 * "now" reach this far ahead, so such an event's issue is listed.
 */
export const MAX_EVENT_CLOCK_AHEAD_MS = 60 * 60 * 1000;
/** Event items in one envelope; more refuse the envelope whole (413), before any is normalised. */
export const MAX_EVENTS_PER_ENVELOPE = 100;
/** Containers nested deeper than this (the payload object itself is level 1) are cut, so every stored event can be serialised and read back. */
export const MAX_JSON_DEPTH = 64;
/** Longer User-Agent headers are not parsed (ua-parser-js caps at 500 characters itself). */
export const MAX_USER_AGENT = 512;

// What normalisation keeps of an event (the raw payload is stored whole).
/** Characters of an issue or event title. */
export const MAX_TITLE = 100;
/** Characters of an event's message. */
export const MAX_MESSAGE = 8192;
/** Tags kept per event. */
export const MAX_TAGS = 100;
/** Characters of a tag key and of a tag value (also an indexed column, see below). */
export const MAX_TAG_KEY = 200;
export const MAX_TAG_VALUE = 200;
/** Breadcrumbs kept per event (the newest). */
export const MAX_BREADCRUMBS = 100;

// Indexed text columns are clamped so that no single event can fail a whole batch with
// PostgreSQL's btree row-size limit (about 2.7 KB per index entry).
/** Characters of an event's release. */
export const MAX_EVENT_RELEASE = 250;
/** Characters of an event_id, fingerprint, sid, user id and user key. */
export const MAX_KEY_ID = 200;
/**
 * Characters of a source map's served basename kept in the `serves_basename` index
 * (a map's `file` may be any length); lookups compare the full name afterwards.
 */
export const MAX_INDEXED_BASENAME = 200;
/** Session counts are stored in 32-bit integer columns. */
export const MAX_SESSION_COUNT = 2_147_483_647;

// Attachments (envelope `attachment` items; src/attachments). Relay's defaults are
// 100 MB per attachment and per envelope; one small box takes what fits in one 20 MB
// envelope, and a screenshot or view hierarchy is far below the per-file limit.
/** Bytes of one attachment (a screenshot, a view hierarchy, a log): more refuses the envelope (413). */
export const MAX_ATTACHMENT_BYTES = 10 * MiB;
/** Bytes of one minidump sent as an attachment (docs/api.md "Native crashes"). */
export const MAX_MINIDUMP_BYTES = 20 * MiB;
/** Bytes of all attachments of one envelope: more refuses the envelope (413). */
export const MAX_ATTACHMENTS_BYTES = 20 * MiB;
/** Attachments kept per envelope (its event); the rest are dropped. */
export const MAX_ATTACHMENTS_PER_EVENT = 20;
/** Characters of an attachment's name. */
export const MAX_ATTACHMENT_NAME = 200;
/** Bytes of a view hierarchy the dashboard draws as a tree (larger ones are offered as a download). */
export const MAX_VIEW_HIERARCHY_RENDER_BYTES = 1 * MiB;
/** Nodes of a view hierarchy the dashboard draws. */
export const MAX_VIEW_HIERARCHY_NODES = 2000;

// User feedback (envelope `user_report` and `feedback` items, the user-feedback route;
// src/feedback). Sentry cuts a feedback message at 4096 characters, names at 128 and
// e-mail addresses at 75 (its UserReport model); longer values are cut, not refused.
export const MAX_FEEDBACK_COMMENTS = 4096;
export const MAX_FEEDBACK_NAME = 128;
export const MAX_FEEDBACK_EMAIL = 75;
/** Characters of the page address a feedback widget sends. */
export const MAX_FEEDBACK_URL = 1000;

// ---------------------------------------------------------------------------
// The management and read API
// ---------------------------------------------------------------------------

/** Request bodies on management routes; ingest and uploader routes set their own limits. */
export const MANAGEMENT_BODY_LIMIT = 1 * MiB;
/** A `POST /api/import` body (serverless edition): `faultline import --to` sends parts well under it. */
export const IMPORT_BODY_LIMIT = 32 * MiB;
/**
 * Failed dashboard sign-ins allowed per client address and per account within
 * SIGN_IN_WINDOW_MS; the next attempt is a 429 with Retry-After, counted across
 * instances in the database (src/store/rate-limits.ts).
 */
export const SIGN_IN_FAILURES = 10;
/** The sign-in throttle's window: 15 minutes (counted in whole minutes, never less). */
export const SIGN_IN_WINDOW_MS = 15 * 60 * 1000;
/** Characters of a project's name. */
export const NAME_MAX_LENGTH = 200;

// Lists (docs/api.md "Conventions").
/** A list's page size unless `limit` asks for another. */
export const DEFAULT_LIMIT = 50;
/** Largest page a list answers. */
export const MAX_LIMIT = 500;
/** Largest `offset`: deeper pages would make the database skip that many rows. */
export const MAX_OFFSET = 10_000;
/** A window's length in days unless asked. */
export const DEFAULT_DAYS = 7;
/** Longest window in days: the hourly aggregates a route reads stay bounded. */
export const MAX_DAYS = 90;
/** Fingerprints one bulk status change may name. */
export const MAX_BULK = 10_000;
/**
 * Issues one merge request may merge into its target: each is a dozen statements, and on
 * D1 every statement of a batch counts against an invocation's queries.
 */
export const MAX_MERGE = 20;
/** `tag.<key>` filters one event search may combine (each is one more index probe per event). */
export const MAX_TAG_FILTERS = 10;
/** Issues listed in each of a release's issues_introduced and issues_present (highest event_count first). */
export const RELEASE_ISSUES_LIMIT = 500;
/** Alert deliveries a project's list answers (newest first). */
export const DELIVERY_LIST_LIMIT = 100;

// Alert rules and channels.
/** Longest cooldown between alerts of one rule: 30 days, in minutes. */
export const MAX_COOLDOWN_MINUTES = 43_200;
export const MAX_WEBHOOK_URL_LENGTH = 2048;
export const MAX_SECRET_LENGTH = 256;
/**
 * How long the serverless edition's alert pass after an ingest answer waits for retries
 * falling due (the second attempt about 2 s, the third about 10 s after a failure):
 * waitUntil keeps an invocation about 30 s past its answer. A delivery still pending
 * then, or whose attempt was cut short (its 60 s lease runs out), is sent by the
 * 10-minute cron.
 */
export const WORKER_ALERT_PASS_WAIT_MS = 15_000;
/** What is kept of a channel's answer (bytes as read on Node, characters through fetch), for the delivery's error text. */
export const MAX_ALERT_RESPONSE = 64 * KiB;

// ---------------------------------------------------------------------------
// Symbol uploads (POST /api/{project}/symbols)
// ---------------------------------------------------------------------------

/** Largest symbol file (a dSYM's DWARF can be hundreds of MB). */
export const MAX_SYMBOL_FILE_BYTES = 256 * MiB;
/** Entries of an uploaded ZIP of symbol files. */
export const MAX_ZIP_ENTRIES = 1000;
/** Bytes an uploaded ZIP unpacks to, all entries together (a ZIP bomb stops there). */
export const MAX_ZIP_UNPACKED_BYTES = 1 * GiB;
/** Characters of an upload's text form fields. */
export const MAX_SYMBOL_FIELD = 1024;
/** Characters of an upload's release and dist. */
export const MAX_SYMBOL_RELEASE = 200;
export const MAX_SYMBOL_DIST = 64;
/** Bytes of a multipart part's headers. */
export const MAX_MULTIPART_HEADER_BYTES = 16 * KiB;
/** Bytes of a refused upload read and dropped, so the client gets to read the 400 before the connection ends. */
export const REFUSED_UPLOAD_DRAIN_BYTES = 32 * MiB;
/**
 * The serverless edition's largest symbol files: what an isolate (128 MB) can hold parsed
 * beside its other work. A parsed source map takes about ten times its size, a ProGuard
 * mapping about one and a half (measured with the parsers both editions share).
 */
export const WORKER_MAX_SYMBOL_FILE_BYTES = 32 * MiB;
export const WORKER_MAX_SOURCE_MAP_BYTES = 8 * MiB;

/**
 * Events one re-symbolication step of the serverless edition goes over, committed as one
 * atomic D1 batch: a step runs after an upload's answer (waitUntil) and then by the
 * every-minute cron, within one invocation's limits. A step holds the events' payload
 * chunks unpacked (up to 256 KiB each, so about 25 MB at most beside the parsed symbol
 * file in the isolate's 128 MB), parses each payload and maps its frames: tens of
 * milliseconds of CPU for typical events plus the first parse of a symbol file, well within
 * the 30 s a paid invocation has by default (the free plan's 10 ms fits no step). It makes
 * about five D1 queries beside reading the symbol files' 512 KiB chunks, far from the
 * 1 000 D1 queries a paid invocation may make.
 */
export const WORKER_RESYMBOLICATE_STEP_EVENTS = 100;
/**
 * Steps one run of the every-minute cron takes (1 000 events a minute, 60 000 an hour):
 * ten steps' queries and CPU stay within one invocation's limits as one step's do.
 */
export const WORKER_RESYMBOLICATE_CRON_STEPS = 10;

/**
 * The largest ingest work the serverless edition enqueues (estimated; Cloudflare Queues
 * take messages of at most 128 KB): larger ones are committed directly.
 */
export const WORKER_QUEUE_MESSAGE_BYTES = 112 * 1024;

// ---------------------------------------------------------------------------
// sentry-cli's routes under /api/0/
// ---------------------------------------------------------------------------

/** JSON bodies of these routes (an assemble request lists every chunk of up to 1000 files). */
export const UPLOAD_JSON_LIMIT = 8 * MiB;
/** The legacy `files/dsyms/` ZIP (sentry-cli 2.x batches its ZIPs at 35 MiB). */
export const LEGACY_ZIP_LIMIT = 40 * MiB;
/**
 * Bytes per chunk (a power of two: sentry-cli up to 2.39 requires one). Sentry offers
 * 8 MiB; 1 MiB keeps what a request and an assembly hold at once small (a chunk is read
 * whole), at the cost of more rows: a 256 MB file (the per-file limit these routes share
 * with the Symbols routes, MAX_SYMBOL_FILE_BYTES) is 256 chunks in 4 requests.
 */
export const CHUNK_SIZE = 1 * MiB;
/** Most parts in one chunk-upload request. */
export const CHUNKS_PER_REQUEST = 64;
/** Most bytes of part contents in one chunk-upload request. */
export const MAX_REQUEST_SIZE = 32 * MiB;
/** Longest a `--wait` polls (seconds). */
export const MAX_WAIT_SECONDS = 600;
/** Most files in one difs/assemble request. */
export const MAX_DIFS_PER_REQUEST = 1000;
/** Largest artifact-bundle manifest read (it lists every file of the bundle, with headers). */
export const MAX_MANIFEST_BYTES = 16 * MiB;
/**
 * Entries a ZIP's directory may list (an artifact bundle): a bundle carries every minified
 * file beside its maps and only the maps are unpacked, so it may list more entries than a
 * zip of symbol files (MAX_ZIP_ENTRIES, which the legacy ZIP keeps); more is not an archive
 * any uploader makes.
 */
export const MAX_ARCHIVE_ENTRIES = 100_000;
/** Characters of a release version. */
export const MAX_VERSION_LENGTH = 200;
/** Most releases a list answers (newest first), as Sentry caps its default page. */
export const RELEASE_LIST_LIMIT = 100;
/** Commits kept per release (`set-commits --auto` sends 20 by default). */
export const MAX_RELEASE_COMMITS = 1000;
/** Characters of a commit id, as sentry-cli bounds a SHA. */
export const MAX_COMMIT_ID_LENGTH = 64;
/** Characters of a commit message kept; a longer one is cut, never refused. */
export const MAX_COMMIT_MESSAGE_LENGTH = 10_000;
/** Characters of a deploy's environment and name (as Sentry bounds them), and of other short release texts. */
export const MAX_DEPLOY_NAME_LENGTH = 64;
/** Characters of a URL, repository or author name sent with a release. */
export const MAX_RELEASE_TEXT_LENGTH = 1000;
/** Commits and deploys each item of our releases list shows (the detail shows all). */
export const RELEASE_LIST_ACTIVITY = 10;
/** Most deploys a release's deploy list answers (newest first). */
export const DEPLOY_LIST_LIMIT = 1000;

// ---------------------------------------------------------------------------
// Export and import
// ---------------------------------------------------------------------------

/** A longer line is a problem, not a reason to run out of memory. */
export const MAX_LINE_CHARS = 64 * MiB;
/** Lines per export answer unless the request asks for fewer. */
export const EXPORT_PART_LINES = 5000;
/** Most lines per export answer a request may ask for. */
export const MAX_EXPORT_PART_LINES = 100_000;
/** Lines and bytes per import request the CLI sends: well under the serverless edition's request limits. */
export const IMPORT_REQUEST_LINES = 2000;
export const IMPORT_REQUEST_BYTES = 8 * MiB;

// ---------------------------------------------------------------------------
// Cron monitors (check-ins; docs/api.md "Cron monitors")
// ---------------------------------------------------------------------------

/** Characters of a monitor slug, as Sentry slugifies `monitor_slug`. */
export const MAX_MONITOR_SLUG = 50;
/** Largest `checkin_margin` and `max_runtime`, in minutes (28 days, Sentry's bound). */
export const MAX_MONITOR_MINUTES = 40_320;
/** Largest `failure_issue_threshold` and `recovery_threshold` (Sentry's bound). */
export const MAX_MONITOR_THRESHOLD = 720;
/** Characters of a crontab or a time zone name. */
export const MAX_MONITOR_SCHEDULE = 100;
/** Check-ins in one envelope; more refuse the envelope (413), as events do. */
export const MAX_CHECK_INS_PER_ENVELOPE = 100;
/** Bytes of a legacy cron check-in body (`/api/{id}/cron/…`): one small JSON object. */
export const MAX_CRON_BODY_BYTES = 64 * KiB;
/** Check-ins a monitor's detail and the dashboard list, newest first. */
export const MONITOR_RECENT_CHECKINS = 50;

// ---------------------------------------------------------------------------
// Privacy settings of a project (docs/privacy.md)
// ---------------------------------------------------------------------------

/** At most this many entries in `scrub_fields` and in `safe_fields`. */
export const MAX_SCRUB_LIST = 200;
/** Longest entry of those lists. */
export const MAX_SCRUB_FIELD_LENGTH = 200;
