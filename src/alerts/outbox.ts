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
  };
  return { project_id: projectId, type, issue_id: issueId, payload: JSON.stringify(payload), state: OUTBOX_PENDING, created_at: at };
}
