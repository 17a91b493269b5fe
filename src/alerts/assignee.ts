// Email to an issue's assignee (docs/api.md "Alerts", assignee emails): when user feedback
// arrives about an event of an assigned issue, the assignee is written to, with the
// feedback. Like every alert it is recorded in the outbox first — in the same atomic write
// as the feedback (src/feedback/storage.ts) — and sent by the dispatcher afterwards; it
// goes to one person, so no rule, channel or cooldown applies. Pure.
import { alertLink } from './channels.js';
import { clip, htmlEscape, type MailContent } from './messages.js';

/** The outbox type of a feedback email to the issue's assignee (the dispatcher's rule loop leaves it alone). */
export const ASSIGNEE_FEEDBACK = 'assignee_feedback';

/** Outbox states of an assignee email once taken: sent, or why not. */
export type AssigneeMailState = 'sent' | 'failed' | 'no_mail' | 'no_assignee';

export interface FeedbackAlertFields {
  event_id: string;
  name: string;
  email: string;
  comments: string;
  url: string;
}

/** The outbox payload of a feedback email (the issue and its assignee are read when it is sent). */
export function feedbackAlertPayload(f: FeedbackAlertFields): string {
  return JSON.stringify({ event_id: f.event_id, name: f.name, email: f.email, comments: f.comments, url: f.url });
}

export function parseFeedbackAlertPayload(payload: string): FeedbackAlertFields {
  let v: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(payload);
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) v = parsed as Record<string, unknown>;
  } catch {
    // An unreadable payload sends an email without the feedback's words rather than none.
  }
  const s = (k: string) => (typeof v[k] === 'string' ? (v[k] as string) : '');
  return { event_id: s('event_id'), name: s('name'), email: s('email'), comments: s('comments'), url: s('url') };
}

export interface AssignedIssue {
  title: string;
  fingerprint: string;
  projectSlug: string;
  projectName: string;
  assigneeName: string;
}

/** The email telling an assignee what a user said about their issue. */
export function feedbackEmail(issue: AssignedIssue, f: FeedbackAlertFields, publicUrl: string | null): MailContent {
  const link = alertLink(
    publicUrl,
    { slug: issue.projectSlug, name: issue.projectName },
    { type: 'new_issue', fingerprint: issue.fingerprint, triggered_at: 0 },
  );
  const who = f.name && f.email ? `${f.name} <${f.email}>` : f.name || f.email || 'A user';
  const subject = clip(`[Faultline] User feedback on ${issue.title}`.replace(/[\r\n\t]+/g, ' '), 200);
  const facts: [string, string][] = [
    ['Project', issue.projectName],
    ['From', who],
    ...(f.url ? ([['Page', f.url]] as [string, string][]) : []),
    ...(f.event_id ? ([['Event', f.event_id]] as [string, string][]) : []),
  ];
  const text = [
    `User feedback on an issue assigned to you`,
    '',
    issue.title,
    '',
    f.comments,
    '',
    ...facts.map(([k, v]) => `${k}: ${v}`),
    ...(link ? ['', link] : []),
  ];
  const html = [
    '<!doctype html><html><body style="font-family:sans-serif">',
    '<h2 style="margin:0 0 8px">User feedback on an issue assigned to you</h2>',
    `<p style="font-size:16px">${link ? `<a href="${htmlEscape(link)}">${htmlEscape(issue.title)}</a>` : htmlEscape(issue.title)}</p>`,
    `<blockquote style="white-space:pre-wrap">${htmlEscape(f.comments)}</blockquote>`,
    '<table cellpadding="4">',
    ...facts.map(([k, v]) => `<tr><th align="left">${htmlEscape(k)}</th><td>${htmlEscape(v)}</td></tr>`),
    '</table>',
    '</body></html>',
  ];
  return { subject, text: text.join('\n'), html: html.join('\n') };
}
