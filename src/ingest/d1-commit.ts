// The ingest commit on D1 (the serverless edition): one request's work as one
// `db.batch()`, which D1 runs as one transaction, its statements in order on one
// connection. There is no interactive transaction, so nothing is read before the batch
// and planned from: every rule is applied by the batch's own statements against what
// the database holds when the batch runs, and concurrent requests interleave only
// between whole batches. The rules are those of plan.ts (docs/architecture.md
// "Per event"), written as conditional upserts, so this module is ingest's, not the
// store's; the conditions and numbers of the quota, sampling, regression, session class,
// snooze and hour bucket are rendered from their one description, rules.ts
// (test/ingest/rules-parity.test.ts runs one table of cases against both):
//
// - Marker. The batch picks a random negative number M. `seen_events` rows it inserts
//   carry stored_id = M until its last statements, so "this batch's fresh events" is a
//   join on the primary key (project_id, event_id) with stored_id = M; new issues carry
//   last_seen_id = M, flipped ones regressed_at = M, payload chunks received_at = M - k.
//   Every marker is replaced before the batch ends, so none is ever committed.
// - Dedupe and quota: one INSERT ... SELECT ... ON CONFLICT DO NOTHING into
//   seen_events inserts the work's event ids the project has not seen, only when the
//   project exists and (daily_quota = 0 or used + fresh <= daily_quota). A work over the
//   quota inserts nothing (refused whole); duplicates are not charged. daily_usage then
//   grows by the rows inserted. Everything that counts an event joins to those rows, so
//   a duplicate, a refused work or a deleted project contributes nothing anywhere.
// - Issues: one upsert per work, aggregated per fingerprint with window functions: counts
//   add, last-seen fields follow the newest event (ties: the later one), first-seen the
//   oldest (ties: the earlier one). Regression: the upsert flips resolved → regression when
//   an event of the work regresses (plan.ts's regresses: release not seen before the
//   resolution, or without release newer than it), against issue_releases as they were
//   before the batch (written after). issue_changes and alert_outbox rows are inserted for
//   the issues carrying a marker, once.
// - Users: issues.users grows by the work's (issue, user key) pairs missing from
//   issue_users, counted before they are inserted.
// - Sampling: after the counts, a statement drops the marker (stored_id = NULL) of the
//   events sampling does not keep: crashes always, the first sample_keep_first events of
//   an issue (the event's rank in the issue's event_count), then a draw made here
//   against sample_rate. Chunks, events and tags are inserted for the marked rows; then
//   the issues' stored_count, first/last_seen_id (by event time, as linkStoredEvents) and
//   the seen rows' stored_id are set from them.
// - Sessions: the work's updates folded per sid (latest wins); session_hourly moves by
//   each sid's class before → after, read from `sessions` in the batch, plus the
//   aggregates; then the session upsert applies only an update not older than the row,
//   and session_users takes each updated session's user as the session now stands.
//   None is written when the work was refused or its project is gone.
// - Snoozes: once the counts are in, the work's issues whose snooze the rule ends
//   (plan.ts snoozeEndedSql) get a `snooze_ended` change and go back to unresolved.
// - Aggregates (issue_hourly, issue_environment_hourly, project_hourly, releases, issue_releases) are additive or
//   min/max upserts over the fresh events.
//
// D1's limits: the work's lists travel as JSON text parameters read with json_each, so
// no statement binds more than a handful of parameters whatever the number of events;
// the SQL texts are fixed (a few KB); values stay under D1_MAX_VALUE_BYTES: the payloads
// are packed into chunks (src/store/payloads.ts) checked against it (unless the chunks go
// to the edition's bucket: then a chunk row holds its object's key, src/store/blobs.ts,
// and the caller writes the objects before the batch), and the events'
// rows are split over as many insert statements as their JSON needs. A work that cannot
// fit (one event's row or compressed payload past the value limit) is refused with 413.
import { CompiledQuery } from 'kysely';
import { OUTBOX_PENDING } from '../alerts/outbox.js';
import { hourBucket, utcDay } from '../clock.js';
import { D1_MAX_VALUE_BYTES } from '../store/d1.js';
import { storedTitle, TAGS_IN_EVENT_TAGS } from '../store/event-text.js';
import { EVENT_FIELD_NAMES, eventFields } from '../store/ingest-rows.js';
import { packPayloads } from '../store/payloads.js';
import { rawSource, type EventInput, type IngestOutcome, type PreparedWork, type Random } from '../store/write-set.js';
import { PayloadTooLargeError } from '../errors.js';
import { secondsToNextUtcMidnight, snoozeEndedSql } from './plan.js';
import { hourBucketSql, KEEPS_EVENT, QUOTA_ACCEPTS, REGRESSES, sessionClassSql, toSql } from './rules.js';

/** What a JSON parameter may take: the value limit less room for the rest of a row. */
const JSON_PART_BYTES = 1_900_000;

const encoder = new TextEncoder();
const utf8Bytes = (text: string) => encoder.encode(text).byteLength;

