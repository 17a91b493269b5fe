// The issue page's activity (docs/api.md "Issue activity"): the timeline, oldest first,
// each entry's actor and what changed, comments as escaped text with a delete button,
// and the comment box. Every value goes through `html` (escaped).
import { MAX_COMMENT_CHARS, type ActivityJson } from '../../triage/activity.js';
import { html, when, type Html } from '../html.js';
import { csrfField, type PageContext } from '../layout.js';

function describe(entry: ActivityJson): Html {
  const d = entry.data as Record<string, any>;
  switch (entry.type) {
    case 'first_seen':
      return html`first seen${d.release ? html` in ${d.release}` : ''}`;
    case 'status': {
      const why =
        d.reason === 'regression'
          ? ' (regression: a new release)'
          : d.reason === 'snooze_ended'
            ? ' (the snooze ended)'
            : '';
      const snooze = d.ignore_until
        ? ` until ${d.ignore_until}`
        : d.ignore_count
          ? ` until ${d.ignore_count} more events`
          : d.ignore_users
            ? ` until ${d.ignore_users} more users`
            : '';
      return html`status ${d.from ?? ''} → <b>${d.to ?? ''}</b>${snooze}${why}`;
    }
    case 'merged':
      return html`merged ${Array.isArray(d.fingerprints) ? d.fingerprints.length : 0} issue(s) into this one`;
    case 'assigned':
      return html`assigned to ${d.assignee?.email ?? 'nobody'}`;
    case 'comment':
      return html`commented${d.edited_at ? ' (edited)' : ''}`;
  }
}

export function activitySection(ctx: PageContext, issuePath: string, activity: ActivityJson[]): Html {
  return html`<section class="card" id="activity"><h2>Activity</h2>
  <ol class="timeline">${activity.map(
    (e) => html`<li><span class="sub">${when(e.created_at, ctx.now)} · ${e.actor ?? 'Faultline'}</span> ${describe(e)}
      ${
        e.type === 'comment'
          ? html`<blockquote class="comment">${String((e.data as { text?: unknown }).text ?? '')}</blockquote>
          <form method="post" action="${issuePath}/comments/${e.id}/delete" class="inline">${csrfField(ctx)}<button type="submit" class="secondary">Delete comment</button></form>`
          : ''
      }</li>`,
  )}</ol>
  <form method="post" action="${issuePath}/comments">
    ${csrfField(ctx)}
    <label>Comment<textarea name="text" rows="3" maxlength="${MAX_COMMENT_CHARS}" required></textarea></label>
    <button type="submit">Add comment</button>
  </form></section>`;
}
