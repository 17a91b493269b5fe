// Storage usage and budgets through the real server: storage_usage (kept by triggers)
// agrees with the chunks' real sizes after ingest, end-user deletion and retention; the
// usage routes answer bytes and counts by kind and growth per day; a project past a tiny
// budget loses its oldest hours of events at the next retention run, and only those; a
// project with attachments loses its oldest attachments first and keeps every event while
// that is enough. The budget's plan as a pure rule.
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { budgetPlan, MB } from '../../src/privacy/usage.js';
import { RETENTION_DOMAINS } from '../../src/editions/retention.js';
import { runRetention } from '../../src/store/retention.js';
import type { ProjectRow } from '../../src/store/schema.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { envelope, errorEvent, eventsOf, issuesOf, makeProject, post } from '../ingest/helpers.js';

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 5, 10, 8, 0, 0);

describe('budgetPlan', () => {
  const payloads = [
    { bucket: 3 * HOUR, bytes: 300 },
    { bucket: 1 * HOUR, bytes: 100 },
    { bucket: 2 * HOUR, bytes: 200 },
  ];
  it.each([
    ['no budget', 0, null],
    ['fits', 600, null],
    ['one hour over', 550, 2 * HOUR],
    ['two hours over', 350, 3 * HOUR],
    ['only the newest hour fits', 300, 3 * HOUR],
    ['nothing fits', 100, 4 * HOUR],
  ])('events only: %s', (_what, budget, eventsBefore) => {
    expect(budgetPlan(payloads, [], budget)).toEqual({ attachmentsBefore: null, eventsBefore });
  });

  const attachments = [
    { bucket: 2 * HOUR, bytes: 50 },
    { bucket: 1 * HOUR, bytes: 1000 },
    { bucket: 3 * HOUR, bytes: 0 },
    { bucket: 4 * HOUR, bytes: 400 },
  ];
  // Payloads 600 + attachments 1450 = 2050.
  it.each([
    ['fits', 2050, null, null],
    ['the oldest attachments are enough', 1900, 2 * HOUR, null],
    ['two hours of attachments', 1000, 3 * HOUR, null],
    ['every attachment, just enough', 600, 5 * HOUR, null],
    ['every attachment, then the oldest events', 500, 5 * HOUR, 2 * HOUR],
    ['every attachment and every event', 1, 5 * HOUR, 4 * HOUR],
  ])('attachments first: %s', (_what, budget, attachmentsBefore, eventsBefore) => {
    expect(budgetPlan(payloads, attachments, budget)).toEqual({ attachmentsBefore, eventsBefore });
  });
  it('takes attachments older than every event before any event', () => {
    // The newest attachment is older than the oldest event: still the attachments go first.
    expect(budgetPlan([{ bucket: 10 * HOUR, bytes: 100 }], [{ bucket: 1 * HOUR, bytes: 100 }], 150)).toEqual({
      attachmentsBefore: 2 * HOUR,
      eventsBefore: null,
    });
  });
});