/** The statements of one work's commit, and how to read the batch's answer. */
export interface D1IngestCommit {
  statements: CompiledQuery[];
  /** The outcome from the batch's results (one per statement). */
  outcome(results: { rows: Record<string, unknown>[] }[]): IngestOutcome;
  /** Alerts (new_issue, regression) the batch recorded in the outbox, from its results. */
  alertsRecorded(results: { numAffectedRows?: bigint }[]): number;
  /**
   * The payload chunk objects the statements name (with D1IngestOptions.objectKey), to
   * write before the batch runs (src/store/blobs.ts); empty without.
   */
  objects: { key: string; data: Uint8Array }[];
}

/** A random marker: negative, so no real id, time or count equals it. */
export function randomMarker(random: Random = Math.random): number {
  return -(1 + Math.floor(random() * 2 ** 40)) * 1024;
}

// -- the shared SQL fragments -------------------------------------------------
// Parameters: ?1 project id, ?2 received at, ?3 marker, ?4 UTC day, ?5 the work's event
// ids (JSON array, in order, distinct), ?6 the events' facts (JSON array of objects),
// ?7 and on: what a statement takes of its own.

const FACT_FIELDS = [
  'i',
  'id',
  'fp',
  'ts',
  'b',
  'lv',
  'rel',
  'env',
  'pf',
  'uk',
  'cr',
  'dr',
  't',
  'et',
  'sc',
  'loc',
] as const;

type Fact = (typeof FACT_FIELDS)[number];

/**
 * The fingerprint of the issue an event of fingerprint `fp` goes to: the issue a merged
 * fingerprint was merged into (issue_merges, docs/api.md "Merging issues"), else its own.
 */
const issueFingerprint = (fp: string) =>
  `coalesce((SELECT t.fingerprint FROM issue_merges m JOIN issues t ON t.id = m.issue_id WHERE m.project_id = ?1 AND m.fingerprint = ${fp}), ${fp})`;

/**
 * The work's events that this batch inserted into seen_events and still marks, with the
 * facts a statement uses (each json_extract is compiled per statement: D1 prepares every
 * statement of a batch).
 */
const fresh = (
  ...fields: Fact[]
) => `f AS (SELECT ${fields.map((k) => `${k === 'fp' ? issueFingerprint(`json_extract(j.value, '$.fp')`) : `json_extract(j.value, '$.${k}')`} AS "${k}"`).join(', ')}
  FROM json_each(?6) j JOIN seen_events s ON s.project_id = ?1 AND s.event_id = json_extract(j.value, '$.id') AND s.stored_id = ?3)`;

/** The regression rule: an event `f` against the issue `i`. */
const REGRESSES_SQL = toSql(REGRESSES, {
  release: 'f.rel',
  ts: 'f.ts',
  resolvedAt: 'coalesce(i.resolved_at, 0)',
  releaseFirstSeen: '(SELECT ir.first_seen FROM issue_releases ir WHERE ir.issue_id = i.id AND ir.release = f.rel)',
});

/** The issues of the work's fingerprints (the unique index). */
const WORK_ISSUES = `project_id = ?1 AND fingerprint IN (SELECT ${issueFingerprint(`json_extract(value, '$.fp')`)} FROM json_each(?6))`;

/** The project exists and every event id of the work is now seen: the work was not refused. */
const ACCEPTED = `EXISTS (SELECT 1 FROM projects WHERE id = ?1)
  AND NOT EXISTS (SELECT 1 FROM json_each(?5) j WHERE NOT EXISTS (SELECT 1 FROM seen_events s WHERE s.project_id = ?1 AND s.event_id = j.value))`;

/** The events this batch stores (marked after sampling), with their new rows. */
const STORED = `st AS (SELECT e.id, e.timestamp AS ts, e.issue_id FROM seen_events s
  JOIN events e ON e.id = (SELECT max(x.id) FROM events x WHERE x.project_id = ?1 AND x.event_id = s.event_id)
  WHERE s.project_id = ?1 AND s.event_id IN (SELECT value FROM json_each(?5)) AND s.stored_id = ?3)`;

