// Test support: puts one row in every table under a project (written directly,
// not through ingest, so the delete test depends only on the schema), and counts
// a project's rows in every table that has one, including tables added later.
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../src/store/schema.js';

const HOUR = 3_600_000;

/** One issue row of the project (fingerprint `fp`). */
export async function insertIssue(db: Kysely<Database>, projectId: number, fp: string, now: number): Promise<number> {
  const issue = await db
    .insertInto('issues')
    .values({
      project_id: projectId,
      fingerprint: fp,
      title: 'Error: boom',
      level: 'error',
      error_type: 'Error',
      screen: 'Main',
      location: 'main.js:1',
      platform: 'javascript',
      status: 'unresolved',
      event_count: 1,
      stored_count: 1,
      users: 1,
      first_seen: now,
      last_seen: now,
      first_seen_id: null,
      last_seen_id: null,
      first_release: '1.0',
      last_release: '1.0',
      resolved_release: null,
      resolved_at: null,
      regressed_at: null,
      created_at: now,
      updated_at: now,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return Number(issue.id);
}

/** One stored event of the issue (no tags, no seen_events row). */
export async function insertEvent(
  db: Kysely<Database>,
  projectId: number,
  issueId: number,
  fp: string,
  eventId: string,
  now: number,
): Promise<number> {
  const event = await db
    .insertInto('events')
    .values({
      project_id: projectId,
      issue_id: issueId,
      event_id: eventId,
      fingerprint: fp,
      timestamp: now,
      received_at: now,
      level: 'error',
      platform: 'javascript',
      release: '1.0',
      dist: '',
      environment: 'production',
      user_id: 'u1',
      user_email: null,
      user_username: null,
      user_ip: null,
      device_id: null,
      device_model: null,
      os_name: null,
      os_version: null,
      screen: 'Main',
      error_type: 'Error',
      error_location: 'main.js:1',
      title: 'Error: boom',
      message: 'boom',
      is_crash: 0,
      sdk_name: 'test',
      tags: '{"a":"b"}',
      detail: new Uint8Array([1, 2, 3]),
      raw: new Uint8Array([4, 5, 6]),
      symbolicated: null,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return Number(event.id);
}

export async function seedProjectData(db: Kysely<Database>, projectId: number, now: number): Promise<void> {
  const fp = `fp${projectId}`.padEnd(32, '0');
  const issue = { id: await insertIssue(db, projectId, fp, now) };
  await db.insertInto('issue_releases').values({ issue_id: issue.id, release: '1.0', first_seen: now }).execute();
  await db.insertInto('issue_users').values({ issue_id: issue.id, user_key: 'u1' }).execute();
  await db
    .insertInto('issue_hourly')
    .values({ issue_id: issue.id, bucket: Math.floor(now / HOUR) * HOUR, events: 1 })
    .execute();
  await db
    .insertInto('issue_changes')
    .values({ project_id: projectId, issue_id: issue.id, kind: 'new', at: now, release: '1.0' })
    .execute();
  const eventId = `ev${projectId}`.padEnd(32, '0');
  const event = { id: await insertEvent(db, projectId, issue.id, fp, eventId, now) };
  // A chunk takes its first event's id, as PostgreSQL ingest names them.
  await db
    .insertInto('payload_chunks')
    .values({ id: event.id, project_id: projectId, received_at: now, data: new Uint8Array([7, 8, 9]) })
    .execute();
  await db
    .updateTable('events')
    .set({ payload_chunk: event.id, payload_start: 0, payload_length: 3 })
    .where('id', '=', event.id)
    .execute();
  await db
    .insertInto('event_tags')
    .values({ project_id: projectId, event_id: event.id, key: 'a', value: 'b' })
    .execute();
  await db
    .insertInto('seen_events')
    .values({ project_id: projectId, event_id: eventId, received_at: now, stored_id: event.id })
    .execute();
  const bucket = Math.floor(now / HOUR) * HOUR;
  await db
    .insertInto('project_hourly')
    .values({
      project_id: projectId,
      bucket,
      release: '1.0',
      events: 1,
      crashes: 0,
      errors: 1,
      fatal: 0,
      error: 1,
      warning: 0,
      info: 0,
      debug: 0,
    })
    .execute();
  await db
    .insertInto('releases')
    .values({ project_id: projectId, release: '1.0', first_seen: now, last_seen: now, platforms: '["javascript"]' })
    .execute();
  await db
    .insertInto('daily_usage')
    .values({ project_id: projectId, day: Math.floor(now / 86_400_000) * 86_400_000, events: 1 })
    .execute();
  await db
    .insertInto('sessions')
    .values({
      project_id: projectId,
      sid: `s${projectId}`.padEnd(32, '0'),
      did: null,
      release: '1.0',
      environment: 'production',
      started: now,
      status: 'ok',
      errors: 0,
      updated_at: now,
    })
    .execute();
  await db
    .insertInto('session_hourly')
    .values({ project_id: projectId, release: '1.0', bucket, total: 1, crashed: 0, errored: 0 })
    .execute();
  // Alert tables exist from migration 012 on (some tests seed an older schema).
  if (!(await db.introspection.getTables()).some((t) => t.name === 'alert_outbox')) return;
  await db
    .insertInto('alert_rules')
    .values({ project_id: projectId, type: 'new_issue', enabled: 1, cooldown_minutes: 60, last_triggered: now })
    .onConflict((oc) => oc.columns(['project_id', 'type']).doUpdateSet({ last_triggered: now }))
    .execute();
  const channel = await db
    .insertInto('alert_channels')
    .values({ project_id: projectId, kind: 'webhook', config: '{"url":"http://93.184.216.34/hook"}', created_at: now })
    .returning('id')
    .executeTakeFirstOrThrow();
  const alert = await db
    .insertInto('alert_outbox')
    .values({
      project_id: projectId,
      type: 'new_issue',
      issue_id: issue.id,
      payload: '{}',
      state: 'sent',
      created_at: now,
      triggered_at: now,
      prev_triggered: null,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  await db
    .insertInto('alert_deliveries')
    .values({
      project_id: projectId,
      alert_id: alert.id,
      channel_id: channel.id,
      type: 'new_issue',
      state: 'sent',
      attempts: 1,
      last_error: null,
      status: 200,
      created_at: now,
      sent_at: now,
      next_attempt_at: now,
      lease_until: null,
      claimed_by: null,
    })
    .execute();
  // Symbol tables exist from migration 013 on; older schemas (the migration tests) have none.
  if (!(await db.introspection.getTables()).some((t) => t.name === 'symbol_files')) return;
  const symbol = await db
    .insertInto('symbol_files')
    .values({
      project_id: projectId,
      kind: 'proguard',
      state: 'ready',
      release: '1.0',
      dist: '',
      debug_id: '',
      filename: 'mapping.txt',
      serves: '',
      serves_basename: '',
      size: 3,
      index_size: 0,
      meta: '{}',
      uploaded_at: now,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  await db
    .insertInto('symbol_chunks')
    .values({ file_id: Number(symbol.id), part: 0, seq: 0, data: new Uint8Array([1, 2, 3]) })
    .execute();
  await db
    .insertInto('symbol_jobs')
    .values({
      project_id: projectId,
      release: '1.0',
      since: now,
      cursor: -1,
      state: 'done',
      done: 0,
      lease_until: 0,
      created_at: now,
    })
    .execute();
  // The uploader's tables (src/uploads) exist from migration 014 on.
  if (!(await db.introspection.getTables()).some((t) => t.name === 'upload_assemblies')) return;
  await db
    .insertInto('cli_releases')
    .values({
      project_id: projectId,
      version: '1.0',
      url: null,
      date_created: now,
      date_started: null,
      date_released: null,
    })
    .execute();
  await db
    .insertInto('proguard_releases')
    .values({
      project_id: projectId,
      release: '1.0',
      proguard_uuid: '11111111-2222-5333-8444-555555555555',
      created_at: now,
    })
    .execute();
  await db
    .insertInto('upload_assemblies')
    .values({
      project_id: projectId,
      kind: 'dif',
      checksum: 'a'.repeat(40),
      state: 'error',
      detail: 'x',
      result: null,
      updated_at: now,
    })
    .execute();
  // Issue merges exist from migration 017 on, a CLI release's commits and deploys from 018 on.
  if (!(await db.introspection.getTables()).some((t) => t.name === 'issue_merges')) return;
  await db
    .insertInto('issue_merges')
    .values({ project_id: projectId, fingerprint: `merged-${fp}`, issue_id: issue.id, merged_at: now })
    .execute();
  if (!(await db.introspection.getTables()).some((t) => t.name === 'release_deploys')) return;
  await db
    .insertInto('release_commits')
    .values({
      project_id: projectId,
      version: '1.0',
      repository: 'acme/app',
      commit_id: 'f'.repeat(40),
      position: 0,
      message: 'm',
      author_name: null,
      author_email: null,
      date: now,
    })
    .execute();
  await db
    .insertInto('release_deploys')
    .values({
      project_id: projectId,
      deploy_id: 'd1',
      version: '1.0',
      environment: 'production',
      name: null,
      url: null,
      date_started: null,
      date_finished: now,
    })
    .execute();
  // Event attachments exist from migration 022 on.
  if (!(await db.introspection.getTables()).some((t) => t.name === 'attachments')) return;
  const attachment = await db
    .insertInto('attachments')
    .values({
      project_id: projectId,
      event_id: 'b'.repeat(32),
      digest: 'c'.repeat(40),
      name: 'screenshot.png',
      content_type: 'image/png',
      attachment_type: 'event.attachment',
      size: 3,
      received_at: now,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  await db
    .insertInto('attachment_chunks')
    .values({ attachment_id: Number(attachment.id), seq: 0, data: new Uint8Array([1, 2, 3]) })
    .execute();
  // Cron monitors and their check-ins exist from migration 025 on.
  if (!(await db.introspection.getTables()).some((t) => t.name === 'monitors')) return;
  const monitor = await db
    .insertInto('monitors')
    .values({
      project_id: projectId,
      slug: 'nightly',
      schedule_type: 'crontab',
      schedule: '0 3 * * *',
      schedule_unit: null,
      timezone: 'UTC',
      checkin_margin: 1,
      max_runtime: 30,
      failure_issue_threshold: 1,
      recovery_threshold: 1,
      enabled: 1,
      health: 'ok',
      failures: 0,
      successes: 0,
      last_status: 'ok',
      last_checkin_at: now,
      next_expected_at: now + 86_400_000,
      deadline_at: now + 86_460_000,
      version: 1,
      claim: null,
      created_at: now,
      updated_at: now,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  await db
    .insertInto('monitor_checkins')
    .values({
      project_id: projectId,
      monitor_id: monitor.id,
      check_in_id: 'c'.repeat(32),
      status: 'ok',
      environment: null,
      release: null,
      duration_ms: 5,
      created_at: now,
      updated_at: now,
      timeout_at: null,
    })
    .execute();
  // User feedback exists from migration 028 on.
  if (!(await db.introspection.getTables()).some((t) => t.name === 'user_feedback')) return;
  await db
    .insertInto('user_feedback')
    .values({
      project_id: projectId,
      digest: 'd'.repeat(40),
      event_id: 'b'.repeat(32),
      name: 'n',
      email: 'e',
      comments: 'c',
      url: '',
      source: 'api',
      created_at: now,
      received_at: now,
    })
    .execute();
  // Per-environment issue hours exist from migration 024 on, a release's users per hour from 027 on.
  const tables = (await db.introspection.getTables()).map((t) => t.name);
  if (tables.includes('issue_environment_hourly')) {
    await db
      .insertInto('issue_environment_hourly')
      .values({ issue_id: issue.id, environment: 'production', bucket: Math.floor(now / HOUR) * HOUR, events: 1 })
      .execute();
  }
  if (tables.includes('session_users')) {
    await db
      .insertInto('session_users')
      .values({
        project_id: projectId,
        release: '1.0',
        bucket: Math.floor(now / HOUR) * HOUR,
        did: 'device-1',
        crashed: 0,
      })
      .execute();
  }
}

/** Rows of the project per table: tables with project_id directly, issue_* tables through their issue. */
export async function countRowsByProject(db: Kysely<Database>, projectId: number): Promise<Record<string, number>> {
  const tables = await db.introspection.getTables();
  const counts: Record<string, number> = {};
  for (const table of tables) {
    const columns = table.columns.map((c) => c.name);
    let query;
    if (table.name === 'projects') continue;
    if (columns.includes('project_id')) {
      query = sql<{ n: number }>`select count(*) as n from ${sql.table(table.name)} where project_id = ${projectId}`;
    } else if (columns.includes('issue_id')) {
      query = sql<{
        n: number;
      }>`select count(*) as n from ${sql.table(table.name)} t where t.issue_id in (select id from issues where project_id = ${projectId})`;
    } else {
      continue;
    }
    const row = (await query.execute(db)).rows[0];
    counts[table.name] = Number(row.n);
  }
  return counts;
}

/** Rows in tables keyed by issue_id whose issue no longer exists (must be none after a delete). */
export async function orphanIssueRows(db: Kysely<Database>): Promise<Record<string, number>> {
  const tables = await db.introspection.getTables();
  const counts: Record<string, number> = {};
  for (const table of tables) {
    if (table.name === 'issues' || !table.columns.some((c) => c.name === 'issue_id')) continue;
    const row = (
      await sql<{
        n: number;
      }>`select count(*) as n from ${sql.table(table.name)} t where not exists (select 1 from issues i where i.id = t.issue_id)`.execute(
        db,
      )
    ).rows[0];
    counts[table.name] = Number(row.n);
  }
  return counts;
}
