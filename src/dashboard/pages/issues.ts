// Issues pages: the list (status, level, release, window filters, search, sort,
// sparklines, offset paging, bulk status) and one issue (timeline, breakdowns,
// status actions, an event of the issue with paging to older ones).
import type { EventSummaryJson } from '../../read/events.js';
import type { IssueDetailJson } from '../../read/issues.js';
import { ISSUE_STATUSES, LEVELS } from '../../read/params.js';
import type { IssueJson } from '../../read/serialize.js';
import { bars, meter, sparkline } from '../charts.js';
import { breakable, count, href, html, options, projectPath, utc, when, type Html } from '../html.js';
import { csrfField, flash, page, type PageContext } from '../layout.js';
import { eventRows, eventView, type EventDetail } from './events.js';
import { activitySection } from './activity.js';
import type { ActivityJson } from '../../triage/activity.js';
import type { EventFile } from '../../attachments/storage.js';
import type { FeedbackJson } from '../../feedback/storage.js';
import { feedbackList } from './feedback.js';

type Project = { slug: string; name: string };

export const WINDOWS: [string, string][] = [
  ['1', '24 hours'],
  ['7', '7 days'],
  ['14', '14 days'],
  ['30', '30 days'],
  ['90', '90 days'],
];

/** Statuses a person sets from the dashboard, with the button's words. */
const ACTIONS: [string, string][] = [
  ['resolved', 'Resolve'],
  ['ignored', 'Ignore'],
  ['triaged', 'Triage'],
  ['unresolved', 'Unresolve'],
];

/** The snoozes the issue page offers (docs/api.md "Snoozing"): `<kind>:<amount>`. */
export const SNOOZES: [string, string][] = [
  ['hours:1', 'for 1 hour'],
  ['hours:24', 'for 24 hours'],
  ['hours:168', 'for 7 days'],
  ['count:10', 'until 10 more events'],
  ['count:100', 'until 100 more events'],
  ['users:10', 'until 10 more users'],
];

function statusBadge(status: string): Html {
  return html`<span class="badge s-${status}">${status}</span>`;
}