const SQL = {
  /** What the quota decision sees (same snapshot as the next statement: one transaction). */
  report: `SELECT (SELECT count(*) FROM projects WHERE id = ?1) AS project,
    (SELECT count(*) FROM json_each(?5) j WHERE NOT EXISTS (SELECT 1 FROM seen_events s WHERE s.project_id = ?1 AND s.event_id = j.value)) AS fresh`,

  seen: `INSERT INTO seen_events (project_id, event_id, received_at, stored_id)
    SELECT ?1, j.value, ?2, ?3 FROM json_each(?5) j, projects p
    WHERE p.id = ?1
      AND NOT EXISTS (SELECT 1 FROM seen_events s WHERE s.project_id = ?1 AND s.event_id = j.value)
      AND ${toSql(QUOTA_ACCEPTS, {
        quota: 'p.daily_quota',
        used: 'coalesce((SELECT u.events FROM daily_usage u WHERE u.project_id = ?1 AND u.day = ?4), 0)',
        fresh:
          '(SELECT count(*) FROM json_each(?5) k WHERE NOT EXISTS (SELECT 1 FROM seen_events s WHERE s.project_id = ?1 AND s.event_id = k.value))',
      })}
    ORDER BY j.key
    ON CONFLICT DO NOTHING
    RETURNING event_id`,

  usage: `INSERT INTO daily_usage (project_id, day, events)
    SELECT ?1, ?4, n FROM (SELECT count(*) AS n FROM seen_events s WHERE s.project_id = ?1 AND s.event_id IN (SELECT value FROM json_each(?5)) AND s.stored_id = ?3) WHERE n > 0
    ON CONFLICT (project_id, day) DO UPDATE SET events = daily_usage.events + excluded.events`,

  issues: `WITH ${fresh('i', 'fp', 'ts', 'rel', 't', 'lv', 'et', 'sc', 'loc', 'pf')},
    a AS (SELECT f.*, row_number() OVER (PARTITION BY f.fp ORDER BY f.i) AS k, count(*) OVER w AS n, min(f.ts) OVER w AS fs, max(f.ts) OVER w AS ls,
        first_value(f.rel) OVER (PARTITION BY f.fp ORDER BY f.ts, f.i) AS frel,
        first_value(f.rel) OVER l AS lrel, first_value(f.t) OVER l AS lt, first_value(f.lv) OVER l AS llv, first_value(f.et) OVER l AS let,
        first_value(f.sc) OVER l AS lsc, first_value(f.loc) OVER l AS lloc, first_value(f.pf) OVER l AS lpf
      FROM f WINDOW w AS (PARTITION BY f.fp), l AS (PARTITION BY f.fp ORDER BY f.ts DESC, f.i DESC))
    INSERT INTO issues (project_id, fingerprint, title, level, error_type, screen, location, platform, status, event_count, stored_count, users,
      first_seen, last_seen, first_seen_id, last_seen_id, first_release, last_release, resolved_release, resolved_at, regressed_at, created_at, updated_at)
    SELECT ?1, a.fp, a.lt, a.llv, a.let, a.lsc, a.lloc, a.lpf, 'unresolved', a.n, 0, 0, a.fs, a.ls, NULL, ?3, a.frel, a.lrel, NULL, NULL,
      CASE WHEN i.status = 'resolved' AND EXISTS (SELECT 1 FROM f WHERE f.fp = a.fp AND ${REGRESSES_SQL}) THEN ?3 END, ?2, ?2
    FROM a LEFT JOIN issues i ON i.project_id = ?1 AND i.fingerprint = a.fp
    WHERE a.k = 1 ORDER BY a.i
    ON CONFLICT (project_id, fingerprint) DO UPDATE SET
      event_count = issues.event_count + excluded.event_count,
      title = CASE WHEN excluded.last_seen >= issues.last_seen THEN excluded.title ELSE issues.title END,
      level = CASE WHEN excluded.last_seen >= issues.last_seen THEN excluded.level ELSE issues.level END,
      error_type = CASE WHEN excluded.last_seen >= issues.last_seen THEN excluded.error_type ELSE issues.error_type END,
      screen = CASE WHEN excluded.last_seen >= issues.last_seen THEN excluded.screen ELSE issues.screen END,
      location = CASE WHEN excluded.last_seen >= issues.last_seen THEN excluded.location ELSE issues.location END,
      platform = CASE WHEN excluded.last_seen >= issues.last_seen THEN excluded.platform ELSE issues.platform END,
      last_release = CASE WHEN excluded.last_seen >= issues.last_seen THEN excluded.last_release ELSE issues.last_release END,
      last_seen = max(issues.last_seen, excluded.last_seen),
      first_release = CASE WHEN excluded.first_seen < issues.first_seen THEN excluded.first_release ELSE issues.first_release END,
      first_seen = min(issues.first_seen, excluded.first_seen),
      status = CASE WHEN excluded.regressed_at IS NOT NULL AND issues.status = 'resolved' THEN 'regression' ELSE issues.status END,
      regressed_at = CASE WHEN excluded.regressed_at IS NOT NULL AND issues.status = 'resolved' THEN excluded.regressed_at ELSE issues.regressed_at END,
      updated_at = max(issues.updated_at, excluded.updated_at)`,

  /** The issues this batch created or flipped, with the release of the event that did it. */
  changed: `WITH ${fresh('i', 'fp', 'ts', 'rel', 'env')},
    c AS (SELECT i.id, i.title, i.fingerprint, i.level, i.event_count, i.first_seen, CASE WHEN i.last_seen_id = ?3 THEN 'new_issue' ELSE 'regression' END AS kind,
        CASE WHEN i.last_seen_id = ?3 THEN (SELECT f.rel FROM f WHERE f.fp = i.fingerprint ORDER BY f.i LIMIT 1)
          ELSE (SELECT f.rel FROM f WHERE f.fp = i.fingerprint AND ${REGRESSES_SQL} ORDER BY f.i LIMIT 1) END AS rel,
        CASE WHEN i.last_seen_id = ?3 THEN (SELECT f.env FROM f WHERE f.fp = i.fingerprint ORDER BY f.i LIMIT 1)
          ELSE (SELECT f.env FROM f WHERE f.fp = i.fingerprint AND ${REGRESSES_SQL} ORDER BY f.i LIMIT 1) END AS env,
        (SELECT min(f.i) FROM f WHERE f.fp = i.fingerprint) AS ord
      FROM issues i WHERE i.project_id = ?1 AND i.fingerprint IN (SELECT ${issueFingerprint(`json_extract(value, '$.fp')`)} FROM json_each(?6)) AND (i.last_seen_id = ?3 OR i.regressed_at = ?3))`,

  issueUsersCount: `WITH ${fresh('fp', 'uk')}, k AS (SELECT DISTINCT f.fp, f.uk FROM f WHERE f.uk IS NOT NULL)
    UPDATE issues SET users = users + (SELECT count(*) FROM k WHERE k.fp = issues.fingerprint
      AND NOT EXISTS (SELECT 1 FROM issue_users u WHERE u.issue_id = issues.id AND u.user_key = k.uk))
    WHERE project_id = ?1 AND fingerprint IN (SELECT fp FROM k)`,

  issueUsers: `WITH ${fresh('fp', 'uk')}
    INSERT INTO issue_users (issue_id, user_key)
    SELECT DISTINCT i.id, f.uk FROM f JOIN issues i ON i.project_id = ?1 AND i.fingerprint = f.fp WHERE f.uk IS NOT NULL
    ON CONFLICT DO NOTHING`,

  issueReleases: `WITH ${fresh('fp', 'rel', 'ts')}
    INSERT INTO issue_releases (issue_id, release, first_seen)
    SELECT i.id, f.rel, min(f.ts) FROM f JOIN issues i ON i.project_id = ?1 AND i.fingerprint = f.fp WHERE f.rel <> '' GROUP BY i.id, f.rel
    ON CONFLICT (issue_id, release) DO UPDATE SET first_seen = excluded.first_seen WHERE excluded.first_seen < issue_releases.first_seen`,

  issueHourly: `WITH ${fresh('fp', 'b')}
    INSERT INTO issue_hourly (issue_id, bucket, events)
    SELECT i.id, f.b, count(*) FROM f JOIN issues i ON i.project_id = ?1 AND i.fingerprint = f.fp WHERE true GROUP BY i.id, f.b
    ON CONFLICT (issue_id, bucket) DO UPDATE SET events = issue_hourly.events + excluded.events`,

  issueEnvironmentHourly: `WITH ${fresh('fp', 'b', 'env')}
    INSERT INTO issue_environment_hourly (issue_id, environment, bucket, events)
    SELECT i.id, f.env, f.b, count(*) FROM f JOIN issues i ON i.project_id = ?1 AND i.fingerprint = f.fp WHERE true GROUP BY i.id, f.env, f.b
    ON CONFLICT (issue_id, environment, bucket) DO UPDATE SET events = issue_environment_hourly.events + excluded.events`,

  /** plan.ts's snoozeEnded on the work's issues, counted by now: the activity first, then the status. */
  snoozeEndedChanges: `INSERT INTO issue_changes (project_id, issue_id, kind, at, release)
    SELECT ?1, id, 'snooze_ended', ?2, last_release FROM issues WHERE ${WORK_ISSUES} AND ${snoozeEndedSql('?2')} ORDER BY id`,
  snoozeEnded: `UPDATE issues SET status = 'unresolved', updated_at = max(updated_at, ?2) WHERE ${WORK_ISSUES} AND ${snoozeEndedSql('?2')}`,

  projectHourly: `WITH ${fresh('b', 'rel', 'cr', 'lv')}
    INSERT INTO project_hourly (project_id, bucket, release, events, crashes, errors, fatal, error, warning, info, debug)
    SELECT ?1, f.b, f.rel, count(*), sum(f.cr), sum(f.cr = 0 AND f.lv = 'error'), sum(f.lv = 'fatal'), sum(f.lv = 'error'), sum(f.lv = 'warning'),
      sum(f.lv = 'info'), sum(f.lv = 'debug')
    FROM f WHERE true GROUP BY f.b, f.rel
    ON CONFLICT (project_id, bucket, release) DO UPDATE SET events = project_hourly.events + excluded.events,
      crashes = project_hourly.crashes + excluded.crashes, errors = project_hourly.errors + excluded.errors,
      fatal = project_hourly.fatal + excluded.fatal, error = project_hourly.error + excluded.error,
      warning = project_hourly.warning + excluded.warning, info = project_hourly.info + excluded.info, debug = project_hourly.debug + excluded.debug`,

  releases: `WITH ${fresh('rel', 'ts', 'pf')}
    INSERT INTO releases (project_id, release, first_seen, last_seen, platforms)
    SELECT ?1, f.rel, min(f.ts), max(f.ts),
      (SELECT json_group_array(p) FROM (SELECT DISTINCT g.pf AS p FROM f g WHERE g.rel = f.rel AND g.pf <> '' ORDER BY 1))
    FROM f WHERE f.rel <> '' GROUP BY f.rel
    ON CONFLICT (project_id, release) DO UPDATE SET
      first_seen = min(releases.first_seen, excluded.first_seen),
      last_seen = max(releases.last_seen, excluded.last_seen),
      platforms = (SELECT json_group_array(p) FROM (
        SELECT value AS p FROM json_each(CASE WHEN json_valid(releases.platforms) THEN releases.platforms ELSE '[]' END) WHERE type = 'text'
        UNION SELECT value FROM json_each(excluded.platforms) ORDER BY 1))`,

  /** The sampling rule: the rank of the event in its issue's event_count (already counted). */
  sample: `WITH ${fresh('i', 'id', 'fp', 'cr', 'dr')},
    r AS (SELECT f.id, f.cr, f.dr, i.event_count - count(*) OVER (PARTITION BY f.fp) + row_number() OVER (PARTITION BY f.fp ORDER BY f.i) AS n
      FROM f JOIN issues i ON i.project_id = ?1 AND i.fingerprint = f.fp)
    UPDATE seen_events SET stored_id = NULL
    WHERE project_id = ?1 AND stored_id = ?3 AND event_id IN (SELECT r.id FROM r, projects p WHERE p.id = ?1
      AND NOT ${toSql(KEEPS_EVENT, { crash: 'r.cr', rank: 'r.n', keepFirst: 'p.sample_keep_first', rate: 'p.sample_rate', draw: 'r.dr' })})`,

  /**
   * ?7 the chunk's index, ?8 its blob (empty when an object holds it), ?9 the event ids it
   * holds (JSON), ?10 its object's key or NULL, ?11 the object's length or NULL (storage_usage counts it).
   */
  chunk: `INSERT INTO payload_chunks (project_id, received_at, data, r2_key, object_bytes)
    SELECT ?1, ?3 - ?7, ?8, ?10, ?11 WHERE EXISTS (SELECT 1 FROM json_each(?9) m JOIN seen_events s ON s.project_id = ?1 AND s.event_id = m.value AND s.stored_id = ?3)`,

  /** ?7 the rows (JSON), a part of the work's events. */
  events: `WITH r AS (SELECT json_extract(value, '$.i') AS i, json_extract(value, '$.row') AS row FROM json_each(?7))
    INSERT INTO events (project_id, issue_id, event_id, fingerprint, timestamp, received_at, level, platform, release, dist, environment,
      user_id, user_email, user_username, user_ip, device_id, device_model, os_name, os_version, screen, error_type, error_location,
      title, message, is_crash, sdk_name, tags, detail, raw, payload_chunk, payload_start, payload_length, symbolicated)
    SELECT ?1, i.id, ${EVENT_FIELD_NAMES.map((k) => (k === 'fingerprint' ? 'i.fingerprint' : `json_extract(r.row, '$.${k}')`)).join(', ')}, X'', X'',
      (SELECT c.id FROM payload_chunks c WHERE c.received_at = ?3 - json_extract(r.row, '$.chunk')),
      json_extract(r.row, '$.start'), json_extract(r.row, '$.length'), json_extract(r.row, '$.symbolicated')
    FROM r JOIN seen_events s ON s.project_id = ?1 AND s.event_id = json_extract(r.row, '$.event_id') AND s.stored_id = ?3
    JOIN issues i ON i.project_id = ?1 AND i.fingerprint = ${issueFingerprint(`json_extract(r.row, '$.fingerprint')`)}
    ORDER BY r.i`,

  /**
   * ?7 [event_id, tags JSON] of a part of the work's events with tags: the rows are the
   * events' tags (their own rows leave them out, src/store/event-text.ts), inserted in the
   * JSON's order, which readers take back from the rowid.
   */
  tags: `WITH ${STORED}, g AS (SELECT json_extract(value, '$[0]') AS id, json_extract(value, '$[1]') AS tags FROM json_each(?7))
    INSERT INTO event_tags (project_id, event_id, key, value)
    SELECT ?1, st.id, t.key, t.value FROM st JOIN events e ON e.id = st.id JOIN g ON g.id = e.event_id, json_each(g.tags) t ORDER BY st.id, t.id`,

  /** stored_count, first/last_seen_id by event time (src/store/write-set.ts linkStoredEvents), and the issue markers replaced. */
  link: `WITH ${STORED}
    UPDATE issues SET
      stored_count = stored_count + (SELECT count(*) FROM st WHERE st.issue_id = issues.id),
      first_seen_id = coalesce((SELECT st.id FROM st WHERE st.issue_id = issues.id
          AND st.ts < coalesce((SELECT e.timestamp FROM events e WHERE e.id = issues.first_seen_id), CASE WHEN issues.first_seen_id IS NULL THEN 9e18 ELSE -9e18 END)
          ORDER BY st.ts, st.id LIMIT 1), first_seen_id),
      last_seen_id = coalesce((SELECT st.id FROM st WHERE st.issue_id = issues.id
          AND st.ts >= coalesce((SELECT e.timestamp FROM events e WHERE e.id = issues.last_seen_id AND issues.last_seen_id > 0), -9e18)
          ORDER BY st.ts DESC, st.id DESC LIMIT 1), CASE WHEN last_seen_id < 0 THEN NULL ELSE last_seen_id END),
      regressed_at = CASE WHEN regressed_at = ?3 THEN ?2 ELSE regressed_at END
    WHERE ${WORK_ISSUES}`,

  seenLink: `UPDATE seen_events SET stored_id = (SELECT max(e.id) FROM events e WHERE e.project_id = ?1 AND e.event_id = seen_events.event_id)
    WHERE project_id = ?1 AND event_id IN (SELECT value FROM json_each(?5)) AND stored_id = ?3`,

  /** ?7 the number of chunks. */
  chunksDated: `UPDATE payload_chunks SET received_at = ?2 WHERE received_at <= ?3 AND received_at > ?3 - ?7`,

  /** ?7 the folded session updates (JSON), ?8 the aggregates' buckets (JSON). */
  sessionHourly: `WITH u AS (SELECT json_extract(value, '$.sid') AS sid, json_extract(value, '$.rel') AS rel, json_extract(value, '$.started') AS started,
        json_extract(value, '$.status') AS status, json_extract(value, '$.errors') AS errors, json_extract(value, '$.ts') AS ts,
        json_extract(value, '$.anr') AS anr FROM json_each(?7)),
      c AS (SELECT coalesce(x.release, u.rel) AS rel, ${hourBucketSql('coalesce(x.started, u.started)')} AS b,
          CASE WHEN x.sid IS NULL THEN 'none' ELSE ${sessionClassSql('x.status', 'x.errors')} END AS before,
          CASE WHEN x.sid IS NULL OR u.ts >= x.updated_at THEN ${sessionClassSql('u.status', 'u.errors')} ELSE
            CASE WHEN x.sid IS NULL THEN 'none' ELSE ${sessionClassSql('x.status', 'x.errors')} END END AS after,
          coalesce(x.anr, 0) AS before_anr,
          CASE WHEN x.sid IS NULL OR u.ts >= x.updated_at THEN u.anr ELSE x.anr END AS after_anr
        FROM u LEFT JOIN sessions x ON x.project_id = ?1 AND x.sid = u.sid),
      d AS (SELECT rel, b, (before = 'none') AS total, (after = 'crashed') - (before = 'crashed') AS crashed, (after = 'errored') - (before = 'errored') AS errored,
          after_anr - before_anr AS anr FROM c
        UNION ALL SELECT json_extract(value, '$.rel'), json_extract(value, '$.b'), json_extract(value, '$.total'), json_extract(value, '$.crashed'),
          json_extract(value, '$.errored'), 0 FROM json_each(?8))
    INSERT INTO session_hourly (project_id, release, bucket, total, crashed, errored, anr)
    SELECT ?1, rel, b, sum(total), sum(crashed), sum(errored), sum(anr) FROM d WHERE ${ACCEPTED}
    GROUP BY rel, b HAVING sum(total) <> 0 OR sum(crashed) <> 0 OR sum(errored) <> 0 OR sum(anr) <> 0
    ON CONFLICT (project_id, release, bucket) DO UPDATE SET total = session_hourly.total + excluded.total,
      crashed = session_hourly.crashed + excluded.crashed, errored = session_hourly.errored + excluded.errored,
      anr = session_hourly.anr + excluded.anr`,

  /** ?7 the folded session updates (JSON). */
  sessions: `INSERT INTO sessions (project_id, sid, did, release, environment, started, status, errors, updated_at, anr)
    SELECT ?1, json_extract(value, '$.sid'), json_extract(value, '$.did'), json_extract(value, '$.rel'), json_extract(value, '$.env'),
      json_extract(value, '$.started'), json_extract(value, '$.status'), json_extract(value, '$.errors'), json_extract(value, '$.ts'), json_extract(value, '$.anr')
    FROM json_each(?7) WHERE ${ACCEPTED}
    ON CONFLICT (project_id, sid) DO UPDATE SET did = coalesce(sessions.did, excluded.did), status = excluded.status,
      errors = excluded.errors, updated_at = excluded.updated_at, anr = excluded.anr
    WHERE excluded.updated_at >= sessions.updated_at`,

  /** ?7 the folded session updates (JSON); after `sessions`, so it reads each session as it now stands. */
  sessionUsers: `INSERT INTO session_users (project_id, release, bucket, did, crashed)
    SELECT ?1, s.release, ${hourBucketSql('s.started')}, s.did, max(CASE WHEN ${sessionClassSql('s.status', 's.errors')} = 'crashed' THEN 1 ELSE 0 END)
    FROM json_each(?7) u JOIN sessions s ON s.project_id = ?1 AND s.sid = json_extract(u.value, '$.sid')
    WHERE s.did IS NOT NULL AND ${ACCEPTED}
    GROUP BY s.release, ${hourBucketSql('s.started')}, s.did
    ON CONFLICT (project_id, release, bucket, did) DO UPDATE SET crashed = max(session_users.crashed, excluded.crashed)`,
};

