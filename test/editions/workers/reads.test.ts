// The read API and retention on the serverless edition answer what the Node server
// answers on the same data. A week of demo data goes through the Node server's real
// ingest (`faultline seed`) into SQLite; every row is copied into the Worker's D1 (in
// workerd); then each read route is asked of both and the answers compared, issue
// status changes are made on both, and retention runs on both (the Worker's by its
// cron, without interactive transactions) and must delete the same rows.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../../src/clock.js';
import { runSeed } from '../../../src/cli/seed.js';
import { RETENTION_CRON } from '../../../src/editions/workers/crons.js';
import { runRetention } from '../../../src/store/retention.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import { startTestWorker, type D1, type TestWorker } from './harness.js';

const DAY = 86_400_000;
const HOUR = 3_600_000;
const SETTINGS = { API_KEYS: 'k', PUBLIC_URL: 'https://errors.example.com', RATE_LIMIT: '0', RETENTION_DAYS: '30' };

/** Tables in an order that satisfies their foreign keys. */
const FIRST = ['projects', 'payload_chunks', 'issues', 'events'];

/** Copies every row of the Node server's SQLite database into D1, within D1's 100 parameters per statement. */
async function copyIntoD1(t: TestServer, d1: D1): Promise<Record<string, number>> {
  const db = t.deps.store.db;
  const names = (
    await sql<{
      name: string;
    }>`select name from sqlite_master where type = 'table' and name not like 'sqlite_%' and name not like 'kysely_%'`.execute(
      db,
    )
  ).rows.map((r) => r.name);
  // storage_usage is kept by triggers on payload_chunks (docs/privacy.md): D1's own triggers fill it as the chunks arrive.
  const tables = [...FIRST, ...names.filter((n) => !FIRST.includes(n) && n !== 'storage_usage').sort()];
  const counts: Record<string, number> = {};
  for (const table of tables) {
    // table_info leaves out generated columns, which D1 computes itself.
    const columns = (await sql<{ name: string }>`select name from pragma_table_info(${table})`.execute(db)).rows.map(
      (r) => r.name,
    );
    const rows = (await sql<Record<string, unknown>>`select * from ${sql.table(table)}`.execute(db)).rows;
    counts[table] = rows.length;
    const perStatement = Math.floor(100 / columns.length);
    const statements = [];
    for (let i = 0; i < rows.length; i += perStatement) {
      const chunk = rows.slice(i, i + perStatement);
      const placeholders = chunk.map(() => `(${columns.map(() => '?').join(', ')})`).join(', ');
      const values = chunk.flatMap((row) =>
        columns.map((c) => (row[c] instanceof Uint8Array ? [...(row[c] as Uint8Array)] : row[c])),
      );
      statements.push(
        d1
          .prepare(`insert into ${table} (${columns.map((c) => `"${c}"`).join(', ')}) values ${placeholders}`)
          .bind(...values.map((v) => (Array.isArray(v) ? new Uint8Array(v).buffer : v))),
      );
    }
    for (let i = 0; i < statements.length; i += 50) await d1.batch(statements.slice(i, i + 50));
  }
  return counts;
}

async function countRows(query: (table: string) => Promise<number>, tables: string[]): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const table of tables) out[table] = await query(table);
  return out;
}

