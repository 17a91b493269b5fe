// The D1 store from inside the Workers runtime (vitest-pool-workers: these tests run
// in workerd, against the D1 binding of wrangler.jsonc): migrations with D1's own
// tables present, atomic batches, blobs, statements over D1's parameter limit, the
// rate limit shared by isolates, and retention's batch path.
import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import { openD1Store, type D1Binding } from '../../../../src/store/d1.js';
import type { Store } from '../../../../src/store/database.js';
import { migrate } from '../../../../src/store/migrate.js';
import { createProject, PROJECT_DEFAULTS } from '../../../../src/store/projects.js';
import { SharedRateLimiter } from '../../../../src/store/rate-limits.js';
import { runRetention } from '../../../../src/store/retention.js';
import { insertEvent, insertIssue } from '../../../helpers/seed-rows.js';

const DAY = 86_400_000;
const binding = (env as unknown as { DB: D1Binding }).DB;
let store: Store;

beforeAll(async () => {
  store = openD1Store(binding);
  await migrate(store);
});

describe('the D1 store inside workerd', () => {
  it('migrates, lists the tables without D1 internal ones, and a second run finds nothing to do', async () => {
    // Cloudflare's D1 keeps internal tables (_cf_KV) whose table info it refuses (SQLITE_AUTH);
    // local D1 hides them, so here the listing is only checked not to include any.
    const tables = await store.db.introspection.getTables();
    expect(tables.map((t) => t.name)).toContain('issues');
    expect(tables.some((t) => t.name.startsWith('_cf_'))).toBe(false);
    expect((await migrate(store)).applied).toEqual([]);
  });

  it('runs a batch atomically: a failing statement leaves the earlier ones unwritten', async () => {
    const insert = (slug: string) =>
      store.db
        .insertInto('projects')
        .values({ ...PROJECT_DEFAULTS, slug, name: slug, dsn_key: `key-${slug}`, created_at: 1 })
        .compile();
    await expect(store.atomic([insert('batch-one'), insert('batch-one')])).rejects.toThrow();
    expect(await store.db.selectFrom('projects').select('id').where('slug', '=', 'batch-one').execute()).toEqual([]);
    const results = await store.atomic([
      insert('batch-two'),
      store.db.selectFrom('projects').select('slug').where('slug', '=', 'batch-two').compile(),
    ]);
    expect(results[1].rows).toEqual([{ slug: 'batch-two' }]);
  });

  it('stores and reads blobs as bytes, also from a view into a larger buffer', async () => {
    const whole = new Uint8Array(300).map((_, i) => i % 256);
    const view = whole.subarray(100, 200);
    const row = await store.db
      .insertInto('payload_chunks')
      .values({ project_id: 1, received_at: 1, data: view } as never)
      .returning('id')
      .executeTakeFirstOrThrow();
    const back = await store.db
      .selectFrom('payload_chunks')
      .select('data')
      .where('id', '=', Number(row.id))
      .executeTakeFirstOrThrow();
    expect(back.data).toBeInstanceOf(Uint8Array);
    expect([...back.data]).toEqual([...view]);
  });

  it('answers statements with more values than D1 binds', async () => {
    const ids = Array.from({ length: 700 }, (_, i) => i + 1);
    const slugs = Array.from({ length: 300 }, (_, i) => `no-such-'slug'-${i}`).concat(['batch-two']);
    const rows = await store.db
      .selectFrom('projects')
      .select('slug')
      .where('id', 'in', ids)
      .where('slug', 'in', slugs)
      .execute();
    expect(rows).toEqual([{ slug: 'batch-two' }]);
  });

  it('shares a rate limit between isolates through D1', async () => {
    // Two limiters are two isolates: each leases part of the minute from rate_limit_windows.
    const a = new SharedRateLimiter(store, 10);
    const b = new SharedRateLimiter(store, 10);
    const now = 1_000 * 60_000 + 5_000;
    let allowed = 0;
    for (let i = 0; i < 15; i++) {
      if ((await a.hit('api:shared', now)).allowed) allowed++;
      if ((await b.hit('api:shared', now)).allowed) allowed++;
    }
    expect(allowed).toBe(10);
  });

  it('retention deletes expired events, their tags and stored counts in atomic batches', async () => {
    const now = Date.now();
    const project = await createProject(store.db, { ...PROJECT_DEFAULTS, slug: 'retained', name: 'retained' }, now);
    const issueId = await insertIssue(store.db, project.id, 'fp-retained', now);
    const old: number[] = [];
    for (let i = 0; i < 25; i++)
      old.push(
        await insertEvent(store.db, project.id, issueId, 'fp-retained', `old${i}`.padEnd(32, '0'), now - 40 * DAY),
      );
    const kept = await insertEvent(store.db, project.id, issueId, 'fp-retained', 'kept'.padEnd(32, '0'), now);
    await store.db
      .insertInto('event_tags')
      .values(old.concat(kept).map((id) => ({ project_id: project.id, event_id: id, key: 'k', value: 'v' })) as never)
      .execute();
    await store.db.updateTable('issues').set({ stored_count: 26, event_count: 26 }).where('id', '=', issueId).execute();

    const summary = await runRetention(store, { now, retentionDays: 30, batchSize: 10 });
    expect(summary.ran).toBe(true);
    expect(summary.deleted.events).toBe(25);
    expect(summary.deleted.event_tags).toBe(25);
    const events = await store.db.selectFrom('events').select('id').where('project_id', '=', project.id).execute();
    expect(events.map((e) => Number(e.id))).toEqual([kept]);
    const issue = await store.db
      .selectFrom('issues')
      .select(['stored_count', 'event_count'])
      .where('id', '=', issueId)
      .executeTakeFirstOrThrow();
    expect(issue).toEqual({ stored_count: 1, event_count: 26 });
    expect(await store.db.selectFrom('job_locks').selectAll().execute()).toEqual([]);
  });
});
