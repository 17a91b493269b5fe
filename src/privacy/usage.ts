// Storage: what each project keeps (docs/privacy.md "Storage"), read from aggregates,
// never from the stored rows themselves: `storage_usage` (payload bytes per hour, kept by
// triggers), the issues' `stored_count`, `daily_usage` (events received per day) and the
// symbol files' sizes; and the storage budget's cutoff, a pure function of the hourly
// bytes. Web APIs only: every edition serves the usage routes.
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

/**
 * The receive time before which a project's oldest data goes so that it fits its budget:
 * whole hours, oldest first, until what is left is at most `budgetBytes`. Null when it
 * fits already (or there is no budget).
 */
export function budgetCutoff(hours: HourBytes[], budgetBytes: number): number | null {
  if (budgetBytes <= 0) return null;
  const sorted = [...hours].filter((h) => h.bytes > 0).sort((a, b) => a.bucket - b.bucket);
  let total = sorted.reduce((sum, h) => sum + h.bytes, 0);
  if (total <= budgetBytes) return null;
  for (const h of sorted) {
    total -= h.bytes;
    if (total <= budgetBytes) return h.bucket + HOUR_MS;
  }
  return sorted[sorted.length - 1].bucket + HOUR_MS;
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
  kinds: { events: KindUsage; symbols: KindUsage };
  growth: { day: string; bytes: number; events: number }[];
}

/** Retention's budget cutoff (src/store/retention.ts RetentionDomains): the hours and their bytes come from storage_usage, kept by triggers. */
export async function storageBudgetCutoff(db: Db, project: { id: number; storage_budget_mb: number }): Promise<number | null> {
  return budgetCutoff(await payloadHours(db, project.id), project.storage_budget_mb * MB);
}

/** Each payload hour of a project that still holds bytes. */
export async function payloadHours(db: Db, projectId: number): Promise<HourBytes[]> {
  const rows = await db
    .selectFrom('storage_usage')
    .select(['bucket', 'bytes'])
    .where('project_id', '=', projectId)
    .where('kind', '=', 'payloads')
    .where('bytes', '>', 0)
    .orderBy('bucket')
    .execute();
  return rows.map((r) => ({ bucket: Number(r.bucket), bytes: Number(r.bytes) }));
}

function isoDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** One project's usage; `now` decides the growth window. */
export async function projectUsage(db: Db, project: { id: number; slug: string; storage_budget_mb: number }, now: number): Promise<ProjectUsage> {
  const since = Math.floor(now / DAY_MS) * DAY_MS - (GROWTH_DAYS - 1) * DAY_MS;
  const [payloads, events, symbols, growth, received] = await Promise.all([
    db
      .selectFrom('storage_usage')
      .select([sql<number>`coalesce(sum(bytes), 0)`.as('bytes'), sql<number>`coalesce(sum(count), 0)`.as('chunks')])
      .where('project_id', '=', project.id)
      .where('kind', '=', 'payloads')
      .executeTakeFirst(),
    db.selectFrom('issues').select(sql<number>`coalesce(sum(stored_count), 0)`.as('n')).where('project_id', '=', project.id).executeTakeFirst(),
    db
      .selectFrom('symbol_files')
      .select([sql<number>`count(*)`.as('n'), sql<number>`coalesce(sum(size + index_size), 0)`.as('bytes')])
      .where('project_id', '=', project.id)
      .executeTakeFirst(),
    db
      .selectFrom('storage_usage')
      .select(['bucket', 'bytes'])
      .where('project_id', '=', project.id)
      .where('kind', '=', 'payloads')
      .where('bucket', '>=', since)
      .execute(),
    db.selectFrom('daily_usage').select(['day', 'events']).where('project_id', '=', project.id).where('day', '>=', since).execute(),
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
  const eventBytes = Number(payloads?.bytes ?? 0);
  const symbolBytes = Number(symbols?.bytes ?? 0);
  return {
    project_id: project.id,
    slug: project.slug,
    bytes: eventBytes + symbolBytes,
    budget_bytes: project.storage_budget_mb > 0 ? project.storage_budget_mb * MB : null,
    kinds: {
      events: { count: Number(events?.n ?? 0), bytes: eventBytes },
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