describe('reads and retention on D1 answer as on the Node server', () => {
  let node: TestServer;
  let worker: TestWorker;
  let d1: D1;
  let slug: string;
  let window: string;

  beforeAll(async () => {
    [node, worker] = await Promise.all([
      startTestServer('sqlite', { env: SETTINGS, clock: systemClock }),
      startTestWorker(SETTINGS),
    ]);
    slug = 'shop';
    await runSeed({ slug, url: node.url, apiKey: 'k', days: 7, seed: 42 });
    const db = node.deps.store.db;
    // A third of the raw rows arrived 40 days ago, so retention has work on both sides.
    await sql`update events set received_at = received_at - ${40 * DAY} where id % 3 = 0`.execute(db);
    await sql`update seen_events set received_at = received_at - ${40 * DAY} where stored_id % 3 = 0`.execute(db);
    await sql`update sessions set updated_at = updated_at - ${40 * DAY} where rowid % 3 = 0`.execute(db);
    d1 = await worker.d1();
    // The Worker migrates on its first request.
    expect((await worker.api('/health')).status).toBe(200);
    const copied = await copyIntoD1(node, d1);
    expect(copied.events).toBeGreaterThan(100);
    expect(copied.sessions).toBeGreaterThan(0);
    // An explicit window, so both answer about the same hours.
    const to = Math.ceil((Date.now() + 1) / HOUR) * HOUR;
    window = `from=${new Date(to - 7 * DAY).toISOString()}&to=${new Date(to).toISOString()}`;
  }, 120_000);

  afterAll(async () => {
    await Promise.all([node?.close(), worker?.close()]);
  });

  async function both(path: string, init?: RequestInit & { json?: unknown }): Promise<[number, unknown][]> {
    return Promise.all(
      [node, worker].map(async (side) => {
        const res = await side.api(path, init);
        return [res.status, await res.json()] as [number, unknown];
      }),
    );
  }

  /** After status changes, the times each side stamped them with (its own now) differ by milliseconds. */
  let statusTimesDiffer = false;
  const STATUS_TIMES = new Set(['updated_at', 'resolved_at']);
  const comparable = (value: unknown): unknown =>
    JSON.parse(JSON.stringify(value), (key, v) => (statusTimesDiffer && STATUS_TIMES.has(key) ? undefined : v));

  async function expectSame(path: string, init?: RequestInit & { json?: unknown }): Promise<any> {
    const [fromNode, fromWorker] = await both(path, init);
    expect(fromNode[0], path).toBe(200);
    expect(comparable(fromWorker), path).toEqual(comparable(fromNode));
    return fromNode[1];
  }

  it('projects, overview, issues, issue detail', async () => {
    await expectSame('/api/projects');
    await expectSame(`/api/projects/${slug}`);
    await expectSame(`/api/projects/${slug}/overview?${window}`);
    const issues = await expectSame(`/api/projects/${slug}/issues?${window}&limit=100`);
    expect(issues.issues.length).toBeGreaterThan(3);
    await expectSame(`/api/projects/${slug}/issues?${window}&sort=events&level=error`);
    await expectSame(`/api/projects/${slug}/issues?${window}&sort=first_seen&limit=2&offset=1`);
    for (const issue of issues.issues.slice(0, 4)) {
      await expectSame(`/api/projects/${slug}/issues/${issue.fingerprint}?${window}`);
    }
  });

  it('events (lists, filters, paging) and event detail with the stored payload', async () => {
    const page = await expectSame(`/api/projects/${slug}/events?limit=50`);
    expect(page.events.length).toBe(50);
    await expectSame(`/api/projects/${slug}/events?limit=50&before=${page.next_before}`);
    await expectSame(`/api/projects/${slug}/events?${window}&level=error&limit=20`);
    const release = page.events.find((e: { release?: string }) => e.release)?.release;
    if (release) await expectSame(`/api/projects/${slug}/events?release=${encodeURIComponent(release)}&limit=20`);
    for (const event of page.events.slice(0, 5)) {
      const detail = await expectSame(`/api/projects/${slug}/events/${event.id}`);
      expect(JSON.stringify(detail).length).toBeGreaterThan(200);
    }
  });

  it('releases and release detail', async () => {
    const releases = await expectSame(`/api/projects/${slug}/releases?${window}`);
    const first = releases.releases?.[0] ?? releases[0];
    expect(first).toBeTruthy();
    await expectSame(`/api/projects/${slug}/releases/${encodeURIComponent(first.version ?? first.release)}?${window}`);
  });

  it('issue status changes, one and in bulk, then the lists agree', async () => {
    const issues = (await expectSame(`/api/projects/${slug}/issues?${window}&limit=100`)).issues;
    const [one, ...rest] = issues.map((i: { fingerprint: string }) => i.fingerprint);
    statusTimesDiffer = true;
    // More fingerprints than D1 binds parameters: the statements carry them as literals.
    const unknown = Array.from({ length: 150 }, (_, i) => `no-such-issue-${i}-'quoted'`);
    const single = await expectSame(`/api/projects/${slug}/issues/${one}`, {
      method: 'PATCH',
      json: { status: 'resolved' },
    });
    expect(single.status).toBe('resolved');
    expect(
      await expectSame(`/api/projects/${slug}/issues/bulk`, {
        method: 'POST',
        json: { fingerprints: [...rest.slice(0, 3), ...unknown], status: 'ignored' },
      }),
    ).toEqual({
      updated: 3,
      status: 'ignored',
    });
    expect((await expectSame(`/api/projects/${slug}/issues?${window}&limit=100&status=ignored`)).issues).toHaveLength(
      3,
    );
    await expectSame(`/api/projects/${slug}/overview?${window}`);
    const changes = await d1.prepare('select kind, count(*) as n from issue_changes group by kind order by kind').all();
    const nodeChanges = await sql`select kind, count(*) as n from issue_changes group by kind order by kind`.execute(
      node.deps.store.db,
    );
    expect(changes.results).toEqual(nodeChanges.rows);
  });

  it('retention by the daily cron deletes what retention deletes on the server, and reads still agree', async () => {
    const tables = ['events', 'event_tags', 'payload_chunks', 'seen_events', 'sessions'];
    const db = node.deps.store.db;
    const sqliteCount = async (table: string) =>
      Number((await sql<{ n: number }>`select count(*) as n from ${sql.table(table)}`.execute(db)).rows[0].n);
    const d1Count = async (table: string) =>
      Number((await d1.prepare(`select count(*) as n from ${table}`).first<{ n: number }>())!.n);
    const before = await countRows(d1Count, tables);
    expect(before).toEqual(await countRows(sqliteCount, tables));

    const summary = await runRetention(node.deps.store, { now: Date.now(), retentionDays: 30 });
    expect(summary.deleted.events).toBeGreaterThan(0);
    await worker.runCron(RETENTION_CRON);

    const after = await countRows(d1Count, tables);
    expect(after).toEqual(await countRows(sqliteCount, tables));
    expect(after.events).toBe(before.events - summary.deleted.events);
    const storedCounts = 'select id, stored_count, event_count from issues order by id';
    expect((await d1.prepare(storedCounts).all()).results).toEqual((await sql.raw(storedCounts).execute(db)).rows);
    await expectSame(`/api/projects/${slug}/issues?${window}&limit=100`);
    await expectSame(`/api/projects/${slug}/events?limit=50`);
  });
});
