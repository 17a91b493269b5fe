// The email the assignee of a regressed issue gets (docs/api.md "Assignee emails"): when
// a dispatcher takes a regression alert that its rule lets through (sent, held for a
// digest or without channels alike: the cooldown and the channels are the team's, the
// assignee hears of their own issue each time it comes back), and the assignee
// is an enabled user, one email goes to that user. Taking the outbox row is a
// compare-and-set (src/alerts/store.ts dispatchAlert), so of several processes one sends it.
import type { Kysely } from 'kysely';
import type { Database } from '../store/schema.js';
import type { AlertContent, AlertProject } from './channels.js';
import { emailMessage } from './messages.js';
import type { AlertOutcome } from './store.js';
import type { MailMessage } from './transport.js';

/** The outcomes of a regression alert the rule let through (its filters passed, the rule on). */
const LET_THROUGH: AlertOutcome[] = ['sent', 'held', 'no_channel'];

export function assigneeHearsOf(outcome: AlertOutcome): boolean {
  return LET_THROUGH.includes(outcome);
}

/**
 * The email to the enabled assignee of the issue a regression alert names, or null (not a
 * regression, no assignee, a disabled one, the issue gone).
 */
export async function assigneeMail(
  db: Kysely<Database>,
  alertId: number,
  publicUrl: string | null,
): Promise<{ message: MailMessage; userId: number } | null> {
  const row = await db
    .selectFrom('alert_outbox as o')
    .innerJoin('issues as i', 'i.id', 'o.issue_id')
    .innerJoin('users as u', 'u.id', 'i.assignee_id')
    .innerJoin('projects as p', 'p.id', 'o.project_id')
    .select([
      'o.payload',
      'o.created_at',
      'o.triggered_at',
      'u.id as user_id',
      'u.email',
      'u.name',
      'u.disabled',
      'p.slug',
      'p.name as project_name',
    ])
    .where('o.id', '=', alertId)
    .where('o.type', '=', 'regression')
    .executeTakeFirst();
  if (!row || Number(row.disabled) !== 0) return null;
  let payload: Record<string, unknown> = {};
  try {
    payload = JSON.parse(row.payload) as Record<string, unknown>;
  } catch {
    // an unreadable payload: the email says what the project and type say
  }
  const content = {
    ...payload,
    type: 'regression',
    triggered_at: Number(row.triggered_at ?? row.created_at),
  } as AlertContent;
  const project: AlertProject = { slug: row.slug, name: row.project_name };
  const mail = emailMessage(content, project, publicUrl, { assignee: row.name || row.email });
  return { message: { to: [row.email], ...mail }, userId: Number(row.user_id) };
}
