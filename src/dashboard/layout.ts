// The page shell every dashboard page shares: head, the top bar (project
// sections, sign-out), a skip link for keyboard users, flash messages, and the
// hidden CSRF field every form carries.
import type { Actor } from '../accounts/rules.js';
import { html, projectPath, raw, type Html } from './html.js';

/** What a page knows about the request it answers. */
export interface PageContext {
  /** The CSRF token forms must carry. */
  csrf: string;
  /** Whether sign-in is on (API_KEYS set or users exist), so a sign-out button is shown. */
  signedIn: boolean;
  now: number;
  /** Who is signed in (absent on an open dashboard): their role decides which links show. */
  actor?: Actor;
  /** Shown above the page's own content (an empty project's set-up card). */
  notice?: Html;
  /** An instance-wide warning shown on every page (the database nearing its size cap). */
  warning?: string;
}

export const SECTIONS = [
  ['overview', 'Overview'],
  ['issues', 'Issues'],
  ['events', 'Events'],
  ['releases', 'Releases'],
  ['monitors', 'Monitors'],
  ['feedback', 'Feedback'],
  ['alerts', 'Alerts'],
  ['symbols', 'Symbols'],
  ['settings', 'Settings'],
] as const;
export type Section = (typeof SECTIONS)[number][0];

export function csrfField(ctx: PageContext): Html {
  return html`<input type="hidden" name="_csrf" value="${ctx.csrf}">`;
}

export function flash(message: string | undefined, kind: 'ok' | 'error' = 'ok'): Html {
  if (!message) return html``;
  return html`<p class="flash ${kind === 'error' ? 'error' : ''}" role="${kind === 'error' ? 'alert' : 'status'}">${message}</p>`;
}

export function page(
  ctx: PageContext,
  o: { title: string; project?: { slug: string; name: string }; section?: Section; body: Html },
): Html {
  const nav = o.project
    ? SECTIONS.map(([id, label]) => {
        const path = id === 'overview' ? projectPath(o.project!.slug) : projectPath(o.project!.slug, id);
        return html`<a href="${path}" ${o.section === id ? raw('aria-current="page"') : ''}>${label}</a>`;
      })
    : [];
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${o.title} · Faultline</title>
<link rel="stylesheet" href="/static/dashboard.css">
<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">
<script src="/static/dashboard.js" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
  <a class="brand" href="/">Faultline</a>
  ${o.project ? html`<a href="${projectPath(o.project.slug)}" class="sub">${o.project.name}</a>` : ''}
  <nav aria-label="Project">${nav}</nav>
  ${ctx.actor?.role === 'admin' && ctx.signedIn ? html`<a href="/admin/users" class="sub">Users</a> <a href="/admin/audit" class="sub">Audit</a>` : ''}
  ${ctx.signedIn ? html`<a href="/settings" class="sub">${ctx.actor?.kind === 'user' ? ctx.actor.label : 'Account'}</a>` : ''}
  ${ctx.signedIn ? html`<form method="post" action="/logout">${csrfField(ctx)}<button type="submit">Sign out</button></form>` : ''}
</header>
<main id="main">
${ctx.warning ? html`<p class="flash error" role="alert" data-capacity>${ctx.warning}</p>` : ''}
${ctx.notice ?? ''}
${o.body}
</main>
</body>
</html>`;
}
