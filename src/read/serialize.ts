// JSON shapes of the read API (SPEC §2 field names): issues, releases. Times go
// out as RFC 3339 UTC with milliseconds (`iso`).
import { iso } from '../clock.js';
import type { IssueRecord } from '../ingest/records.js';
import type { IssueRow } from '../store/schema.js';

/** An issue as the API shows it: the stored record without ids and resolution times, times as RFC 3339. */
type IssueTime = 'first_seen' | 'last_seen' | 'created_at' | 'updated_at';
export type IssueJson = Omit<IssueRecord, 'id' | 'project_id' | 'resolved_at' | 'regressed_at' | IssueTime> &
  Record<IssueTime, string> & { sparkline?: number[]; feedback_count?: number };

export function issueJson(row: IssueRow, sparkline?: number[]): IssueJson {
  const out: IssueJson = {
    fingerprint: row.fingerprint,
    title: row.title,
    level: row.level,
    error_type: row.error_type,
    screen: row.screen,
    location: row.location,
    platform: row.platform,
    status: row.status,
    event_count: Number(row.event_count),
    stored_count: Number(row.stored_count),
    users: Number(row.users),
    first_seen: iso(Number(row.first_seen)),
    last_seen: iso(Number(row.last_seen)),
    first_seen_id: row.first_seen_id === null ? null : Number(row.first_seen_id),
    last_seen_id: row.last_seen_id === null ? null : Number(row.last_seen_id),
    first_release: row.first_release,
    last_release: row.last_release,
    resolved_release: row.resolved_release,
    created_at: iso(Number(row.created_at)),
    updated_at: iso(Number(row.updated_at)),
  };
  if (sparkline) out.sparkline = sparkline;
  return out;
}

/** ANR sessions ÷ sessions (docs/api.md "Releases"), or null without sessions. */
export function anrRate(total: number, anr: number): number | null {
  if (total <= 0) return null;
  return Math.min(1, Math.max(0, anr / total));
}

/** 1 − crashed ÷ total, or null without sessions. */
export function crashFreeRate(total: number, crashed: number): number | null {
  if (total <= 0) return null;
  return Math.min(1, Math.max(0, 1 - crashed / total));
}

/** Code-point order, the same whatever the database's collation. */
export function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
