// JSON shapes of the read API (field names as docs/api.md "Read API" gives them): issues, releases. Times go
// out as RFC 3339 UTC with milliseconds (`iso`).
import { iso } from '../clock.js';
import type { IssueRecord } from '../store/records.js';
import type { IssueRow } from '../store/schema.js';

/** An issue as the API shows it: the stored record without ids and resolution times, times as RFC 3339. */
type IssueTime = 'first_seen' | 'last_seen' | 'created_at' | 'updated_at';
/** Snooze bookkeeping and the assignee's id stay inside; `ignore_until` goes out as RFC 3339. */
type IssueInternal = 'ignored_event_count' | 'ignored_users' | 'assignee_id' | 'ignore_until';
export type IssueJson = Omit<
  IssueRecord,
  'id' | 'project_id' | 'resolved_at' | 'regressed_at' | IssueTime | IssueInternal
> &
  Record<IssueTime, string> & {
    ignore_until: string | null;
    assignee: { id: number; email: string; name: string } | null;
    sparkline?: number[];
    feedback_count?: number;
  };

export function issueJson(row: IssueRow, sparkline?: number[], assignee: IssueJson['assignee'] = null): IssueJson {
  const snoozed = row.status === 'ignored';
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
    // A snooze counts only while the issue is ignored (ingest leaves it behind when it ends).
    ignore_until: snoozed && row.ignore_until !== null ? iso(Number(row.ignore_until)) : null,
    ignore_count: snoozed && row.ignore_count !== null ? Number(row.ignore_count) : null,
    ignore_users: snoozed && row.ignore_users !== null ? Number(row.ignore_users) : null,
    assignee,
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