const CHANGES_SQL = `${SQL.changed}
  INSERT INTO issue_changes (project_id, issue_id, kind, at, release) SELECT ?1, c.id, c.kind, ?2, coalesce(c.rel, '') FROM c WHERE true ORDER BY c.ord`;
const OUTBOX_SQL = `${SQL.changed}
  INSERT INTO alert_outbox (project_id, type, issue_id, payload, state, created_at)
  SELECT ?1, c.kind, c.id, json_object('title', c.title, 'fingerprint', c.fingerprint, 'level', c.level, 'event_count', c.event_count, 'release', coalesce(c.rel, ''), 'environment', coalesce(c.env, ''), 'first_seen', c.first_seen),
    '${OUTBOX_PENDING}', ?2 FROM c WHERE true ORDER BY c.ord`;

/** Splits JSON items into arrays whose text stays within `max` bytes; one item past it is refused. */
function jsonParts(items: string[], max: number, what: string): string[] {
  const parts: string[] = [];
  let current: string[] = [];
  let bytes = 2;
  for (const item of items) {
    const size = utf8Bytes(item) + 1;
    if (size + 2 > max)
      throw new PayloadTooLargeError(
        `${what} is ${size} bytes once stored; the serverless edition stores at most ${max} bytes per value`,
      );
    if (current.length > 0 && bytes + size > max) {
      parts.push(`[${current.join(',')}]`);
      current = [];
      bytes = 2;
    }
    current.push(item);
    bytes += size;
  }
  if (current.length > 0) parts.push(`[${current.join(',')}]`);
  return parts;
}