describe.each(dialects)('storage usage and budgets on %s', (dialect) => {
  let t: TestServer;
  let clock: ManualClock;
  let p: ProjectRow;

  /** Events of ~80 KB that do not compress (random padding), so the budget is reached with few. */
  async function sendAt(at: number, n: number, user = 'u1'): Promise<void> {
    clock.set(at);
    const events = Array.from({ length: n }, () => ({
      type: 'event',
      payload: { ...errorEvent({ timestamp: at, user }), extra: { padding: randomBytes(60_000).toString('base64') } },
    }));
    expect((await post(t, p, envelope({}, events))).status).toBe(200);
  }

  async function chunkBytes(projectId: number): Promise<number> {
    const fn = dialect === 'postgres' ? sql`octet_length(data)` : sql`length(data)`;
    const r = await sql<{
      n: number | string | null;
    }>`select sum(${fn}) as n from payload_chunks where project_id = ${projectId}`.execute(t.deps.store.db);
    return Number(r.rows[0]?.n ?? 0);
  }

  async function usageBytes(projectId: number): Promise<number> {
    const r = await t.deps.store.db
      .selectFrom('storage_usage')
      .select(sql<number>`coalesce(sum(bytes), 0)`.as('n'))
      .where('project_id', '=', projectId)
      .executeTakeFirst();
    return Number(r?.n ?? 0);
  }

  beforeAll(async () => {
    clock = new ManualClock(T0);
    t = await startTestServer(dialect, { clock });
    p = await makeProject(t);
    for (let h = 0; h < 4; h++) await sendAt(T0 + h * HOUR, 8, h === 0 ? 'early-user' : 'u1');
  }, 120_000);
  afterAll(async () => {
    await t?.close();
  });

  it('keeps storage_usage equal to the chunks’ real bytes, and answers usage by kind and day', async () => {
    const real = await chunkBytes(p.id);
    expect(real).toBeGreaterThan(4 * 8 * 60_000);
    expect(await usageBytes(p.id)).toBe(real);

    const res = await t.api(`/api/projects/${p.slug}/usage`);
    expect(res.status).toBe(200);
    const u = await res.json();
    expect(u.kinds.events).toEqual({ count: 32, bytes: real });
    expect(u.kinds.symbols).toEqual({ count: 0, bytes: 0 });
    expect(u.bytes).toBe(real);
    expect(u.budget_bytes).toBeNull();
    expect(u.growth).toHaveLength(30);
    expect(u.growth.at(-1)).toEqual({ day: '2026-06-10', bytes: real, events: 32 });

    const all = await (await t.api('/api/usage')).json();
    expect(all.kinds.events.count).toBe(32);
    expect(all.projects.map((x: { slug: string }) => x.slug)).toContain(p.slug);
    if (dialect === 'sqlite') expect(all.database_bytes).toBeGreaterThan(real);
    expect((await t.api('/api/projects/nope/usage')).status).toBe(404);
  });

  it('end-user deletion rewrites chunks and storage_usage follows', async () => {
    expect((await t.api(`/api/projects/${p.slug}/users/early-user/events`, { method: 'DELETE' })).status).toBe(204);
    expect(await usageBytes(p.id)).toBe(await chunkBytes(p.id));
  });

  it('a project past its budget loses its oldest hours at the next retention run', async () => {
    // Put back the erased hour, then a budget of about two and a half hours of events.
    await sendAt(T0 + 4 * HOUR, 8);
    const hourBytes = (await usageBytes(p.id)) / 4;
    const budgetMb = Math.max(1, Math.floor((2.5 * hourBytes) / MB));
    expect(
      (await t.api(`/api/projects/${p.slug}`, { method: 'PATCH', json: { storage_budget_mb: budgetMb } })).status,
    ).toBe(200);
    const before = await eventsOf(t, p);
    const [issueBefore] = await issuesOf(t, p);

    const summary = await runRetention(t.deps.store, { now: T0 + 5 * HOUR, retentionDays: 3650, ...RETENTION_DOMAINS });
    expect(summary.ran).toBe(true);
    const after = await eventsOf(t, p);
    const left = await usageBytes(p.id);
    expect(left).toBeLessThanOrEqual(budgetMb * MB);
    expect(left).toBe(await chunkBytes(p.id));
    expect(after.length).toBeLessThan(before.length);
    expect(after.length).toBeGreaterThan(0);
    // Oldest first: every event left is newer than every event removed.
    const kept = new Set(after.map((e) => e.id));
    const removed = before.filter((e) => !kept.has(e.id));
    expect(Math.min(...after.map((e) => Number(e.received_at)))).toBeGreaterThan(
      Math.max(...removed.map((e) => Number(e.received_at))),
    );
    const [issueAfter] = await issuesOf(t, p);
    expect(Number(issueAfter.event_count)).toBe(Number(issueBefore.event_count));
    expect(Number(issueAfter.stored_count)).toBe(after.length);

    const usage = await (await t.api(`/api/projects/${p.slug}/usage`)).json();
    expect(usage.budget_bytes).toBe(budgetMb * MB);
    // A second run finds it within budget and removes nothing more.
    await runRetention(t.deps.store, { now: T0 + 5 * HOUR, retentionDays: 3650, ...RETENTION_DOMAINS });
    expect(await eventsOf(t, p)).toHaveLength(after.length);
  });
});

