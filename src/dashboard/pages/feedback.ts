// User feedback pages: the project's feedback, newest first (paged by cursor), and the
// feedback on an issue's events for the issue page. Every value is escaped text.
import type { FeedbackJson } from '../../feedback/storage.js';
import { href, html, projectPath, when, type Html } from '../html.js';
import { page, type PageContext } from '../layout.js';

type Project = { slug: string; name: string };

export function feedbackList(
  project: Project,
  items: FeedbackJson[],
  ctx: PageContext,
  o: { showIssue?: boolean } = {},
): Html {
  if (items.length === 0) return html`<p class="sub">No feedback.</p>`;
  return html`<ul class="feedback">${items.map(
    (f) => html`<li class="card"><p>${f.comments}</p>
      <p class="sub">${f.name || 'Anonymous'}${f.email ? html` · <a href="mailto:${f.email}">${f.email}</a>` : ''} · ${when(f.created_at, ctx.now)} · ${f.source}
        ${f.url ? html` · ${f.url}` : ''}
        ${f.event !== null ? html` · <a href="${projectPath(project.slug, 'events', String(f.event))}">event</a>` : f.event_id ? html` · event ${f.event_id} (not received yet)` : ''}
        ${o.showIssue !== false && f.issue ? html` · <a href="${projectPath(project.slug, 'issues', f.issue)}">issue</a>` : ''}</p></li>`,
  )}</ul>`;
}

export function feedbackPage(
  ctx: PageContext,
  project: Project,
  list: { feedback: FeedbackJson[]; next_cursor: string | null },
  cursor: string | undefined,
): Html {
  const base = projectPath(project.slug, 'feedback');
  const body = html`<h1>User feedback</h1>
    ${feedbackList(project, list.feedback, ctx)}
    <nav class="pager" aria-label="Pages">
      ${cursor ? html`<a href="${base}">Newest</a>` : ''}
      ${list.next_cursor ? html`<a href="${href(base, { cursor: list.next_cursor })}">Older feedback →</a>` : html`<span class="sub">End of the list</span>`}
    </nav>`;
  return page(ctx, { title: `Feedback · ${project.name}`, project, section: 'feedback', body });
}