export function issueListPage(
  ctx: PageContext,
  project: Project,
  query: Record<string, string>,
  list: { issues: IssueJson[]; total: number },
  limit: number,
  message?: string,
): Html {
  const offset = Number(query.offset ?? 0);
  const base = projectPath(project.slug, 'issues');
  const back = href(base, query);
  const body = html`<h1>Issues <span class="sub">${count(list.total)} in the window</span></h1>
  ${flash(message)}
  <p class="actions"><a href="${href(base, { assignee: 'me' })}">Assigned to me</a> · <a href="${href(base, { assignee: 'none' })}">Unassigned</a></p>
  <form class="filters" method="get" action="${base}" role="search">
    <label>Search <span class="sub">(words, "phrases", is:, level:, release:, env:, user:, tag:value)</span><input type="search" name="q" value="${query.q ?? ''}" placeholder="is:unresolved level:error timeout"></label>
    <label>Status<select name="status">${options([['', 'any'], ...ISSUE_STATUSES], query.status)}</select></label>
    <label>Level<select name="level">${options([['', 'any'], ...LEVELS], query.level)}</select></label>
    <label>Release<input name="release" value="${query.release ?? ''}"></label>
    <label>Environment<input name="environment" value="${query.environment ?? ''}"></label>
    <label>Last seen within<select name="days">${options(WINDOWS, query.days ?? '7')}</select></label>
    <label>Sort<select name="sort">${options(
      [
        ['last_seen', 'last seen'],
        ['first_seen', 'first seen'],
        ['events', 'events'],
        ['users', 'users'],
      ],
      query.sort,
    )}</select></label>
    <button type="submit">Apply</button> <a href="${base}">Clear</a>
  </form>
  <form method="post" action="${projectPath(project.slug, 'issues', 'bulk')}">
    ${csrfField(ctx)}
    <input type="hidden" name="back" value="${back}">
    <div class="actions" role="group" aria-label="Set the status of the selected issues">
      <span class="sub">Selected:</span>
      ${ACTIONS.map(([status, label]) => html`<button type="submit" name="status" value="${status}" class="secondary">${label}</button>`)}
    </div>
    ${
      list.issues.length === 0
        ? html`<p>No issues match.</p>`
        : html`<div class="scroll"><table>
      <thead><tr><th><input type="checkbox" data-select-all aria-label="Select every issue on this page"></th><th>Issue</th><th class="opt">Last 24 h</th><th class="num">Events</th><th class="num opt">Users</th><th>Last seen</th></tr></thead>
      <tbody>${list.issues.map(
        (i) => html`<tr>
          <td><input type="checkbox" name="fingerprints" value="${i.fingerprint}" aria-label="Select ${i.title}"></td>
          <td><a class="title" href="${projectPath(project.slug, 'issues', i.fingerprint)}">${i.title}</a>
            <div class="sub"><span class="l-${i.level}">${i.level}</span> · ${statusBadge(i.status)} ${[
              i.location || i.screen,
              i.last_release,
              i.assignee ? `→ ${i.assignee.name || i.assignee.email}` : '',
            ]
              .filter(Boolean)
              .map((x) => `· ${x}`)
              .join(' ')}</div></td>
          <td class="opt">${sparkline(i.sparkline)}</td>
          <td class="num">${count(i.event_count)}</td>
          <td class="num opt">${count(i.users)}</td>
          <td>${when(i.last_seen, ctx.now)}</td>
        </tr>`,
      )}</tbody></table></div>`
    }
  </form>
  <nav class="pager" aria-label="Pages">
    ${offset > 0 ? html`<a href="${href(base, { ...query, offset: Math.max(0, offset - limit) || undefined })}">← Previous</a>` : ''}
    <span class="sub">${list.total === 0 ? '' : `${count(offset + 1)}–${count(offset + list.issues.length)} of ${count(list.total)}`}</span>
    ${offset + list.issues.length < list.total ? html`<a href="${href(base, { ...query, offset: offset + limit })}">Next →</a>` : ''}
  </nav>`;
  return page(ctx, { title: `Issues · ${project.name}`, project, section: 'issues', body });
}

function breakdownTable(title: string, items: { value: string; count: number }[]): Html {
  const max = Math.max(0, ...items.map((i) => i.count));
  return html`<div><h3>${title}</h3>${
    items.length === 0
      ? html`<p class="sub">No values.</p>`
      : html`<table class="breakdown"><tbody>${items.map(
          (i) =>
            html`<tr><td>${breakable(i.value)}</td><td class="num">${count(i.count)}</td><td>${meter(i.count, max, `${i.count} of ${max}`)}</td></tr>`,
        )}</tbody></table>`
  }</div>`;
}

