// How full the database is against the size its platform stops at (D1 stops writing at
// 10 GB on the paid plan, 500 MB on the free one): the serverless edition warns in
// /health and on every dashboard page from 80 % on (docs/architecture.md "Capacity").
// The rule is pure (databaseCapacity); storeCapacity asks the store for its size.
import type { Store } from './database.js';

/** Share of the limit from which /health and the dashboard warn. */
export const CAPACITY_WARNING_RATIO = 0.8;

export interface DatabaseCapacity {
  database_bytes: number;
  limit_bytes: number;
  /** database_bytes ÷ limit_bytes, rounded to 3 decimals. */
  used: number;
  /** What to do about it, from CAPACITY_WARNING_RATIO on; null below. */
  warning: string | null;
}

const MB = 1024 ** 2;
const GB = 1024 ** 3;

const size = (bytes: number) => (bytes >= GB ? `${(bytes / GB).toFixed(2)} GB` : `${(bytes / MB).toFixed(1)} MB`);

export function databaseCapacity(bytes: number, limitBytes: number): DatabaseCapacity {
  const used = limitBytes > 0 ? bytes / limitBytes : 0;
  const warning =
    used >= CAPACITY_WARNING_RATIO
      ? `the database holds ${size(bytes)} of its ${size(limitBytes)} limit (${Math.floor(used * 100)} %): ` +
        'lower RETENTION_DAYS or the projects’ storage budgets, bind an R2 bucket for payloads, or move projects to another database (README "Serverless edition")'
      : null;
  return { database_bytes: bytes, limit_bytes: limitBytes, used: Math.round(used * 1000) / 1000, warning };
}

/** How full a size-capped database (D1) is, or null where the store reports no size. */
export async function storeCapacity(
  store: Pick<Store, 'sizeBytes'>,
  limitMb: number,
): Promise<DatabaseCapacity | null> {
  const bytes = store.sizeBytes ? await store.sizeBytes().catch(() => null) : null;
  return bytes === null ? null : databaseCapacity(bytes, limitMb * 1024 * 1024);
}