function eventRow(
  e: EventInput,
  receivedAt: number,
  slot: { chunk: number; start: number; length: number },
): Record<string, unknown> {
  return {
    ...eventFields(e, receivedAt),
    // Made again from error_type and message, the tags from event_tags, by every reader (src/store/event-text.ts).
    title: storedTitle(e.title, e.errorType, e.message),
    tags: e.tags.length > 0 ? TAGS_IN_EVENT_TAGS : e.tagsJson,
    chunk: slot.chunk,
    start: slot.start,
    length: slot.length,
    symbolicated: e.symbolicated,
  };
}

/** A work's session updates folded per sid as plan.ts applies them in order (the latest wins). */
function foldSessions(work: PreparedWork) {
  const bySid = new Map<
    string,
    {
      sid: string;
      did: string | null;
      rel: string;
      env: string;
      started: number;
      status: string;
      errors: number;
      ts: number;
      anr: number;
    }
  >();
  for (const u of work.sessions) {
    const s = bySid.get(u.sid);
    if (!s) {
      bySid.set(u.sid, {
        sid: u.sid,
        did: u.did,
        rel: u.release,
        env: u.environment,
        started: u.started,
        status: u.status,
        errors: u.errors,
        ts: u.timestamp,
        anr: u.anr,
      });
      continue;
    }
    if (u.timestamp < s.ts) continue;
    s.status = u.status;
    s.errors = u.errors;
    s.anr = u.anr;
    s.ts = u.timestamp;
    if (s.did === null && u.did !== null) s.did = u.did;
  }
  return [...bySid.values()];
}