export function issuePage(
  ctx: PageContext,
  project: Project,
  issue: IssueDetailJson,
  query: Record<string, string>,
  event: EventDetail | null,
  recent: EventSummaryJson[],
  paging: { older: number | null; newer: number | null },
  message?: string,
  files: EventFile[] = [],
  activity: ActivityJson[] = [],
  feedback: FeedbackJson[] = [],
): Html {
  const base = projectPath(project.slug, 'issues', issue.fingerprint);
  const b = issue.breakdown;
  const body = html`<p class="sub"><a href="${projectPath(project.slug, 'issues')}">Issues</a></p>
  <h1>${issue.title}</h1>
  ${flash(message)}
  <p><span class="l-${issue.level}">${issue.level}</span> · ${statusBadge(issue.status)} · ${issue.location || issue.screen} · ${issue.platform}
    ${issue.resolved_release ? html`· resolved in ${issue.resolved_release}` : ''}</p>
  <form method="post" action="${base}/status" class="actions">
    ${csrfField(ctx)}
    ${ACTIONS.filter(([s]) => s !== issue.status).map(([status, label]) => html`<button type="submit" name="status" value="${status}" class="secondary">${label}</button>`)}
  </form>
  <form method="post" action="${base}/assign" class="actions">
    ${csrfField(ctx)}
    <span>${issue.assignee ? html`Assigned to <b>${issue.assignee.name || issue.assignee.email}</b> (${issue.assignee.email})` : 'Unassigned'}</span>
    <label>Assign to<input type="email" name="assignee" placeholder="user@example.com" required></label><button type="submit" class="secondary">Assign</button>
  </form>
  ${issue.assignee ? html`<form method="post" action="${base}/assign" class="actions">${csrfField(ctx)}<input type="hidden" name="assignee" value=""><button type="submit" class="secondary">Unassign</button></form>` : ''}
  <form method="post" action="${base}/status" class="actions">
    ${csrfField(ctx)}<input type="hidden" name="status" value="ignored">
    <label>Snooze<select name="snooze">${options(SNOOZES, undefined)}</select></label><button type="submit" class="secondary">Snooze</button>
    ${
      issue.status === 'ignored' && (issue.ignore_until || issue.ignore_count || issue.ignore_users)
        ? html`<span class="sub">Snoozed ${issue.ignore_until ? `until ${utc(issue.ignore_until)}` : issue.ignore_count ? `until ${issue.ignore_count} more events` : `until ${issue.ignore_users} more users`}</span>`
        : ''
    }
  </form>
  <div class="stats">
    <div class="stat"><b>${count(issue.event_count)}</b><span>events (${count(issue.stored_count)} stored)</span></div>
    <div class="stat"><b>${count(issue.users)}</b><span>users</span></div>
    <div class="stat"><b>${when(issue.first_seen, ctx.now)}</b><span>first seen · ${issue.first_release || 'no release'}</span></div>
    <div class="stat"><b>${when(issue.last_seen, ctx.now)}</b><span>last seen · ${issue.last_release || 'no release'}</span></div>
  </div>
  <section class="card"><h2>Events per hour</h2>
    <form class="filters" method="get" action="${base}"><label>Window<select name="days">${options(WINDOWS, query.days ?? '7')}</select></label><button type="submit">Show</button></form>
    ${bars(
      issue.timeline.map((t) => t.bucket),
      issue.timeline.map((t) => t.events),
      'Events of this issue per hour',
    )}
  </section>
  <section class="card"><h2>Breakdowns <span class="sub">${utc(issue.from)} – ${utc(issue.to)}</span></h2>
    <div class="grid2">${breakdownTable('Release', b.release)}${breakdownTable('Device model', b.device_model)}${breakdownTable('OS version', b.os_version)}${breakdownTable('Environment', b.environment)}</div>
  </section>
  ${
    event
      ? html`<nav class="pager" aria-label="Events of this issue">
        ${issue.latest_event_id !== null && event.id !== issue.latest_event_id ? html`<a href="${href(base, { ...query, event: issue.latest_event_id })}">Latest event</a>` : html`<span class="sub">Latest event</span>`}
        ${paging.newer !== null ? html`<a href="${href(base, { ...query, event: paging.newer })}">← Newer event</a>` : ''}
        ${paging.older !== null ? html`<a href="${href(base, { ...query, event: paging.older })}">Older event →</a>` : ''}
        ${issue.oldest_event_id !== null && event.id !== issue.oldest_event_id ? html`<a href="${href(base, { ...query, event: issue.oldest_event_id })}">Oldest event</a>` : ''}
        <a href="${href(projectPath(project.slug, 'events'), { fingerprint: issue.fingerprint })}">All events of this issue</a>
      </nav>
      ${eventView(project, event, ctx, files)}`
      : html`<p class="card">No stored event of this issue (retention or sampling removed them).</p>`
  }
  <section><h2>User feedback <span class="sub">${count(issue.feedback_count ?? 0)}</span></h2>${feedbackList(project, feedback, ctx, { showIssue: false })}
    ${(issue.feedback_count ?? 0) > feedback.length ? html`<p class="sub">The newest ${feedback.length}; <a href="${projectPath(project.slug, 'feedback')}">all feedback of the project</a>.</p>` : ''}</section>
  <section><h2>Recently received events</h2>${eventRows(project, recent, ctx, { showIssue: false })}</section>
  ${activitySection(ctx, base, activity)}`;
  return page(ctx, { title: `${issue.title} · ${project.name}`, project, section: 'issues', body });
}