describe.each(dialects)('a storage budget takes attachments first on %s', (dialect) => {
  let t: TestServer;
  let clock: ManualClock;
  let p: ProjectRow;
  const ATTACHMENT_BYTES = 600 * 1024;

  /** One event with an incompressible attachment of ATTACHMENT_BYTES, received at `at`. */
  async function sendWithAttachment(at: number): Promise<void> {
    clock.set(at);
    const event = errorEvent({ timestamp: at });
    const file = randomBytes(ATTACHMENT_BYTES);
    const body = Buffer.concat([
      Buffer.from(
        `${JSON.stringify({ event_id: event.event_id })}\n${JSON.stringify({ type: 'event' })}\n${JSON.stringify(event)}\n`,
      ),
      Buffer.from(
        `${JSON.stringify({ type: 'attachment', length: file.length, filename: `log-${at}.bin`, content_type: 'application/octet-stream' })}\n`,
      ),
      file,
      Buffer.from('\n'),
    ]);
    expect((await post(t, p, body)).status).toBe(200);
  }

  /** What the rows hold: payload chunks' bytes and attachments' sizes, per kind. */
  async function realBytes(): Promise<{ payloads: number; attachments: number }> {
    const fn = dialect === 'postgres' ? sql`octet_length(data)` : sql`length(data)`;
    const chunks = await sql<{
      n: number | string | null;
    }>`select sum(${fn}) as n from payload_chunks where project_id = ${p.id}`.execute(t.deps.store.db);
    const files = await sql<{
      n: number | string | null;
    }>`select sum(size) as n from attachments where project_id = ${p.id}`.execute(t.deps.store.db);
    return { payloads: Number(chunks.rows[0]?.n ?? 0), attachments: Number(files.rows[0]?.n ?? 0) };
  }

  async function attachmentTimes(): Promise<number[]> {
    const rows = await t.deps.store.db
      .selectFrom('attachments')
      .select('received_at')
      .where('project_id', '=', p.id)
      .orderBy('received_at')
      .execute();
    return rows.map((r) => Number(r.received_at));
  }

  beforeAll(async () => {
    clock = new ManualClock(T0);
    t = await startTestServer(dialect, { clock });
    p = await makeProject(t);
    for (let h = 0; h < 4; h++) await sendWithAttachment(T0 + h * HOUR);
  }, 120_000);
  afterAll(async () => {
    await t?.close();
  });

  it('counts attachments in the usage, then removes the oldest ones and keeps every event', async () => {
    const real = await realBytes();
    expect(real.attachments).toBe(4 * ATTACHMENT_BYTES);
    const usage = await (await t.api(`/api/projects/${p.slug}/usage`)).json();
    expect(usage.kinds.attachments).toEqual({ count: 4, bytes: 4 * ATTACHMENT_BYTES });
    expect(usage.kinds.events).toEqual({ count: 4, bytes: real.payloads });
    expect(usage.bytes).toBe(real.payloads + real.attachments);

    // 1 MB holds the events and one attachment, not two.
    expect(real.payloads + ATTACHMENT_BYTES).toBeLessThan(MB);
    expect(real.payloads + 2 * ATTACHMENT_BYTES).toBeGreaterThan(MB);
    expect((await t.api(`/api/projects/${p.slug}`, { method: 'PATCH', json: { storage_budget_mb: 1 } })).status).toBe(
      200,
    );
    const summary = await runRetention(t.deps.store, { now: T0 + 5 * HOUR, retentionDays: 3650, ...RETENTION_DOMAINS });
    expect(summary.deleted.attachments).toBe(3);
    expect(summary.deleted.events).toBe(0);

    expect(await attachmentTimes()).toEqual([T0 + 3 * HOUR]);
    expect(await eventsOf(t, p)).toHaveLength(4);
    const after = await (await t.api(`/api/projects/${p.slug}/usage`)).json();
    const left = await realBytes();
    expect(after.kinds.attachments).toEqual({ count: 1, bytes: ATTACHMENT_BYTES });
    expect(after.kinds.events.bytes).toBe(left.payloads);
    expect(after.bytes).toBe(left.payloads + left.attachments);
    expect(after.bytes).toBeLessThanOrEqual(MB);
    // Within budget now: a second run removes nothing.
    const again = await runRetention(t.deps.store, { now: T0 + 5 * HOUR, retentionDays: 3650, ...RETENTION_DOMAINS });
    expect(again.deleted.attachments + again.deleted.events).toBe(0);
  });
});
