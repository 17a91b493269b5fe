// Versioned, forward-only schema migrations. Kysely's Migrator records them in
// `kysely_migration` and serialises concurrent runs (an advisory lock on
// PostgreSQL, the single writer lock on SQLite). Never edit a shipped migration:
// add a new one with the next number.
import { type Kysely, type Migration, type MigrationProvider, sql } from 'kysely';
import type { Dialect } from './database.js';
import { LAST_SEEN_MINUTE_MS } from './schema.js';

// Untyped on purpose: each migration works on the schema of its time, not on today's
// `Database` (src/store/schema.ts), which describes where the last one leaves it.
type Db = Kysely<any>;

function idType(dialect: Dialect) {
  return dialect === 'postgres' ? 'bigserial' : 'integer';
}

/** Epoch-millisecond and counter columns need 64 bits on PostgreSQL. */
const big = 'bigint' as const;

function m001(dialect: Dialect): Migration {
  const id = idType(dialect);
  const blob = dialect === 'postgres' ? sql`bytea` : sql`blob`;
  const real = dialect === 'postgres' ? sql`double precision` : sql`real`;
  const auto = (c: any) => (dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement());
  return {
    async up(db: Db) {
      await db.schema
        .createTable('projects')
        .addColumn('id', id, auto)
        .addColumn('slug', 'text', (c) => c.notNull().unique())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('platform', 'text', (c) => c.notNull())
        .addColumn('dsn_key', 'text', (c) => c.notNull().unique())
        .addColumn('sample_keep_first', big, (c) => c.notNull())
        .addColumn('sample_rate', real, (c) => c.notNull())
        .addColumn('daily_quota', big, (c) => c.notNull())
        .addColumn('created_at', big, (c) => c.notNull())
        .execute();

      await db.schema
        .createTable('issues')
        .addColumn('id', id, auto)
        .addColumn('project_id', big, (c) => c.notNull().references('projects.id').onDelete('cascade'))
        .addColumn('fingerprint', 'text', (c) => c.notNull())
        .addColumn('title', 'text', (c) => c.notNull())
        .addColumn('level', 'text', (c) => c.notNull())
        .addColumn('error_type', 'text', (c) => c.notNull())
        .addColumn('screen', 'text', (c) => c.notNull())
        .addColumn('location', 'text', (c) => c.notNull())
        .addColumn('platform', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('event_count', big, (c) => c.notNull())
        .addColumn('stored_count', big, (c) => c.notNull())
        .addColumn('users', big, (c) => c.notNull())
        .addColumn('first_seen', big, (c) => c.notNull())
        .addColumn('last_seen', big, (c) => c.notNull())
        .addColumn('first_seen_id', big)
        .addColumn('last_seen_id', big)
        .addColumn('first_release', 'text', (c) => c.notNull())
        .addColumn('last_release', 'text', (c) => c.notNull())
        .addColumn('resolved_release', 'text')
        .addColumn('resolved_at', big)
        .addColumn('regressed_at', big)
        .addColumn('created_at', big, (c) => c.notNull())
        .addColumn('updated_at', big, (c) => c.notNull())
        .addUniqueConstraint('issues_project_fingerprint', ['project_id', 'fingerprint'])
        .execute();
      await db.schema
        .createIndex('issues_project_last_seen')
        .on('issues')
        .columns(['project_id', 'last_seen'])
        .execute();
      await db.schema
        .createIndex('issues_project_first_seen')
        .on('issues')
        .columns(['project_id', 'first_seen'])
        .execute();

      await db.schema
        .createTable('issue_releases')
        .addColumn('issue_id', big, (c) => c.notNull().references('issues.id').onDelete('cascade'))
        .addColumn('release', 'text', (c) => c.notNull())
        .addColumn('first_seen', big, (c) => c.notNull())
        .addPrimaryKeyConstraint('issue_releases_pk', ['issue_id', 'release'])
        .execute();

      await db.schema
        .createTable('issue_users')
        .addColumn('issue_id', big, (c) => c.notNull().references('issues.id').onDelete('cascade'))
        .addColumn('user_key', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('issue_users_pk', ['issue_id', 'user_key'])
        .execute();

      await db.schema
        .createTable('issue_hourly')
        .addColumn('issue_id', big, (c) => c.notNull().references('issues.id').onDelete('cascade'))
        .addColumn('bucket', big, (c) => c.notNull())
        .addColumn('events', big, (c) => c.notNull())
        .addPrimaryKeyConstraint('issue_hourly_pk', ['issue_id', 'bucket'])
        .execute();

      await db.schema
        .createTable('issue_changes')
        .addColumn('id', id, auto)
        .addColumn('project_id', big, (c) => c.notNull().references('projects.id').onDelete('cascade'))
        .addColumn('issue_id', big, (c) => c.notNull().references('issues.id').onDelete('cascade'))
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('at', big, (c) => c.notNull())
        .addColumn('release', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('issue_changes_project_kind_at')
        .on('issue_changes')
        .columns(['project_id', 'kind', 'at'])
        .execute();
      await db.schema.createIndex('issue_changes_issue').on('issue_changes').column('issue_id').execute();

      await db.schema
        .createTable('events')
        .addColumn('id', id, auto)
        .addColumn('project_id', big, (c) => c.notNull().references('projects.id').onDelete('cascade'))
        .addColumn('issue_id', big, (c) => c.notNull().references('issues.id').onDelete('cascade'))
        .addColumn('event_id', 'text', (c) => c.notNull())
        .addColumn('fingerprint', 'text', (c) => c.notNull())
        .addColumn('timestamp', big, (c) => c.notNull())
        .addColumn('received_at', big, (c) => c.notNull())
        .addColumn('level', 'text', (c) => c.notNull())
        .addColumn('platform', 'text', (c) => c.notNull())
        .addColumn('release', 'text', (c) => c.notNull())
        .addColumn('dist', 'text', (c) => c.notNull())
        .addColumn('environment', 'text', (c) => c.notNull())
        .addColumn('user_id', 'text')
        .addColumn('user_email', 'text')
        .addColumn('user_username', 'text')
        .addColumn('user_ip', 'text')
        .addColumn('device_id', 'text')
        .addColumn('device_model', 'text')
        .addColumn('os_name', 'text')
        .addColumn('os_version', 'text')
        .addColumn('screen', 'text', (c) => c.notNull())
        .addColumn('error_type', 'text', (c) => c.notNull())
        .addColumn('error_location', 'text', (c) => c.notNull())
        .addColumn('title', 'text', (c) => c.notNull())
        .addColumn('message', 'text', (c) => c.notNull())
        .addColumn('is_crash', 'integer', (c) => c.notNull())
        .addColumn('sdk_name', 'text', (c) => c.notNull())
        .addColumn('tags', 'text', (c) => c.notNull())
        .addColumn('detail', blob, (c) => c.notNull())
        .addColumn('raw', blob, (c) => c.notNull())
        .addColumn('symbolicated', 'text')
        .execute();
      await db.schema.createIndex('events_project_event_id').on('events').columns(['project_id', 'event_id']).execute();
      await db.schema.createIndex('events_project_id').on('events').columns(['project_id', 'id']).execute();
      await db.schema.createIndex('events_issue_timestamp').on('events').columns(['issue_id', 'timestamp']).execute();
      await db.schema
        .createIndex('events_project_release')
        .on('events')
        .columns(['project_id', 'release', 'id'])
        .execute();
      await db.schema.createIndex('events_received').on('events').column('received_at').execute();

      await db.schema
        .createTable('event_tags')
        .addColumn('project_id', big, (c) => c.notNull())
        .addColumn('event_id', big, (c) => c.notNull().references('events.id').onDelete('cascade'))
        .addColumn('key', 'text', (c) => c.notNull())
        .addColumn('value', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('event_tags_lookup')
        .on('event_tags')
        .columns(['project_id', 'key', 'value', 'event_id'])
        .execute();
      await db.schema.createIndex('event_tags_event').on('event_tags').column('event_id').execute();

      await db.schema
        .createTable('seen_events')
        .addColumn('project_id', big, (c) => c.notNull().references('projects.id').onDelete('cascade'))
        .addColumn('event_id', 'text', (c) => c.notNull())
        .addColumn('received_at', big, (c) => c.notNull())
        .addPrimaryKeyConstraint('seen_events_pk', ['project_id', 'event_id'])
        .execute();
      await db.schema.createIndex('seen_events_received').on('seen_events').column('received_at').execute();

      await db.schema
        .createTable('project_hourly')
        .addColumn('project_id', big, (c) => c.notNull().references('projects.id').onDelete('cascade'))
        .addColumn('bucket', big, (c) => c.notNull())
        .addColumn('release', 'text', (c) => c.notNull())
        .addColumn('events', big, (c) => c.notNull())
        .addColumn('crashes', big, (c) => c.notNull())
        .addColumn('errors', big, (c) => c.notNull())
        .addColumn('fatal', big, (c) => c.notNull())
        .addColumn('error', big, (c) => c.notNull())
        .addColumn('warning', big, (c) => c.notNull())
        .addColumn('info', big, (c) => c.notNull())
        .addColumn('debug', big, (c) => c.notNull())
        .addPrimaryKeyConstraint('project_hourly_pk', ['project_id', 'bucket', 'release'])
        .execute();
      await db.schema
        .createIndex('project_hourly_release')
        .on('project_hourly')
        .columns(['project_id', 'release', 'bucket'])
        .execute();

      await db.schema
        .createTable('releases')
        .addColumn('project_id', big, (c) => c.notNull().references('projects.id').onDelete('cascade'))
        .addColumn('release', 'text', (c) => c.notNull())
        .addColumn('first_seen', big, (c) => c.notNull())
        .addColumn('last_seen', big, (c) => c.notNull())
        .addColumn('platforms', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('releases_pk', ['project_id', 'release'])
        .execute();

      await db.schema
        .createTable('daily_usage')
        .addColumn('project_id', big, (c) => c.notNull().references('projects.id').onDelete('cascade'))
        .addColumn('day', big, (c) => c.notNull())
        .addColumn('events', big, (c) => c.notNull())
        .addPrimaryKeyConstraint('daily_usage_pk', ['project_id', 'day'])
        .execute();

      await db.schema
        .createTable('sessions')
        .addColumn('project_id', big, (c) => c.notNull().references('projects.id').onDelete('cascade'))
        .addColumn('sid', 'text', (c) => c.notNull())
        .addColumn('did', 'text')
        .addColumn('release', 'text', (c) => c.notNull())
        .addColumn('environment', 'text', (c) => c.notNull())
        .addColumn('started', big, (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('errors', big, (c) => c.notNull())
        .addColumn('updated_at', big, (c) => c.notNull())
        .addPrimaryKeyConstraint('sessions_pk', ['project_id', 'sid'])
        .execute();
      await db.schema.createIndex('sessions_updated').on('sessions').column('updated_at').execute();

      await db.schema
        .createTable('session_hourly')
        .addColumn('project_id', big, (c) => c.notNull().references('projects.id').onDelete('cascade'))
        .addColumn('release', 'text', (c) => c.notNull())
        .addColumn('bucket', big, (c) => c.notNull())
        .addColumn('total', big, (c) => c.notNull())
        .addColumn('crashed', big, (c) => c.notNull())
        .addColumn('errored', big, (c) => c.notNull())
        .addPrimaryKeyConstraint('session_hourly_pk', ['project_id', 'release', 'bucket'])
        .execute();
      await db.schema
        .createIndex('session_hourly_project_bucket')
        .on('session_hourly')
        .columns(['project_id', 'bucket'])
        .execute();
    },
  };
}

/**
 * Indexes for the read API and retention (docs/architecture.md "Reads"):
 * an issue's events newest first by id (events list filtered by fingerprint),
 * a user's events (events list filtered by user_id), issues by first/last
 * release (release detail, issues list `release`), old issue_hourly rows
 * (retention of aggregates older than 400 days), and a release's sessions by
 * start time (the overview's crash_free: which release has the newest session).
 */
function m002(): Migration {
  return {
    async up(db: Db) {
      await db.schema.createIndex('events_issue_id').on('events').columns(['issue_id', 'id']).execute();
      await db.schema
        .createIndex('events_project_user')
        .on('events')
        .columns(['project_id', 'user_id', 'id'])
        .execute();
      await db.schema
        .createIndex('issues_project_first_release')
        .on('issues')
        .columns(['project_id', 'first_release'])
        .execute();
      await db.schema
        .createIndex('issues_project_last_release')
        .on('issues')
        .columns(['project_id', 'last_release'])
        .execute();
      await db.schema.createIndex('issue_hourly_bucket').on('issue_hourly').column('bucket').execute();
      await db.schema
        .createIndex('sessions_project_release_started')
        .on('sessions')
        .columns(['project_id', 'release', 'started'])
        .execute();
    },
  };
}

/**
 * Rate-limit windows shared by every instance on one database: how much of a key's
 * per-minute budget the instances have claimed (src/store/rate-limits.ts).
 */
function m003(): Migration {
  return {
    async up(db: Db) {
      await db.schema
        .createTable('rate_limit_windows')
        .addColumn('key', 'text', (c) => c.notNull())
        .addColumn('window_start', big, (c) => c.notNull())
        .addColumn('claimed', big, (c) => c.notNull())
        .addPrimaryKeyConstraint('rate_limit_windows_pk', ['key', 'window_start'])
        .execute();
      await db.schema.createIndex('rate_limit_windows_start').on('rate_limit_windows').column('window_start').execute();
    },
  };
}

/**
 * Leases on background jobs held in the database, so two processes on one SQLite
 * file (`faultline retention` from cron and `serve`) never run retention at once
 * (src/store/retention.ts; PostgreSQL uses an advisory lock instead).
 */
function m004(): Migration {
  return {
    async up(db: Db) {
      await db.schema
        .createTable('job_locks')
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('holder', 'text', (c) => c.notNull())
        .addColumn('expires_at', big, (c) => c.notNull())
        .execute();
    },
  };
}

/**
 * An event is found by its SDK event_id through seen_events, whose key is
 * (project_id, event_id) anyway: `stored_id` names the stored row. The events index on
 * (project_id, event_id) it replaces put a write to a random index page into every
 * stored event (random ids land anywhere in the index), about 20 µs per event of
 * SQLite ingest (measured). Existing rows are linked before the index goes.
 */
function m005(): Migration {
  return {
    async up(db: Db) {
      await db.schema.alterTable('seen_events').addColumn('stored_id', big).execute();
      await sql`
        update seen_events set stored_id = (
          select max(e.id) from events e
          where e.project_id = seen_events.project_id and e.event_id = seen_events.event_id
        )`.execute(db);
      await db.schema.dropIndex('events_project_event_id').execute();
    },
  };
}

/**
 * PostgreSQL: store the payload blobs without trying to compress them again. They are
 * Brotli already, so pglz only spent the server's CPU on every row large enough to be
 * toasted and then kept the bytes as they were; `external` still moves large values out
 * of line. Measured: +4 % ingest on PostgreSQL. Only later rows are
 * affected; nothing is rewritten. SQLite has no such setting.
 */
function m006(dialect: Dialect): Migration {
  return {
    async up(db: Db) {
      if (dialect !== 'postgres') return;
      await sql`alter table events alter column raw set storage external, alter column detail set storage external`.execute(
        db,
      );
    },
  };
}

/**
 * Drops the events index on (issue_id, timestamp). It put a write into a page of its
 * own for every issue an ingest batch touches (measured: SQLite +8 % events/s without
 * it). What it served is answered otherwise: an issue's latest and
 * oldest stored events by the issue row's last_seen_id / first_seen_id (kept by
 * ingest), the breakdown by walking events_issue_id (issue_id, id) newest first.
 */
function m007(): Migration {
  return {
    async up(db: Db) {
      await db.schema.dropIndex('events_issue_timestamp').execute();
    },
  };
}

/**
 * Event payloads stored per batch instead of per event (src/store/payloads.ts): a
 * batch's stored payloads of one project are compressed together into
 * `payload_chunks` rows of at most PAYLOAD_CHUNK_MAX_BYTES, and each event names its
 * chunk and its byte range there. One Brotli call per chunk instead of one per event
 * costs a tenth of the CPU and writes less than half the bytes (measured). Rows
 * written before keep their own blob in `events.raw`; new rows leave it empty.
 * `received_at` is the newest receive time of the chunk's events: retention deletes a
 * chunk once every event in it has expired. No foreign key from events: the chunk is
 * looked up only for an event's detail, and a check per inserted event costs ingest.
 */
function m008(dialect: Dialect): Migration {
  return {
    async up(db: Db) {
      await db.schema
        .createTable('payload_chunks')
        // SQLite assigns ids (autoincrement: never reused, so a late event can never name
        // another chunk); PostgreSQL ingest gives each chunk the id of its first event, so
        // no sequence.
        .addColumn('id', dialect === 'postgres' ? big : 'integer', (c) =>
          dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement(),
        )
        .addColumn('project_id', big, (c) => c.notNull().references('projects.id').onDelete('cascade'))
        .addColumn('received_at', big, (c) => c.notNull())
        .addColumn('data', dialect === 'postgres' ? 'bytea' : 'blob', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('payload_chunks_received').on('payload_chunks').column('received_at').execute();
      await db.schema.createIndex('payload_chunks_project').on('payload_chunks').column('project_id').execute();
      if (dialect === 'postgres')
        await sql`alter table payload_chunks alter column data set storage external`.execute(db);
      await db.schema.alterTable('events').addColumn('payload_chunk', big).execute();
      await db.schema.alterTable('events').addColumn('payload_start', big).execute();
      await db.schema.alterTable('events').addColumn('payload_length', big).execute();
    },
  };
}

/**
 * The foreign keys every ingest batch checked row by row on PostgreSQL that migration 009
 * drops: child table and constraint (PostgreSQL's default name).
 */
const INGEST_FOREIGN_KEYS: readonly [table: string, constraint: string][] = [
  ['issues', 'issues_project_id_fkey'],
  ['issue_releases', 'issue_releases_issue_id_fkey'],
  ['issue_users', 'issue_users_issue_id_fkey'],
  ['issue_hourly', 'issue_hourly_issue_id_fkey'],
  ['events', 'events_project_id_fkey'],
  ['event_tags', 'event_tags_event_id_fkey'],
  ['seen_events', 'seen_events_project_id_fkey'],
  ['project_hourly', 'project_hourly_project_id_fkey'],
  ['releases', 'releases_project_id_fkey'],
  ['daily_usage', 'daily_usage_project_id_fkey'],
  ['sessions', 'sessions_project_id_fkey'],
  ['session_hourly', 'session_hourly_project_id_fkey'],
  ['payload_chunks', 'payload_chunks_project_id_fkey'],
];

/** What migration 009's delete triggers remove: parent, the children's column naming it, children in order. */
const DELETE_CASCADES: readonly [parent: string, column: string, children: readonly string[]][] = [
  [
    'projects',
    'project_id',
    [
      'event_tags',
      'events',
      'issues',
      'seen_events',
      'project_hourly',
      'releases',
      'daily_usage',
      'sessions',
      'session_hourly',
      'payload_chunks',
    ],
  ],
  ['issues', 'issue_id', ['issue_releases', 'issue_users', 'issue_hourly']],
  ['events', 'event_id', ['event_tags']],
];

/**
 * PostgreSQL: the ingest tables' cascading foreign keys become statement-level delete
 * triggers on the parents. A foreign key checks its parent with a query per inserted
 * row; for a batch of 100 events that was about 9 ms of the writing statement's 20
 * (`auto_explain` with `log_triggers`), and ingest on PostgreSQL is as fast as that
 * statement, because batches of one project run one after another. The checks could
 * never fail: a batch writes under its project's row lock (FOR NO KEY UPDATE, which a
 * project's deletion waits for) and upserts the issues its events name in the same
 * statement. What the keys also did, removing a project's, an issue's or an event's
 * rows with it, the triggers do, one statement per child table (docs/architecture.md);
 * an issue's events still go through their key. Two kinds of key stay: issue_changes',
 * written only by people and regressions, and events → issues, the one check that
 * could fail: an issue created by a writer that does not take the project lock gets
 * another id than the one the batch gave its events, and the batch must fail rather
 * than leave them without an issue (0.6 of the 9 ms). SQLite keeps every key: there a
 * check is a lookup in a page the batch has just read, and turning them off gains
 * nothing (measured).
 */
function m009(dialect: Dialect): Migration {
  return {
    async up(db: Db) {
      if (dialect !== 'postgres') return;
      for (const [table, constraint] of INGEST_FOREIGN_KEYS) {
        await sql`alter table ${sql.table(table)} drop constraint if exists ${sql.ref(constraint)}`.execute(db);
      }
      // `gone` is the statement's deleted rows (a transition table): one delete per child
      // table per statement, however many parent rows it removed.
      for (const [parent, column, children] of DELETE_CASCADES) {
        const deletes = children
          .map((child) => `  delete from ${child} where ${column} in (select id from gone);`)
          .join('\n');
        await sql
          .raw(
            `create or replace function faultline_delete_${parent}_rows() returns trigger language plpgsql as $$\nbegin\n${deletes}\n  return null;\nend $$`,
          )
          .execute(db);
        await sql
          .raw(
            `create trigger ${parent}_delete_rows after delete on ${parent} referencing old table as gone for each statement execute function faultline_delete_${parent}_rows()`,
          )
          .execute(db);
      }
    },
  };
}

/**
 * Issue updates that leave the indexes alone. Ingest rewrites an issue's
 * `last_seen` and `last_release` with nearly every event, and both were indexed, so on
 * PostgreSQL no issue update could be a HOT update: each one put a new entry into all
 * six of the table's indexes, and the issues upsert was the write statement's costliest
 * part (measured). The issues list finds its window and order through
 * `last_seen_minute`, the minute of `last_seen`, generated by the database, which changes
 * at most once a minute per issue; the rows of one minute are sorted by `last_seen`
 * itself. (Not the hour: half of the bench's 10 000 issues fall into the newest hour,
 * and sorting them triples the list's time on SQLite.) PostgreSQL drops the
 * index on `last_release`: issues by last release (issues list `release`, release
 * detail) are filtered from the project's issues or the window's. SQLite keeps it (an
 * update moves its entry within a page or two, and there is no HOT to win), and, as it
 * cannot add a stored generated column, has a virtual one.
 */
function m010(dialect: Dialect): Migration {
  return {
    async up(db: Db) {
      const minuteOfLastSeen = sql`last_seen - last_seen % ${sql.lit(LAST_SEEN_MINUTE_MS)}`;
      await db.schema
        .alterTable('issues')
        .addColumn('last_seen_minute', big, (c) => {
          const generated = c.generatedAlwaysAs(minuteOfLastSeen);
          return dialect === 'postgres' ? generated.stored() : generated;
        })
        .execute();
      await db.schema
        .createIndex('issues_project_last_seen_minute')
        .on('issues')
        .columns(['project_id', 'last_seen_minute'])
        .execute();
      await db.schema.dropIndex('issues_project_last_seen').execute();
      if (dialect === 'postgres') await db.schema.dropIndex('issues_project_last_release').execute();
    },
  };
}

/**
 * Alerts (src/alerts): a rule per project and alert type (every project gets the three,
 * enabled, 60 minutes of cooldown), the channels alerts go to, the outbox the ingest
 * batch and the crash-spike check write alerts into (in the transaction that found
 * them), and one delivery per alert and channel, claimed by one process at a time.
 * Booleans are 0/1 and times epoch milliseconds, as everywhere.
 */
function m012(dialect: Dialect): Migration {
  const id = idType(dialect);
  const auto = (c: any) => (dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement());
  return {
    async up(db: Db) {
      await db.schema
        .createTable('alert_rules')
        .addColumn('project_id', big, (c) => c.notNull().references('projects.id').onDelete('cascade'))
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('enabled', big, (c) => c.notNull())
        .addColumn('cooldown_minutes', big, (c) => c.notNull())
        .addColumn('last_triggered', big)
        .addPrimaryKeyConstraint('alert_rules_pk', ['project_id', 'type'])
        .execute();
      for (const type of ['new_issue', 'regression', 'crash_spike']) {
        await sql`insert into alert_rules (project_id, type, enabled, cooldown_minutes, last_triggered)
          select id, ${type}, 1, 60, null from projects`.execute(db);
      }

      await db.schema
        .createTable('alert_channels')
        .addColumn('id', id, auto)
        .addColumn('project_id', big, (c) => c.notNull().references('projects.id').onDelete('cascade'))
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('config', 'text', (c) => c.notNull())
        .addColumn('created_at', big, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('alert_channels_project').on('alert_channels').column('project_id').execute();

      await db.schema
        .createTable('alert_outbox')
        .addColumn('id', id, auto)
        .addColumn('project_id', big, (c) => c.notNull().references('projects.id').onDelete('cascade'))
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('issue_id', big)
        .addColumn('payload', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('created_at', big, (c) => c.notNull())
        .addColumn('triggered_at', big)
        .addColumn('prev_triggered', big)
        .execute();
      await db.schema
        .createIndex('alert_outbox_pending')
        .on('alert_outbox')
        .column('id')
        .where(sql.ref('state'), '=', 'pending')
        .execute();
      await db.schema.createIndex('alert_outbox_project').on('alert_outbox').column('project_id').execute();

      await db.schema
        .createTable('alert_deliveries')
        .addColumn('id', id, auto)
        .addColumn('project_id', big, (c) => c.notNull().references('projects.id').onDelete('cascade'))
        .addColumn('alert_id', big)
        .addColumn('channel_id', big, (c) => c.notNull())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('attempts', big, (c) => c.notNull())
        .addColumn('last_error', 'text')
        .addColumn('status', big)
        .addColumn('created_at', big, (c) => c.notNull())
        .addColumn('sent_at', big)
        .addColumn('next_attempt_at', big, (c) => c.notNull())
        .addColumn('lease_until', big)
        .addColumn('claimed_by', 'text')
        .execute();
      await db.schema
        .createIndex('alert_deliveries_project')
        .on('alert_deliveries')
        .columns(['project_id', 'id'])
        .execute();
      await db.schema.createIndex('alert_deliveries_alert').on('alert_deliveries').column('alert_id').execute();
      await db.schema
        .createIndex('alert_deliveries_pending')
        .on('alert_deliveries')
        .column('next_attempt_at')
        .where(sql.ref('state'), '=', 'pending')
        .execute();
    },
  };
}

/**
 * Symbol files (src/symbols): one row per stored file, its bytes in `symbol_chunks` of at
 * most SYMBOL_CHUNK_BYTES each, so every dialect, an export line and a D1 value (about
 * 2 MB) can hold them. `part` 0 is the file as uploaded, 1 a derived lookup index a kind
 * may build once at upload. A row is `writing` while its chunks stream in and becomes
 * `ready` (visible) in the transaction that applies the replacement rule. `symbol_jobs`
 * holds the re-symbolication runs an upload starts, with their cursor, so a restart
 * resumes them.
 */
function m013(dialect: Dialect): Migration {
  const id = idType(dialect);
  const auto = (c: any) => (dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement());
  return {
    async up(db: Db) {
      await db.schema
        .createTable('symbol_files')
        .addColumn('id', id, auto)
        .addColumn('project_id', big, (c) => c.notNull().references('projects.id').onDelete('cascade'))
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('release', 'text', (c) => c.notNull())
        .addColumn('dist', 'text', (c) => c.notNull())
        .addColumn('debug_id', 'text', (c) => c.notNull())
        .addColumn('filename', 'text', (c) => c.notNull())
        .addColumn('serves', 'text', (c) => c.notNull())
        .addColumn('serves_basename', 'text', (c) => c.notNull())
        .addColumn('size', big, (c) => c.notNull())
        .addColumn('index_size', big, (c) => c.notNull())
        .addColumn('meta', 'text', (c) => c.notNull())
        .addColumn('uploaded_at', big, (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('symbol_files_debug_id')
        .on('symbol_files')
        .columns(['project_id', 'kind', 'debug_id'])
        .execute();
      await db.schema
        .createIndex('symbol_files_release_name')
        .on('symbol_files')
        .columns(['project_id', 'kind', 'release', 'serves_basename'])
        .execute();
      await db.schema
        .createTable('symbol_chunks')
        .addColumn('file_id', big, (c) => c.notNull().references('symbol_files.id').onDelete('cascade'))
        .addColumn('part', 'integer', (c) => c.notNull())
        .addColumn('seq', 'integer', (c) => c.notNull())
        .addColumn('data', dialect === 'postgres' ? 'bytea' : 'blob', (c) => c.notNull())
        .addPrimaryKeyConstraint('symbol_chunks_pk', ['file_id', 'part', 'seq'])
        .execute();
      if (dialect === 'postgres')
        await sql`alter table symbol_chunks alter column data set storage external`.execute(db);
      await db.schema
        .createTable('symbol_jobs')
        .addColumn('id', id, auto)
        .addColumn('project_id', big, (c) => c.notNull().references('projects.id').onDelete('cascade'))
        .addColumn('release', 'text', (c) => c.notNull())
        .addColumn('since', big, (c) => c.notNull())
        .addColumn('cursor', big, (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('done', big, (c) => c.notNull())
        .addColumn('lease_until', big, (c) => c.notNull())
        .addColumn('created_at', big, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('symbol_jobs_state').on('symbol_jobs').columns(['state', 'id']).execute();
    },
  };
}

/**
 * The uploader routes (src/uploads): chunks of sentry-cli uploads by SHA-1, shared by
 * every instance on the database and kept at most an hour until assembled; the outcome
 * of each assembly per project, so a polling client gets the same answer from any
 * instance; releases created by the CLI; ProGuard mappings associated with releases.
 */
function m014(dialect: Dialect): Migration {
  return {
    async up(db: Db) {
      await db.schema
        .createTable('upload_chunks')
        .addColumn('sha1', 'text', (c) => c.primaryKey())
        .addColumn('size', big, (c) => c.notNull())
        .addColumn('data', dialect === 'postgres' ? 'bytea' : 'blob', (c) => c.notNull())
        .addColumn('created_at', big, (c) => c.notNull())
        // The request that is writing the chunk; null once that request succeeded.
        .addColumn('batch', 'text')
        .execute();
      await db.schema.createIndex('upload_chunks_created').on('upload_chunks').column('created_at').execute();
      if (dialect === 'postgres')
        await sql`alter table upload_chunks alter column data set storage external`.execute(db);

      await db.schema
        .createTable('upload_assemblies')
        .addColumn('project_id', big, (c) => c.notNull().references('projects.id').onDelete('cascade'))
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('checksum', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('detail', 'text')
        .addColumn('result', 'text')
        .addColumn('updated_at', big, (c) => c.notNull())
        .addPrimaryKeyConstraint('upload_assemblies_pk', ['project_id', 'kind', 'checksum'])
        .execute();

      await db.schema
        .createTable('cli_releases')
        .addColumn('project_id', big, (c) => c.notNull().references('projects.id').onDelete('cascade'))
        .addColumn('version', 'text', (c) => c.notNull())
        .addColumn('url', 'text')
        .addColumn('date_created', big, (c) => c.notNull())
        .addColumn('date_started', big)
        .addColumn('date_released', big)
        .addPrimaryKeyConstraint('cli_releases_pk', ['project_id', 'version'])
        .execute();
      await db.schema
        .createIndex('cli_releases_project_created')
        .on('cli_releases')
        .columns(['project_id', 'date_created'])
        .execute();

      await db.schema
        .createTable('proguard_releases')
        .addColumn('project_id', big, (c) => c.notNull().references('projects.id').onDelete('cascade'))
        .addColumn('release', 'text', (c) => c.notNull())
        .addColumn('proguard_uuid', 'text', (c) => c.notNull())
        .addColumn('created_at', big, (c) => c.notNull())
        .addPrimaryKeyConstraint('proguard_releases_pk', ['project_id', 'release', 'proguard_uuid'])
        .execute();
    },
  };
}

/**
 * A release's new issues in a window (release detail) through one index on release and
 * first_seen: with `first_release` alone the planner walked every issue first seen in the
 * window. Both columns are set once, when ingest creates the issue, so the index costs
 * ingest's issue updates nothing. It starts with the old index's columns, which it
 * replaces.
 */
function m015(): Migration {
  return {
    async up(db: Db) {
      await db.schema
        .createIndex('issues_project_first_release_seen')
        .on('issues')
        .columns(['project_id', 'first_release', 'first_seen'])
        .execute();
      await db.schema.dropIndex('issues_project_first_release').execute();
    },
  };
}

/**
 * A source map's served basename is indexed (symbol_files_release_name) cut to its first
 * 200 characters (MAX_INDEXED_BASENAME, written out here: a migration never changes):
 * a longer one went past PostgreSQL's btree row limit, and rows SQLite took whole are cut
 * as new rows are, so their lookups, which cut the name the same way, still find them.
 */
function m016(): Migration {
  return {
    async up(db: Db) {
      await sql`update symbol_files set serves_basename = substr(serves_basename, 1, 200) where length(serves_basename) > 200`.execute(
        db,
      );
    },
  };
}

/**
 * Issue merges (docs/api.md "Merging issues"): each fingerprint merged into another issue,
 * or mapped to an issue by re-symbolication, names the issue its events go to. Looked up
 * by fingerprint at ingest (only for fingerprints no issue has), and by issue when a
 * later merge moves an issue's mappings on to its target.
 */
function m017(): Migration {
  return {
    async up(db: Db) {
      await db.schema
        .createTable('issue_merges')
        .addColumn('project_id', big, (c) => c.notNull().references('projects.id').onDelete('cascade'))
        .addColumn('fingerprint', 'text', (c) => c.notNull())
        .addColumn('issue_id', big, (c) => c.notNull().references('issues.id').onDelete('cascade'))
        .addColumn('merged_at', big, (c) => c.notNull())
        .addPrimaryKeyConstraint('issue_merges_pk', ['project_id', 'fingerprint'])
        .execute();
      await db.schema
        .createIndex('issue_merges_issue')
        .unique()
        .on('issue_merges')
        .columns(['issue_id', 'fingerprint'])
        .execute();
    },
  };
}

/**
 * What sentry-cli says about a release besides its dates (src/uploads/releases.ts): the
 * commits `releases set-commits` sends, in the order sent, and the deploys of `deploys
 * new`, each under the project rows of `cli_releases` it belongs to.
 */
function m018(): Migration {
  return {
    async up(db: Db) {
      await db.schema
        .createTable('release_commits')
        .addColumn('project_id', big, (c) => c.notNull().references('projects.id').onDelete('cascade'))
        .addColumn('version', 'text', (c) => c.notNull())
        .addColumn('repository', 'text', (c) => c.notNull())
        .addColumn('commit_id', 'text', (c) => c.notNull())
        .addColumn('position', big, (c) => c.notNull())
        .addColumn('message', 'text')
        .addColumn('author_name', 'text')
        .addColumn('author_email', 'text')
        .addColumn('date', big)
        .addPrimaryKeyConstraint('release_commits_pk', ['project_id', 'version', 'repository', 'commit_id'])
        .execute();
      await db.schema
        .createIndex('release_commits_position')
        .on('release_commits')
        .columns(['project_id', 'version', 'position'])
        .execute();

      await db.schema
        .createTable('release_deploys')
        .addColumn('project_id', big, (c) => c.notNull().references('projects.id').onDelete('cascade'))
        .addColumn('deploy_id', 'text', (c) => c.notNull())
        .addColumn('version', 'text', (c) => c.notNull())
        .addColumn('environment', 'text', (c) => c.notNull())
        .addColumn('name', 'text')
        .addColumn('url', 'text')
        .addColumn('date_started', big)
        .addColumn('date_finished', big, (c) => c.notNull())
        .addPrimaryKeyConstraint('release_deploys_pk', ['project_id', 'deploy_id'])
        .execute();
      await db.schema
        .createIndex('release_deploys_version')
        .on('release_deploys')
        .columns(['project_id', 'version', 'date_finished'])
        .execute();
    },
  };
}

/**
 * Alert rule filters and digests (docs/api.md "Alerts"): a rule's environments, lowest
 * level and channels (JSON lists, empty for all), and on each alert a cooldown held back
 * the digest that sent it.
 */
function m019(): Migration {
  return {
    async up(db: Db) {
      await db.schema
        .alterTable('alert_rules')
        .addColumn('environments', 'text', (c) => c.notNull().defaultTo('[]'))
        .execute();
      await db.schema.alterTable('alert_rules').addColumn('min_level', 'text').execute();
      await db.schema
        .alterTable('alert_rules')
        .addColumn('channels', 'text', (c) => c.notNull().defaultTo('[]'))
        .execute();
      await db.schema.alterTable('alert_outbox').addColumn('digest_id', big).execute();
      await db.schema
        .createIndex('alert_outbox_held')
        .on('alert_outbox')
        .columns(['project_id', 'type', 'id'])
        .where(sql.ref('state'), '=', 'held')
        .execute();
    },
  };
}

/**
 * The serverless edition's queue consumer records each committed queue message here in
 * the same D1 batch as its rows, so a redelivered message is recognised and acknowledged
 * (src/editions/workers/ingest-queue.ts). The other editions never write it.
 */
function m020(): Migration {
  return {
    async up(db: Db) {
      await db.schema
        .createTable('ingest_receipts')
        .addColumn('message_id', 'text', (c) => c.primaryKey())
        .addColumn('committed_at', big, (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('ingest_receipts_committed_at')
        .on('ingest_receipts')
        .column('committed_at')
        .execute();
    },
  };
}

/**
 * Accounts (docs/api.md "Accounts"): users and their roles, personal tokens and
 * dashboard sessions (both stored only as SHA-256 hashes), invites and the one-time
 * setup token (hashes too), and the audit log.
 */
function m021Accounts(dialect: Dialect): Migration {
  const id = idType(dialect);
  const auto = (c: any) => (dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement());
  return {
    async up(db: Db) {
      await db.schema
        .createTable('users')
        .addColumn('id', id, auto)
        .addColumn('email', 'text', (c) => c.notNull().unique())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('role', 'text', (c) => c.notNull())
        .addColumn('disabled', big, (c) => c.notNull().defaultTo(0))
        .addColumn('password_hash', 'text')
        .addColumn('created_at', big, (c) => c.notNull())
        .addColumn('last_login_at', big)
        .execute();

      await db.schema
        .createTable('personal_tokens')
        .addColumn('id', id, auto)
        .addColumn('user_id', big, (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('token_hash', 'text', (c) => c.notNull().unique())
        .addColumn('created_at', big, (c) => c.notNull())
        .addColumn('expires_at', big)
        .addColumn('last_used_at', big)
        .execute();
      await db.schema.createIndex('personal_tokens_user').on('personal_tokens').column('user_id').execute();

      await db.schema
        .createTable('user_sessions')
        .addColumn('id_hash', 'text', (c) => c.primaryKey())
        .addColumn('user_id', big, (c) => c.references('users.id').onDelete('cascade'))
        .addColumn('api_key_id', 'text')
        .addColumn('created_at', big, (c) => c.notNull())
        .addColumn('last_seen_at', big, (c) => c.notNull())
        .addColumn('expires_at', big, (c) => c.notNull())
        .addColumn('ip', 'text')
        .addColumn('user_agent', 'text')
        .execute();
      await db.schema.createIndex('user_sessions_user').on('user_sessions').column('user_id').execute();

      await db.schema
        .createTable('user_invites')
        .addColumn('token_hash', 'text', (c) => c.primaryKey())
        .addColumn('user_id', big, (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('created_at', big, (c) => c.notNull())
        .addColumn('expires_at', big, (c) => c.notNull())
        .execute();

      await db.schema
        .createTable('setup_tokens')
        .addColumn('token_hash', 'text', (c) => c.primaryKey())
        .addColumn('created_at', big, (c) => c.notNull())
        .execute();

      // An SSO sign-in under way: the state's hash, its nonce and PKCE verifier (minutes).
      await db.schema
        .createTable('sso_states')
        .addColumn('state_hash', 'text', (c) => c.primaryKey())
        .addColumn('nonce', 'text', (c) => c.notNull())
        .addColumn('code_verifier', 'text', (c) => c.notNull())
        .addColumn('next', 'text', (c) => c.notNull())
        .addColumn('created_at', big, (c) => c.notNull())
        .execute();

      await db.schema
        .createTable('audit_log')
        .addColumn('id', id, auto)
        // A random key of its own: identical entries (same actor, action and millisecond) are still two, and export/import keeps each once.
        .addColumn('uid', 'text', (c) => c.notNull().unique())
        .addColumn('at', big, (c) => c.notNull())
        .addColumn('actor', 'text', (c) => c.notNull())
        .addColumn('action', 'text', (c) => c.notNull())
        .addColumn('target', 'text')
        .addColumn('details', 'text', (c) => c.notNull())
        .addColumn('ip', 'text')
        .execute();
      await db.schema.createIndex('audit_log_at').on('audit_log').column('at').execute();
    },
  };
}

/**
 * Event attachments (src/attachments): screenshots, view hierarchies, minidumps and
 * other files sent with an event, one row each, its bytes in `attachment_chunks` of at
 * most ATTACHMENT_CHUNK_BYTES (a D1 value and an export line hold one). Keyed by the
 * event's `event_id` and the file's digest, so an SDK's resend stores nothing twice;
 * `received_at` is the event's, so retention removes them with it. Foreign keys remove
 * them with their project.
 */
function m022Attachments(dialect: Dialect): Migration {
  const id = idType(dialect);
  const auto = (c: any) => (dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement());
  return {
    async up(db: Db) {
      await db.schema
        .createTable('attachments')
        .addColumn('id', id, auto)
        .addColumn('project_id', big, (c) => c.notNull().references('projects.id').onDelete('cascade'))
        .addColumn('event_id', 'text', (c) => c.notNull())
        .addColumn('digest', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('content_type', 'text', (c) => c.notNull())
        .addColumn('attachment_type', 'text', (c) => c.notNull())
        .addColumn('size', big, (c) => c.notNull())
        .addColumn('received_at', big, (c) => c.notNull())
        .addUniqueConstraint('attachments_event_digest', ['project_id', 'event_id', 'digest'])
        .execute();
      await db.schema.createIndex('attachments_received').on('attachments').column('received_at').execute();
      await db.schema
        .createTable('attachment_chunks')
        .addColumn('attachment_id', big, (c) => c.notNull().references('attachments.id').onDelete('cascade'))
        .addColumn('seq', 'integer', (c) => c.notNull())
        .addColumn('data', dialect === 'postgres' ? 'bytea' : 'blob', (c) => c.notNull())
        .addPrimaryKeyConstraint('attachment_chunks_pk', ['attachment_id', 'seq'])
        .execute();
      if (dialect === 'postgres')
        await sql`alter table attachment_chunks alter column data set storage external`.execute(db);
    },
  };
}

/**
 * Privacy and storage settings per project (docs/privacy.md): server-side scrubbing
 * (defaults on, IP removal off, extra and exempt key lists as JSON text) and a storage
 * budget in MB (0 = none); and the index end-user deletion finds a user's events by.
 */
function m023PrivacyAndStorage(): Migration {
  return {
    async up(db: Db) {
      await db.schema
        .alterTable('projects')
        .addColumn('scrub_defaults', big, (c) => c.notNull().defaultTo(1))
        .execute();
      await db.schema
        .alterTable('projects')
        .addColumn('scrub_ip_addresses', big, (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema
        .alterTable('projects')
        .addColumn('scrub_fields', 'text', (c) => c.notNull().defaultTo('[]'))
        .execute();
      await db.schema
        .alterTable('projects')
        .addColumn('safe_fields', 'text', (c) => c.notNull().defaultTo('[]'))
        .execute();
      await db.schema
        .alterTable('projects')
        .addColumn('storage_budget_mb', big, (c) => c.notNull().defaultTo(0))
        .execute();
    },
  };
}

/**
 * Triage (docs/api.md "Issue activity", "Snoozing", "Issues"): issue_changes becomes the
 * issue's activity (who did it, and what: JSON `data`; ingest's own rows leave both
 * null), issues gain a snooze (ignore_until, or a number of events or users more than
 * they had when snoozed: ignored_event_count / ignored_users) and an assignee, and
 * issue_environment_hourly counts each issue's events per environment and hour, for the
 * list's environment filter.
 */
function m024Triage(dialect: Dialect): Migration {
  return {
    async up(db: Db) {
      await db.schema.alterTable('issue_changes').addColumn('actor', 'text').execute();
      await db.schema.alterTable('issue_changes').addColumn('actor_user_id', big).execute();
      await db.schema.alterTable('issue_changes').addColumn('data', 'text').execute();
      for (const column of [
        'ignore_until',
        'ignore_count',
        'ignore_users',
        'ignored_event_count',
        'ignored_users',
        'assignee_id',
      ]) {
        await db.schema.alterTable('issues').addColumn(column, big).execute();
      }
      await db.schema
        .createTable('issue_environment_hourly')
        // PostgreSQL: no foreign key, as for issue_hourly (migration 009); the issues' delete trigger removes the rows.
        .addColumn('issue_id', big, (c) =>
          dialect === 'postgres' ? c.notNull() : c.notNull().references('issues.id').onDelete('cascade'),
        )
        .addColumn('environment', 'text', (c) => c.notNull())
        .addColumn('bucket', big, (c) => c.notNull())
        .addColumn('events', big, (c) => c.notNull())
        .addPrimaryKeyConstraint('issue_environment_hourly_pk', ['issue_id', 'environment', 'bucket'])
        .execute();
      if (dialect === 'postgres') {
        const children = ['issue_releases', 'issue_users', 'issue_hourly', 'issue_environment_hourly'];
        const deletes = children
          .map((child) => `  delete from ${child} where issue_id in (select id from gone);`)
          .join('\n');
        await sql
          .raw(
            `create or replace function faultline_delete_issues_rows() returns trigger language plpgsql as $$\nbegin\n${deletes}\n  return null;\nend $$`,
          )
          .execute(db);
      }
      // The time snoozes the periodic job ends.
      await db.schema
        .createIndex('issues_snoozed_until')
        .on('issues')
        .column('ignore_until')
        .where(sql.ref('ignore_until'), 'is not', null)
        .execute();
    },
  };
}

/**
 * Cron monitors (docs/api.md "Cron monitors"): one row per monitor with its schedule
 * and health, and its check-ins. `deadline_at` (the expected time plus the margin) and
 * the in-progress check-ins' `timeout_at` are indexed so the minutely check reads only
 * what is due.
 */
function m025Monitors(dialect: Dialect): Migration {
  const id = idType(dialect);
  const auto = (c: any) => (dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement());
  return {
    async up(db: Db) {
      await db.schema
        .createTable('monitors')
        .addColumn('id', id, auto)
        .addColumn('project_id', big, (c) => c.notNull().references('projects.id').onDelete('cascade'))
        .addColumn('slug', 'text', (c) => c.notNull())
        .addColumn('schedule_type', 'text', (c) => c.notNull())
        .addColumn('schedule', 'text', (c) => c.notNull())
        .addColumn('schedule_unit', 'text')
        .addColumn('timezone', 'text', (c) => c.notNull())
        .addColumn('checkin_margin', big, (c) => c.notNull())
        .addColumn('max_runtime', big, (c) => c.notNull())
        .addColumn('failure_issue_threshold', big, (c) => c.notNull())
        .addColumn('recovery_threshold', big, (c) => c.notNull())
        .addColumn('enabled', big, (c) => c.notNull())
        .addColumn('health', 'text', (c) => c.notNull())
        .addColumn('failures', big, (c) => c.notNull())
        .addColumn('successes', big, (c) => c.notNull())
        .addColumn('last_status', 'text')
        .addColumn('last_checkin_at', big)
        .addColumn('next_expected_at', big)
        .addColumn('deadline_at', big)
        .addColumn('version', big, (c) => c.notNull())
        .addColumn('claim', 'text')
        .addColumn('created_at', big, (c) => c.notNull())
        .addColumn('updated_at', big, (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('monitors_project_slug')
        .unique()
        .on('monitors')
        .columns(['project_id', 'slug'])
        .execute();
      await db.schema.createIndex('monitors_deadline').on('monitors').column('deadline_at').execute();

      await db.schema
        .createTable('monitor_checkins')
        .addColumn('id', id, auto)
        .addColumn('project_id', big, (c) => c.notNull().references('projects.id').onDelete('cascade'))
        .addColumn('monitor_id', big, (c) => c.notNull().references('monitors.id').onDelete('cascade'))
        .addColumn('check_in_id', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('environment', 'text')
        .addColumn('release', 'text')
        .addColumn('duration_ms', big)
        .addColumn('created_at', big, (c) => c.notNull())
        .addColumn('updated_at', big, (c) => c.notNull())
        .addColumn('timeout_at', big)
        .execute();
      await db.schema
        .createIndex('monitor_checkins_monitor')
        .on('monitor_checkins')
        .columns(['monitor_id', 'id'])
        .execute();
      await db.schema
        .createIndex('monitor_checkins_check_in_id')
        .on('monitor_checkins')
        .columns(['monitor_id', 'check_in_id'])
        .execute();
      await db.schema.createIndex('monitor_checkins_created').on('monitor_checkins').column('created_at').execute();
      await db.schema
        .createIndex('monitor_checkins_open')
        .on('monitor_checkins')
        .column('timeout_at')
        .where(sql.ref('status'), '=', 'in_progress')
        .execute();
    },
  };
}

/**
 * Storage usage per project, kept by the database itself (docs/privacy.md "Storage"):
 * triggers on `payload_chunks` add each chunk's bytes to its project's hour when it is
 * written and take them off when it is rewritten or deleted, whoever does it (ingest on
 * any of the three databases, retention, end-user deletion), so usage and the storage
 * budget read a few aggregate rows, never the chunks. Existing chunks are counted once.
 */
function m026StorageUsage(dialect: Dialect): Migration {
  return {
    async up(db: Db) {
      // On PostgreSQL no foreign key (ingest's triggers would check it with every chunk;
      // migration 009): a delete trigger on projects removes the rows instead.
      await db.schema
        .createTable('storage_usage')
        .addColumn('project_id', big, (c) =>
          dialect === 'postgres' ? c.notNull() : c.notNull().references('projects.id').onDelete('cascade'),
        )
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('bucket', big, (c) => c.notNull())
        .addColumn('count', big, (c) => c.notNull())
        .addColumn('bytes', big, (c) => c.notNull())
        .addPrimaryKeyConstraint('storage_usage_pk', ['project_id', 'kind', 'bucket'])
        .execute();
      // Integer division, not `%`: D1 computed garbage for `x - x % n` inside a trigger.
      const hour = (t: string) =>
        dialect === 'postgres'
          ? `(${t}.received_at / 3600000) * 3600000`
          : `cast(${t}.received_at / 3600000 as integer) * 3600000`;
      // An update may move a chunk to another hour (the D1 ingest batch writes a marker
      // time first, then the real one): the old hour loses it, the new one gains it, and
      // an hour left empty goes.
      if (dialect === 'postgres') {
        await sql
          .raw(
            `create or replace function faultline_storage_usage_chunks() returns trigger language plpgsql as $$
begin
  if tg_op <> 'DELETE' then
    insert into storage_usage (project_id, kind, bucket, count, bytes)
    values (new.project_id, 'payloads', ${hour('new')}, 1, octet_length(new.data))
    on conflict (project_id, kind, bucket) do update set count = storage_usage.count + 1, bytes = storage_usage.bytes + excluded.bytes;
  end if;
  if tg_op <> 'INSERT' then
    update storage_usage set count = count - 1, bytes = bytes - octet_length(old.data)
    where project_id = old.project_id and kind = 'payloads' and bucket = ${hour('old')};
    delete from storage_usage where project_id = old.project_id and kind = 'payloads' and bucket = ${hour('old')} and count <= 0;
  end if;
  return null;
end $$`,
          )
          .execute(db);
        await sql
          .raw(
            'create trigger payload_chunks_storage_usage after insert or delete or update of data, received_at, project_id on payload_chunks for each row execute function faultline_storage_usage_chunks()',
          )
          .execute(db);
        await sql
          .raw(
            `create or replace function faultline_delete_storage_usage_rows() returns trigger language plpgsql as $$
begin
  delete from storage_usage where project_id in (select id from gone);
  return null;
end $$`,
          )
          .execute(db);
        await sql
          .raw(
            'create trigger projects_delete_storage_usage after delete on projects referencing old table as gone for each statement execute function faultline_delete_storage_usage_rows()',
          )
          .execute(db);
      } else {
        const add = `insert into storage_usage (project_id, kind, bucket, count, bytes) values (new.project_id, 'payloads', ${hour('new')}, 1, length(new.data))
  on conflict (project_id, kind, bucket) do update set count = count + 1, bytes = bytes + excluded.bytes;`;
        const remove = `update storage_usage set count = count - 1, bytes = bytes - length(old.data) where project_id = old.project_id and kind = 'payloads' and bucket = ${hour('old')};
  delete from storage_usage where project_id = old.project_id and kind = 'payloads' and bucket = ${hour('old')} and count <= 0;`;
        await sql
          .raw(`create trigger payload_chunks_usage_insert after insert on payload_chunks begin\n  ${add}\nend`)
          .execute(db);
        await sql
          .raw(`create trigger payload_chunks_usage_delete after delete on payload_chunks begin\n  ${remove}\nend`)
          .execute(db);
        await sql
          .raw(
            `create trigger payload_chunks_usage_update after update of data, received_at, project_id on payload_chunks begin\n  ${remove}\n  ${add}\nend`,
          )
          .execute(db);
      }
      const length = dialect === 'postgres' ? 'octet_length' : 'length';
      await sql
        .raw(
          `insert into storage_usage (project_id, kind, bucket, count, bytes)
           select project_id, 'payloads', ${hour('payload_chunks')}, count(*), sum(${length}(data)) from payload_chunks group by project_id, ${hour('payload_chunks')}`,
        )
        .execute(db);
    },
  };
}

/**
 * Crash-free users per release (docs/api.md "Releases"): each release's users (session
 * `did`) per hour of session start, and whether one of their sessions crashed, kept as
 * long as session_hourly (distinct users cannot be summed from its totals, and the
 * sessions themselves go after RETENTION_DAYS). Filled from the stored sessions. Like
 * the other ingest tables on PostgreSQL (009), no foreign key to check per inserted row:
 * the projects delete trigger removes a project's rows.
 * sessions_project_release_started goes: nothing reads it any more (the overview's
 * crash_free no longer compares session start times).
 */
function m027CrashFreeUsers(dialect: Dialect): Migration {
  return {
    async up(db: Db) {
      await db.schema
        .createTable('session_users')
        .addColumn('project_id', big, (c) =>
          dialect === 'postgres' ? c.notNull() : c.notNull().references('projects.id').onDelete('cascade'),
        )
        .addColumn('release', 'text', (c) => c.notNull())
        .addColumn('bucket', big, (c) => c.notNull())
        .addColumn('did', 'text', (c) => c.notNull())
        .addColumn('crashed', big, (c) => c.notNull())
        .addPrimaryKeyConstraint('session_users_pk', ['project_id', 'release', 'bucket', 'did'])
        .execute();
      if (dialect === 'postgres') {
        const children = [...DELETE_CASCADES.find(([parent]) => parent === 'projects')![2], 'session_users'];
        const deletes = children
          .map((child) => `  delete from ${child} where project_id in (select id from gone);`)
          .join('\n');
        await sql
          .raw(
            `create or replace function faultline_delete_projects_rows() returns trigger language plpgsql as $$\nbegin\n${deletes}\n  return null;\nend $$`,
          )
          .execute(db);
      }
      await sql`insert into session_users (project_id, release, bucket, did, crashed)
        select project_id, release, (started / 3600000) * 3600000, did, max(case when status in ('crashed', 'unhandled') then 1 else 0 end)
        from sessions where did is not null and started >= 0
        group by project_id, release, (started / 3600000) * 3600000, did`.execute(db);
      await db.schema.dropIndex('sessions_project_release_started').execute();
    },
  };
}

/**
 * User feedback (src/feedback): one row per message, keyed by its digest so a resend is
 * stored once. It names its event by `event_id` only: the event (and so its issue) is
 * found through `seen_events` when it is read, so feedback sent before its event links
 * once the event arrives. Foreign key: removed with its project.
 */
function m028UserFeedback(dialect: Dialect): Migration {
  const id = idType(dialect);
  const auto = (c: any) => (dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement());
  return {
    async up(db: Db) {
      await db.schema
        .createTable('user_feedback')
        .addColumn('id', id, auto)
        .addColumn('project_id', big, (c) => c.notNull().references('projects.id').onDelete('cascade'))
        .addColumn('digest', 'text', (c) => c.notNull())
        .addColumn('event_id', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('email', 'text', (c) => c.notNull())
        .addColumn('comments', 'text', (c) => c.notNull())
        .addColumn('url', 'text', (c) => c.notNull())
        .addColumn('source', 'text', (c) => c.notNull())
        .addColumn('created_at', big, (c) => c.notNull())
        .addColumn('received_at', big, (c) => c.notNull())
        .addUniqueConstraint('user_feedback_digest', ['project_id', 'digest'])
        .execute();
      await db.schema
        .createIndex('user_feedback_event')
        .on('user_feedback')
        .columns(['project_id', 'event_id'])
        .execute();
      await db.schema.createIndex('user_feedback_list').on('user_feedback').columns(['project_id', 'id']).execute();
      await db.schema.createIndex('user_feedback_received').on('user_feedback').column('received_at').execute();
    },
  };
}

/**
 * The ANR rate (docs/api.md "Releases"): a session whose `abnormal_mechanism` starts with
 * `anr_` is marked on its row, and `session_hourly` counts such sessions per release and
 * hour beside crashed and errored ones. Rows written before count none.
 */
function m029AnrSessions(): Migration {
  return {
    async up(db: Db) {
      await db.schema
        .alterTable('sessions')
        .addColumn('anr', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema
        .alterTable('session_hourly')
        .addColumn('anr', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
    },
  };
}

/**
 * Bytes in an object store (the serverless edition with an R2 bucket bound,
 * docs/architecture.md "Workers edition"): a payload or attachment chunk row keeps its
 * object's key in `r2_key` and empty `data`; rows without a key hold their bytes as before.
 */
function m030ObjectsInR2(): Migration {
  return {
    async up(db: Db) {
      await db.schema.alterTable('payload_chunks').addColumn('r2_key', 'text').execute();
      await db.schema.alterTable('attachment_chunks').addColumn('r2_key', 'text').execute();
    },
  };
}

/**
 * Symbol file chunks and sentry-cli upload chunks in the object store too (the serverless
 * edition with an R2 bucket bound, src/store/blobs.ts): the row keeps the object's key in
 * `r2_key` and empty `data`. The index lets retention's sweep ask which symbol objects a
 * row still names.
 */
function m031SymbolObjectsInR2(): Migration {
  return {
    async up(db: Db) {
      await db.schema.alterTable('symbol_chunks').addColumn('r2_key', 'text').execute();
      await db.schema.alterTable('upload_chunks').addColumn('r2_key', 'text').execute();
      await db.schema
        .createIndex('symbol_chunks_r2_key')
        .on('symbol_chunks')
        .column('r2_key')
        .where(sql.ref('r2_key'), 'is not', null)
        .execute();
    },
  };
}

/**
 * A symbol file chunk whose bytes are an object keeps their length in `object_bytes`
 * (null when `data` holds them): an import (src/transfer/symbol-line-types.ts) knows a
 * file is complete when its chunks add up to its sizes, wherever the bytes are.
 */
function migration033SymbolChunkObjectBytes(): Migration {
  return {
    async up(db: Db) {
      await db.schema.alterTable('symbol_chunks').addColumn('object_bytes', big).execute();
    },
  };
}

/**
 * Storage usage counts what R2 holds and attachments (docs/privacy.md "Storage"): a
 * payload chunk whose blob is an object keeps the blob's length in `object_bytes` (null
 * when `data` holds it), and the chunk triggers count `coalesce(object_bytes,
 * length(data))`; attachments are counted under kind `attachments` by triggers on their
 * rows (the file's `size`, the same wherever its chunks are), per hour of `received_at`,
 * so the storage budget can remove them oldest first before events. Filled from the
 * stored attachments.
 */
function mUsageObjectsAndAttachments(dialect: Dialect): Migration {
  const hour = (t: string) =>
    dialect === 'postgres'
      ? `(${t}.received_at / 3600000) * 3600000`
      : `cast(${t}.received_at / 3600000 as integer) * 3600000`;
  const length = dialect === 'postgres' ? 'octet_length' : 'length';
  const bytes = (t: string) => `coalesce(${t}.object_bytes, ${length}(${t}.data))`;
  return {
    async up(db: Db) {
      await db.schema.alterTable('payload_chunks').addColumn('object_bytes', big).execute();
      if (dialect === 'postgres') {
        await sql
          .raw(
            `create or replace function faultline_storage_usage_chunks() returns trigger language plpgsql as $$
begin
  if tg_op <> 'DELETE' then
    insert into storage_usage (project_id, kind, bucket, count, bytes)
    values (new.project_id, 'payloads', ${hour('new')}, 1, ${bytes('new')})
    on conflict (project_id, kind, bucket) do update set count = storage_usage.count + 1, bytes = storage_usage.bytes + excluded.bytes;
  end if;
  if tg_op <> 'INSERT' then
    update storage_usage set count = count - 1, bytes = bytes - ${bytes('old')}
    where project_id = old.project_id and kind = 'payloads' and bucket = ${hour('old')};
    delete from storage_usage where project_id = old.project_id and kind = 'payloads' and bucket = ${hour('old')} and count <= 0;
  end if;
  return null;
end $$`,
          )
          .execute(db);
        await sql.raw('drop trigger payload_chunks_storage_usage on payload_chunks').execute(db);
        await sql
          .raw(
            'create trigger payload_chunks_storage_usage after insert or delete or update of data, object_bytes, received_at, project_id on payload_chunks for each row execute function faultline_storage_usage_chunks()',
          )
          .execute(db);
        await sql
          .raw(
            `create or replace function faultline_storage_usage_attachments() returns trigger language plpgsql as $$
begin
  if tg_op = 'INSERT' then
    insert into storage_usage (project_id, kind, bucket, count, bytes)
    values (new.project_id, 'attachments', ${hour('new')}, 1, new.size)
    on conflict (project_id, kind, bucket) do update set count = storage_usage.count + 1, bytes = storage_usage.bytes + excluded.bytes;
  else
    update storage_usage set count = count - 1, bytes = bytes - old.size
    where project_id = old.project_id and kind = 'attachments' and bucket = ${hour('old')};
    delete from storage_usage where project_id = old.project_id and kind = 'attachments' and bucket = ${hour('old')} and count <= 0;
  end if;
  return null;
end $$`,
          )
          .execute(db);
        await sql
          .raw(
            'create trigger attachments_storage_usage after insert or delete on attachments for each row execute function faultline_storage_usage_attachments()',
          )
          .execute(db);
      } else {
        const add = `insert into storage_usage (project_id, kind, bucket, count, bytes) values (new.project_id, 'payloads', ${hour('new')}, 1, ${bytes('new')})
  on conflict (project_id, kind, bucket) do update set count = count + 1, bytes = bytes + excluded.bytes;`;
        const remove = `update storage_usage set count = count - 1, bytes = bytes - ${bytes('old')} where project_id = old.project_id and kind = 'payloads' and bucket = ${hour('old')};
  delete from storage_usage where project_id = old.project_id and kind = 'payloads' and bucket = ${hour('old')} and count <= 0;`;
        for (const name of [
          'payload_chunks_usage_insert',
          'payload_chunks_usage_delete',
          'payload_chunks_usage_update',
        ])
          await sql.raw(`drop trigger ${name}`).execute(db);
        await sql
          .raw(`create trigger payload_chunks_usage_insert after insert on payload_chunks begin\n  ${add}\nend`)
          .execute(db);
        await sql
          .raw(`create trigger payload_chunks_usage_delete after delete on payload_chunks begin\n  ${remove}\nend`)
          .execute(db);
        await sql
          .raw(
            `create trigger payload_chunks_usage_update after update of data, object_bytes, received_at, project_id on payload_chunks begin\n  ${remove}\n  ${add}\nend`,
          )
          .execute(db);
        await sql
          .raw(
            `create trigger attachments_usage_insert after insert on attachments begin
  insert into storage_usage (project_id, kind, bucket, count, bytes) values (new.project_id, 'attachments', ${hour('new')}, 1, new.size)
  on conflict (project_id, kind, bucket) do update set count = count + 1, bytes = bytes + excluded.bytes;
end`,
          )
          .execute(db);
        await sql
          .raw(
            `create trigger attachments_usage_delete after delete on attachments begin
  update storage_usage set count = count - 1, bytes = bytes - old.size where project_id = old.project_id and kind = 'attachments' and bucket = ${hour('old')};
  delete from storage_usage where project_id = old.project_id and kind = 'attachments' and bucket = ${hour('old')} and count <= 0;
end`,
          )
          .execute(db);
      }
      await sql
        .raw(
          `insert into storage_usage (project_id, kind, bucket, count, bytes)
           select project_id, 'attachments', ${hour('attachments')}, count(*), sum(size) from attachments group by project_id, ${hour('attachments')}`,
        )
        .execute(db);
    },
  };
}

/** Every migration, in order. The name's number is the schema version. */
export function migrations(dialect: Dialect): Record<string, Migration> {
  return {
    '001_initial': m001(dialect),
    '002_read_indexes': m002(),
    '003_rate_limit_windows': m003(),
    '004_job_locks': m004(),
    '005_event_id_lookup_through_seen_events': m005(),
    '006_postgres_blobs_not_recompressed': m006(dialect),
    '007_drop_events_issue_timestamp': m007(),
    '008_payload_chunks': m008(dialect),
    '009_postgres_delete_triggers_for_ingest_keys': m009(dialect),
    '010_issue_updates_off_the_indexes': m010(dialect),
    '012_alerts': m012(dialect),
    '013_symbols': m013(dialect),
    '014_uploads': m014(dialect),
    '015_issues_by_release_and_first_seen': m015(),
    '016_symbol_basenames_cut_for_the_index': m016(),
    '017_issue_merges': m017(),
    '018_release_commits_and_deploys': m018(),
    '019_alert_filters_and_digests': m019(),
    '020_ingest_receipts': m020(),
    '021_accounts': m021Accounts(dialect),
    '022_attachments': m022Attachments(dialect),
    '023_privacy_and_storage_settings': m023PrivacyAndStorage(),
    '024_triage': m024Triage(dialect),
    '025_cron_monitors': m025Monitors(dialect),
    '026_storage_usage': m026StorageUsage(dialect),
    '027_crash_free_users': m027CrashFreeUsers(dialect),
    '028_user_feedback': m028UserFeedback(dialect),
    '029_anr_sessions': m029AnrSessions(),
    '030_objects_in_r2': m030ObjectsInR2(),
    '031_symbol_objects_in_r2': m031SymbolObjectsInR2(),
    '032_usage_objects_and_attachments': mUsageObjectsAndAttachments(dialect),
    '033_symbol_chunk_object_bytes': migration033SymbolChunkObjectBytes(),
  };
}

export class StaticMigrationProvider implements MigrationProvider {
  constructor(private readonly dialect: Dialect) {}
  async getMigrations() {
    return migrations(this.dialect);
  }
}
