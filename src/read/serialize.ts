// JSON shapes of the read API (SPEC §2 field names): issues, releases. Times go
// out as RFC 3339 UTC with milliseconds (`iso`).
import { iso } from '../clock.js';
import type { IssueRow } from '../store/schema.js';

export interface IssueJson {
  fingerprint: string;
  title: string;
  level: string;
  error_type: string;
  screen: string;
  location: string;
  platform: string;
  status: string;
  event_count: number;
  stored_count: number;
  users: number;
  first_seen: string;
  last_seen: string;
  first_seen_id: number | null;
  last_seen_id: number | null;
  first_release: string;
  last_release: string;
  resolved_release: string | null;
  created_at: string;
  updated_at: string;
  sparkline?: number[];
}

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

/** 1 − crashed ÷ total, or null without sessions. */
export function crashFreeRate(total: number, crashed: number): number | null {
  if (total <= 0) return null;
  return Math.min(1, Math.max(0, 1 - crashed / total));
}

/** Code-point order, the same whatever the database's collation. */
export function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
