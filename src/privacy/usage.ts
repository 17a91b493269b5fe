// Storage: what each project keeps (docs/privacy.md "Storage"), read from aggregates,
// never from the stored rows themselves: `storage_usage` (payload and attachment bytes
// per hour, kept by triggers), the issues' `stored_count`, `daily_usage` (events received
// per day) and the symbol files' sizes; and the storage budget's plan, a pure function of
// the hourly bytes: attachments go first, oldest hour first, then events. Web APIs only:
// every edition serves the usage routes.
import { type Kysely, sql } from 'kysely';
import { DAY_MS, HOUR_MS } from '../clock.js';
import type { Dialect } from '../store/database.js';
import type { Database } from '../store/schema.js';

type Db = Kysely<Database>;

export const MB = 1024 * 1024;
/** Days of growth the usage answers list. */
export const GROWTH_DAYS = 30;

export interface HourBytes {
  bucket: number;
  bytes: number;
}

/** What retention removes from a project past its budget: everything received before each time (null: none). */
export interface BudgetPlan {
  attachmentsBefore: number | null;
  eventsBefore: number | null;
}

/** Whole hours, oldest first, until `total` is at most `budget`: the end of the last hour taken, and what is left. */
function dropOldest(hours: HourBytes[], total: number, budget: number): { before: number | null; left: number } {
  let before: number | null = null;
  for (const h of [...hours].filter((x) => x.bytes > 0).sort((a, b) => a.bucket - b.bucket)) {
    if (total <= budget) break;
    total -= h.bytes;
    before = h.bucket + HOUR_MS;
  }
  return { before, left: total };
}

/**
 * What goes so that a project fits its budget, oldest first and attachments first: whole
 * hours of attachments, oldest first, until what is left (payloads and attachments) is at
 * most `budgetBytes`; only when every attachment is gone and that is still too much, whole
 * hours of events (with their payloads), oldest first. Nothing when it fits (or there is
 * no budget).
 */
export function budgetPlan(payloads: HourBytes[], attachments: HourBytes[], budgetBytes: number): BudgetPlan {
  const none: BudgetPlan = { attachmentsBefore: null, eventsBefore: null };
  if (budgetBytes <= 0) return none;
  const sum = (hours: HourBytes[]) => hours.reduce((n, h) => n + Math.max(0, h.bytes), 0);
  const total = sum(payloads) + sum(attachments);
  if (total <= budgetBytes) return none;
  const a = dropOldest(attachments, total, budgetBytes);
  if (a.left <= budgetBytes) return { attachmentsBefore: a.before, eventsBefore: null };
  return { attachmentsBefore: a.before, eventsBefore: dropOldest(payloads, a.left, budgetBytes).before };
}

export interface KindUsage {
  count: number;
  bytes: number;
}

export interface ProjectUsage {
  project_id: number;
  slug: string;
  bytes: number;
  budget_bytes: number | null;
  kinds: { events: KindUsage; attachments: KindUsage; symbols: KindUsage };
  growth: { day: string; bytes: number; events: number }[];
}

/** Retention's budget plan (src/store/retention.ts RetentionDomains): the hours and their bytes come from storage_usage, kept by triggers. */
export async function storageBudgetPlan(
  db: Db,
  project: { id: number; storage_budget_mb: number },
): Promise<BudgetPlan> {
  const [payloads, attachments] = await Promise.all([
    usageHours(db, project.id, 'payloads'),
    usageHours(db, project.id, 'attachments'),
  ]);
  return budgetPlan(payloads, attachments, project.storage_budget_mb * MB);
}

/** Each hour of a project that still holds bytes of that kind (`payloads`, `attachments`). */
export async function usageHours(db: Db, projectId: number, kind: 'payloads' | 'attachments'): Promise<HourBytes[]> {
  const rows = await db
    .selectFrom('storage_usage')
    .select(['bucket', 'bytes'])
    .where('project_id', '=', projectId)
    .where('kind', '=', kind)
    .where('bytes', '>', 0)
    .orderBy('bucket')
    .execute();
  return rows.map((r) => ({ bucket: Number(r.bucket), bytes: Number(r.bytes) }));
}

function isoDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** One project's usage; `now` decides the growth window. */
export async function projectUsage(
  db: Db,
  project: { id: number; slug: string; storage_budget_mb: number },
  now: number,
): Promise<ProjectUsage> {
  const since = Math.floor(now / DAY_MS) * DAY_MS - (GROWTH_DAYS - 1) * DAY_MS;
  const [kinds, events, symbols, growth, received] = await Promise.all([
    db
      .selectFrom('storage_usage')
      .select(['kind', sql<number>`coalesce(sum(bytes), 0)`.as('bytes'), sql<number>`coalesce(sum(count), 0)`.as('n')])
      .where('project_id', '=', project.id)
      .groupBy('kind')
      .execute(),
    db
      .selectFrom('issues')
      .select(sql<number>`coalesce(sum(stored_count), 0)`.as('n'))
      .where('project_id', '=', project.id)
      .executeTakeFirst(),
    db
      .selectFrom('symbol_files')
      .select([sql<number>`count(*)`.as('n'), sql<number>`coalesce(sum(size + index_size), 0)`.as('bytes')])
      .where('project_id', '=', project.id)
      .executeTakeFirst(),
    db
      .selectFrom('storage_usage')
      .select(['bucket', 'bytes'])
      .where('project_id', '=', project.id)
      .where('bucket', '>=', since)
      .execute(),
    db
      .selectFrom('daily_usage')
      .select(['day', 'events'])
      .where('project_id', '=', project.id)
      .where('day', '>=', since)
      .execute(),
  ]);
  const days = new Map<string, { bytes: number; events: number }>();
  for (let d = since; d <= now; d += DAY_MS) days.set(isoDay(d), { bytes: 0, events: 0 });
  for (const g of growth) {
    const day = days.get(isoDay(Number(g.bucket)));
    if (day) day.bytes += Number(g.bytes);
  }
  for (const r of received) {
    const day = days.get(isoDay(Number(r.day)));
    if (day) day.events += Number(r.events);
  }
  const kind = (name: string) => kinds.find((k) => k.kind === name);
  const eventBytes = Number(kind('payloads')?.bytes ?? 0);
  const attachments = { count: Number(kind('attachments')?.n ?? 0), bytes: Number(kind('attachments')?.bytes ?? 0) };
  const symbolBytes = Number(symbols?.bytes ?? 0);
  return {
    project_id: project.id,
    slug: project.slug,
    bytes: eventBytes + attachments.bytes + symbolBytes,
    budget_bytes: project.storage_budget_mb > 0 ? project.storage_budget_mb * MB : null,
    kinds: {
      events: { count: Number(events?.n ?? 0), bytes: eventBytes },
      attachments,
      symbols: { count: Number(symbols?.n ?? 0), bytes: symbolBytes },
    },
    growth: [...days].map(([day, v]) => ({ day, ...v })),
  };
}

/** The whole database's size where the database says it cheaply (SQLite pages, PostgreSQL); else null. */
export async function databaseBytes(db: Db, dialect: Dialect): Promise<number | null> {
  try {
    if (dialect === 'postgres') {
      const r = await sql<{ n: string }>`select pg_database_size(current_database()) as n`.execute(db);
      return Number(r.rows[0]?.n ?? 0);
    }
    const count = await sql<{ page_count: number }>`pragma page_count`.execute(db);
    const size = await sql<{ page_size: number }>`pragma page_size`.execute(db);
    return Number(count.rows[0]?.page_count ?? 0) * Number(size.rows[0]?.page_size ?? 0);
  } catch {
    // D1 refuses pragmas it does not list; its size is in Cloudflare's dashboard.
    return null;
  }
}