function maxParameter(text: string): number {
  let max = 0;
  for (const m of text.matchAll(/\?(\d+)/g)) max = Math.max(max, Number(m[1]));
  return max;
}

export interface D1IngestOptions {
  /** The marker and the sampling draws (one per event, used only when sampling needs a draw). */
  random: Random;
  /** The edition's blob codec for payload chunks (Workers: zlib through fflate). */
  compress: (bytes: Uint8Array) => Uint8Array;
  /**
   * With a bucket bound: a fresh object key for a chunk received at the given time. The
   * chunks then go to `objects` (written by the caller first) and their rows keep the key
   * and empty data, so D1's value limit does not bound a payload.
   */
  objectKey?: (receivedAt: number) => string;
}

/** The statements that commit `work` (see the header), for one `db.batch()`. */
export function buildD1IngestCommit(work: PreparedWork, options: D1IngestOptions): D1IngestCommit {
  const { random } = options;
  const marker = randomMarker(random);
  const pid = work.projectId;
  const at = work.receivedAt;
  // Duplicates within the work: the first occurrence counts (plan.ts).
  const seenIds = new Set<string>();
  const events: EventInput[] = [];
  for (const e of work.events) {
    if (seenIds.has(e.eventId)) continue;
    seenIds.add(e.eventId);
    events.push(e);
  }
  const ids = JSON.stringify(events.map((e) => e.eventId));
  const facts = JSON.stringify(
    events.map((e, i) => ({
      i,
      id: e.eventId,
      fp: e.fingerprint,
      ts: e.timestamp,
      b: hourBucket(e.timestamp),
      lv: e.level,
      rel: e.release,
      env: e.environment,
      pf: e.platform,
      uk: e.userKey,
      cr: e.isCrash ? 1 : 0,
      dr: random(),
      t: e.title,
      et: e.errorType,
      sc: e.screen,
      loc: e.location,
    })),
  );
  if (utf8Bytes(facts) > JSON_PART_BYTES) {
    throw new PayloadTooLargeError(
      `the envelope's events take ${utf8Bytes(facts)} bytes of titles and keys; the serverless edition takes at most ${JSON_PART_BYTES}`,
    );
  }
  const common: unknown[] = [pid, at, marker, utcDay(at), ids, facts];
  const statements: CompiledQuery[] = [];
  const objects: { key: string; data: Uint8Array }[] = [];
  const add = (text: string, own: unknown[] = []) => {
    const all = [...common, ...own];
    statements.push(CompiledQuery.raw(text, all.slice(0, Math.max(maxParameter(text), 0))));
    return statements.length - 1;
  };

  let report = -1;
  let seen = -1;
  let outbox = -1;
  if (events.length > 0) {
    report = add(SQL.report);
    seen = add(SQL.seen);
    add(SQL.usage);
    add(SQL.issues);
    add(CHANGES_SQL);
    outbox = add(OUTBOX_SQL);
    if (events.some((e) => e.userKey !== null)) {
      add(SQL.issueUsersCount);
      add(SQL.issueUsers);
    }
    const hasRelease = events.some((e) => e.release !== '');
    if (hasRelease) add(SQL.issueReleases);
    add(SQL.issueHourly);
    add(SQL.issueEnvironmentHourly);
    add(SQL.projectHourly);
    if (hasRelease) add(SQL.releases);
    add(SQL.sample);

    const { chunks, slots } = packPayloads(
      events.map((e) => ({ projectId: pid, receivedAt: at, payload: rawSource(e) })),
      options.compress,
    );
    for (const [k, chunk] of chunks.entries()) {
      const members = JSON.stringify(chunk.members.map((m) => events[m].eventId));
      if (options.objectKey) {
        const key = options.objectKey(at);
        objects.push({ key, data: chunk.data });
        add(SQL.chunk, [k, new Uint8Array(0), members, key, chunk.data.byteLength]);
        continue;
      }
      if (chunk.data.byteLength > D1_MAX_VALUE_BYTES) {
        throw new PayloadTooLargeError(
          `an event's payload is ${chunk.data.byteLength} bytes compressed; the serverless edition stores at most ${D1_MAX_VALUE_BYTES} bytes (D1's value limit)`,
        );
      }
      add(SQL.chunk, [k, chunk.data, members, null, null]);
    }
    const rows = events.map((e, i) => JSON.stringify({ i, row: eventRow(e, at, slots[i]) }));
    for (const part of jsonParts(rows, JSON_PART_BYTES, 'an event')) add(SQL.events, [part]);
    const tagged = events.filter((e) => e.tags.length > 0).map((e) => JSON.stringify([e.eventId, e.tagsJson]));
    for (const part of jsonParts(tagged, JSON_PART_BYTES, "an event's tags")) add(SQL.tags, [part]);
    add(SQL.link);
    add(SQL.seenLink);
    add(SQL.snoozeEndedChanges);
    add(SQL.snoozeEnded);
    if (chunks.length > 0) add(SQL.chunksDated, [chunks.length]);
  }

  const sessions = foldSessions(work);
  const aggregates = new Map<string, { rel: string; b: number; total: number; crashed: number; errored: number }>();
  for (const a of work.aggregates) {
    if (a.total === 0) continue;
    const b = hourBucket(a.started);
    const key = `${b}:${a.release}`;
    const acc = aggregates.get(key) ?? { rel: a.release, b, total: 0, crashed: 0, errored: 0 };
    acc.total += a.total;
    acc.crashed += a.crashed;
    acc.errored += a.errored;
    aggregates.set(key, acc);
  }
  if (sessions.length > 0 || aggregates.size > 0) {
    const folded = JSON.stringify(sessions);
    const buckets = JSON.stringify([...aggregates.values()]);
    if (utf8Bytes(folded) > JSON_PART_BYTES || utf8Bytes(buckets) > JSON_PART_BYTES)
      throw new PayloadTooLargeError('the envelope carries too many session updates for one request');
    add(SQL.sessionHourly, [folded, buckets]);
    if (sessions.length > 0) {
      add(SQL.sessions, [folded]);
      add(SQL.sessionUsers, [folded]);
    }
  }

  return {
    statements,
    objects,
    outcome(results) {
      if (report < 0) return { kind: 'ok' };
      const r = results[report].rows[0] ?? {};
      const inserted = results[seen].rows.length;
      if (Number(r.project) > 0 && Number(r.fresh) > 0 && inserted === 0) {
        return { kind: 'quota_exceeded', retryAfterSeconds: secondsToNextUtcMidnight(at) };
      }
      return { kind: 'ok' };
    },
    alertsRecorded(results) {
      return outbox < 0 ? 0 : Number(results[outbox]?.numAffectedRows ?? 0);
    },
  };
}
