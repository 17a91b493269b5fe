// The alert outbox row the ingest batch writes beside an issue's `new_issue` or
// `regression` change, in the same transaction: what the alert says is taken from
// the issue as the batch leaves it, so nothing reads the events again. Pure, so the
// SQLite batch thread runs it too.
import type { IssueAlertType } from './rules.js';

/** The fields of an issue alert (the webhook payload's issue part; src/alerts/channels.ts). */
export interface IssueAlertFields {
  title: string;
  fingerprint: string;
  level: string;
  event_count: number;
  release: string;
  /** The environment of the event that caused the alert (rule filters); absent in rows older than filters. */
  environment?: string;
  /** Epoch ms the issue was first seen (messages show it); absent in older rows. */
  first_seen?: number;
}

/** The outbox state of an alert no dispatcher has taken yet. */
export const OUTBOX_PENDING = 'pending';

export function issueAlertOutboxRow(
  projectId: number,
  issueId: number | null,
  type: IssueAlertType,
  at: number,
  fields: IssueAlertFields,
): Record<string, unknown> {
  const payload: IssueAlertFields = {
    title: fields.title,
    fingerprint: fields.fingerprint,
    level: fields.level,
    event_count: Number(fields.event_count),
    release: fields.release,
    environment: fields.environment ?? '',
  };
  if (fields.first_seen !== undefined) payload.first_seen = Number(fields.first_seen);
  return {
    project_id: projectId,
    type,
    issue_id: issueId,
    payload: JSON.stringify(payload),
    state: OUTBOX_PENDING,
    created_at: at,
  };
}

/** The outbox state of an alert its rule's cooldown holds back for the next digest. */
export const OUTBOX_HELD = 'held';

/** A digest lists at most this many issues by name, then says how many more. */
export const DIGEST_LISTED = 20;

/** What a digest says: how many alerts it stands for, since when, and the first of them. */
export interface DigestFields {
  count: number;
  /** Epoch ms of the first alert held back. */
  since: number;
  items: Record<string, unknown>[];
}

/**
 * The digest of the alerts a cooldown held back (oldest first): all counted, the first
 * DIGEST_LISTED listed with their fields.
 */
export function digestFields(held: { payload: string; created_at: number }[]): DigestFields {
  const items: Record<string, unknown>[] = [];
  for (const h of held.slice(0, DIGEST_LISTED)) {
    try {
      const v = JSON.parse(h.payload) as unknown;
      items.push(v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
    } catch {
      items.push({});
    }
  }
  return { count: held.length, since: held.length > 0 ? Math.min(...held.map((h) => Number(h.created_at))) : 0, items };
}

/** The issues an outbox payload names (a digest's listed ones, or the alert's own), for the deliveries list. */
export function namedIssues(payload: string | null): { fingerprint: string; title: string }[] {
  if (!payload) return [];
  let v: { fingerprint?: unknown; title?: unknown; digest?: { items?: unknown } };
  try {
    v = JSON.parse(payload);
  } catch {
    return [];
  }
  const list =
    v?.digest && Array.isArray(v.digest.items) ? (v.digest.items as { fingerprint?: unknown; title?: unknown }[]) : [v];
  return list
    .filter((i) => i && typeof i.fingerprint === 'string')
    .map((i) => ({ fingerprint: i.fingerprint as string, title: typeof i.title === 'string' ? i.title : '' }));
}
