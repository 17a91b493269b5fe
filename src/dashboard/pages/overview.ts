// The project overview (events and crashes per hour stacked by release, level
// counts, the crash-free rate of the latest release, new issues, regressions)
// and the releases pages (list with crash-free rates; one release with its daily
// health, timeline, issues, and the commits and deploys sentry-cli recorded).
import type { OverviewJson } from '../../read/overview.js';
import type { ReleaseJson } from '../../read/releases.js';
import type { releaseDetail } from '../../read/releases.js';
import type { IssueJson } from '../../read/serialize.js';
import { bucketList } from '../../read/window.js';
import { iso } from '../../clock.js';
import { bars, legend, meter, sparkline, stackedBars } from '../charts.js';
import { count, href, html, options, percent, projectPath, utc, when, type Html } from '../html.js';
import { page, type PageContext } from '../layout.js';
import { WINDOWS } from './issues.js';

type Project = { slug: string; name: string };

function windowForm(action: string, days: string | undefined): Html {
  return html`<form class="filters" method="get" action="${action}"><label>Window<select name="days">${options(WINDOWS, days ?? '7')}</select></label><button type="submit">Show</button></form>`;
}

function stat(value: Html | string, label: Html | string, link?: string): Html {
  return html`<div class="stat"><b>${link ? html`<a href="${link}">${value}</a>` : value}</b><span>${label}</span></div>`;
}

export function overviewPage(
  ctx: PageContext,
  project: Project,
  query: Record<string, string>,
  o: OverviewJson,
  empty = false,
): Html {
  // A project that has received nothing has nothing to chart: the set-up card (ctx.notice) stands alone.
  if (empty)
    return page(ctx, {
      title: `Overview · ${project.name}`,
      project,
      section: 'overview',
      body: html`<h1>${project.name} <span class="sub">overview</span></h1>`,
    });
  const buckets = bucketList({ from: Date.parse(o.from), to: Date.parse(o.to) }).map(iso);
  const releases = [...new Set(o.timeline.map((t) => t.release))];
  const events = new Map<string, Map<string, number>>();
  const crashes = new Map<string, Map<string, number>>();
  for (const t of o.timeline) {
    if (!events.has(t.bucket)) events.set(t.bucket, new Map());
    if (!crashes.has(t.bucket)) crashes.set(t.bucket, new Map());
    events.get(t.bucket)!.set(t.release, t.events);
    crashes.get(t.bucket)!.set(t.release, t.crashes);
  }
  const issues = projectPath(project.slug, 'issues');
  const body = html`<h1>${project.name} <span class="sub">overview</span></h1>
  ${windowForm(projectPath(project.slug), query.days)}
  <div class="stats">
    ${stat(count(o.totals.events), 'events')}
    ${stat(count(o.totals.crashes), 'crashes')}
    ${stat(count(o.new_issues), 'new issues', href(issues, { sort: 'first_seen', days: query.days }))}
    ${stat(count(o.regressions), 'regressions', href(issues, { status: 'regression', days: query.days }))}
    ${stat(
      o.crash_free ? percent(o.crash_free.rate) : '–',
      o.crash_free
        ? html`crash-free sessions of <a href="${projectPath(project.slug, 'releases', o.crash_free.release)}">${o.crash_free.release}</a> (${count(o.crash_free.sessions)} ${o.crash_free.sessions === 1 ? 'session' : 'sessions'})`
        : 'crash-free: no sessions',
    )}
  </div>
  <section class="card" aria-labelledby="levels"><h2 id="levels">Levels</h2>
    <div class="stats">${(['fatal', 'error', 'warning', 'info'] as const).map((l) =>
      stat(html`<span class="l-${l}">${count(o.levels[l])}</span>`, l, href(issues, { level: l, days: query.days })),
    )}</div>
  </section>
  <section class="card"><h2>Events per hour by release</h2>${stackedBars(buckets, events, releases, 'Events per hour by release')}${legend(releases)}</section>
  <section class="card"><h2>Crashes per hour by release</h2>${stackedBars(buckets, crashes, releases, 'Crashes per hour by release')}${legend(releases)}</section>
  <p class="sub">${utc(o.from)} – ${utc(o.to)}</p>`;
  return page(ctx, { title: `Overview · ${project.name}`, project, section: 'overview', body });
}

export function releaseListPage(
  ctx: PageContext,
  project: Project,
  query: Record<string, string>,
  releases: ReleaseJson[],
): Html {
  const body = html`<h1>Releases</h1>
  ${windowForm(projectPath(project.slug, 'releases'), query.days)}
  ${
    releases.length === 0
      ? html`<p>No release has events or sessions in this window, and none was created by sentry-cli in it.</p>`
      : html`<div class="scroll"><table>
    <thead><tr><th>Release</th><th>Crash-free sessions</th><th>Crash-free users</th><th class="num">ANR rate</th><th class="num">Sessions</th><th class="num">Events</th><th class="num">Crashes</th><th class="num opt">New issues</th><th class="opt">First seen</th></tr></thead>
    <tbody>${releases.map(
      (r) => html`<tr>
        <td><a class="title" href="${href(projectPath(project.slug, 'releases', r.release), { days: query.days })}">${r.release || '(no release)'}</a><div class="sub">${releaseFacts(r, ctx.now)}</div></td>
        <td>${percent(r.crash_free_rate)} ${r.crash_free_rate !== null ? meter(r.crash_free_rate, 1, `crash-free ${percent(r.crash_free_rate)}`) : ''}</td>
        <td title="${count(r.users.total)} ${r.users.total === 1 ? 'user' : 'users'}">${percent(r.crash_free_users_rate)}</td>
        <td class="num">${percent(r.anr_rate)}</td>
        <td class="num">${count(r.sessions.total)}</td>
        <td class="num">${count(r.events)}</td>
        <td class="num">${count(r.crashes)}</td>
        <td class="num opt">${count(r.new_issues)}</td>
        <td class="opt">${when(r.first_seen, ctx.now)}</td>
      </tr>`,
    )}</tbody></table></div>`
  }`;
  return page(ctx, { title: `Releases · ${project.name}`, project, section: 'releases', body });
}

/** The platforms of a release, and what sentry-cli said of it: released when, last deployed where. */
function releaseFacts(r: ReleaseJson, now: number): Html {
  const parts: Html[] = [];
  if (r.platforms.length > 0) parts.push(html`${r.platforms.join(', ')}`);
  if (r.date_released) parts.push(html`released ${when(r.date_released, now)}`);
  else if (r.date_created) parts.push(html`created ${when(r.date_created, now)}`);
  if (r.deploys.length > 0)
    parts.push(html`deployed to ${r.deploys[0].environment} ${when(r.deploys[0].date_finished, now)}`);
  if (r.commit_count > 0) parts.push(html`${count(r.commit_count)} ${r.commit_count === 1 ? 'commit' : 'commits'}`);
  return html`${parts.map((p, i) => (i === 0 ? p : html` · ${p}`))}`;
}

function commitsCard(r: ReleaseJson): Html {
  if (r.commits.length === 0) return html``;
  return html`<section class="card"><h2>Commits <span class="sub">${count(r.commit_count)}, as set by sentry-cli</span></h2>
    <div class="scroll"><table><thead><tr><th>Commit</th><th>Message</th><th>Author</th><th class="opt">Repository</th></tr></thead><tbody>
    ${r.commits.map(
      (c) =>
        html`<tr><td><code>${c.id.slice(0, 12)}</code></td><td>${(c.message ?? '').split('\n')[0]}</td><td>${c.author_name ?? c.author_email ?? '–'}</td>
          <td class="opt">${c.repository}</td></tr>`,
    )}</tbody></table></div></section>`;
}

function deploysCard(r: ReleaseJson): Html {
  if (r.deploys.length === 0) return html``;
  return html`<section class="card"><h2>Deploys</h2>
    <div class="scroll"><table><thead><tr><th>Environment</th><th>Name</th><th>Started</th><th>Finished</th></tr></thead><tbody>
    ${r.deploys.map((d) => {
      // Only a web address becomes a link (a `javascript:` URL sent with a deploy stays text).
      const name =
        d.url && /^https?:\/\//i.test(d.url)
          ? html`<a href="${d.url}" rel="noreferrer">${d.name ?? d.url}</a>`
          : html`${d.name ?? '–'}`;
      return html`<tr><td>${d.environment}</td><td>${name}</td><td>${utc(d.date_started)}</td><td>${utc(d.date_finished)}</td></tr>`;
    })}</tbody></table></div></section>`;
}

/** Issues shown per list on the release page; the rest are a link away. */
/** Issues shown per list on a release's page (the route asks for one more, to know of more). */
export const RELEASE_PAGE_ISSUES = 25;

function issueTable(
  project: Project,
  issues: IssueJson[],
  ctx: PageContext,
  more: { href: string; label: string },
): Html {
  if (issues.length === 0) return html`<p class="sub">None.</p>`;
  return html`<div class="scroll"><table><thead><tr><th>Issue</th><th class="opt">Last 24 h</th><th class="num">Events</th><th>Last seen</th></tr></thead><tbody>
    ${issues.slice(0, RELEASE_PAGE_ISSUES).map(
      (
        i,
      ) => html`<tr><td><a class="title" href="${projectPath(project.slug, 'issues', i.fingerprint)}">${i.title}</a><div class="sub">${i.status} · ${i.level}</div></td>
        <td class="opt">${sparkline(i.sparkline)}</td><td class="num">${count(i.event_count)}</td><td>${when(i.last_seen, ctx.now)}</td></tr>`,
    )}</tbody></table></div>
    ${issues.length > RELEASE_PAGE_ISSUES ? html`<p><a href="${more.href}">${more.label} →</a></p>` : ''}`;
}

export function releasePage(
  ctx: PageContext,
  project: Project,
  query: Record<string, string>,
  d: Awaited<ReturnType<typeof releaseDetail>>,
): Html {
  const r = d.release;
  const days = d.daily_health;
  const body = html`<p class="sub"><a href="${projectPath(project.slug, 'releases')}">Releases</a></p>
  <h1>${r.release || '(no release)'}</h1>
  ${windowForm(projectPath(project.slug, 'releases', r.release), query.days)}
  <div class="stats">
    <div class="stat"><b>${percent(r.crash_free_rate)}</b><span>crash-free sessions</span></div>
    <div class="stat"><b>${percent(r.crash_free_users_rate)}</b><span>crash-free users (${r.users.total === 0 ? 'no user ids in sessions' : `${count(r.users.total)} ${r.users.total === 1 ? 'user' : 'users'}`})</span></div>
    <div class="stat"><b>${percent(r.anr_rate)}</b><span>ANR rate (${count(r.sessions.anr)} ${r.sessions.anr === 1 ? 'session' : 'sessions'})</span></div>
    <div class="stat"><b>${count(r.sessions.total)}</b><span>sessions (${count(r.sessions.crashed)} crashed, ${count(r.sessions.errored)} errored)</span></div>
    <div class="stat"><b>${count(r.events)}</b><span>events</span></div>
    <div class="stat"><b>${count(r.crashes)}</b><span>crashes</span></div>
    <div class="stat"><b>${count(r.new_issues)}</b><span>new issues</span></div>
  </div>
  ${r.date_created ? html`<p class="sub">Created by sentry-cli ${utc(r.date_created)} · ${r.date_released ? html`released ${utc(r.date_released)}` : 'not released yet'}</p>` : ''}
  ${deploysCard(r)}
  ${commitsCard(r)}
  <section class="card"><h2>Daily health</h2>
    <div class="scroll"><table><thead><tr><th>Day (UTC)</th><th class="num">Sessions</th><th class="num">Crashed</th><th class="num">Errored</th><th>Crash-free</th><th class="num">ANR rate</th></tr></thead><tbody>
    ${days.map(
      (
        h,
      ) => html`<tr><td>${h.day.slice(0, 10)}</td><td class="num">${count(h.total)}</td><td class="num">${count(h.crashed)}</td><td class="num">${count(h.errored)}</td>
        <td>${percent(h.crash_free_rate)} ${h.crash_free_rate !== null ? meter(h.crash_free_rate, 1, `crash-free ${percent(h.crash_free_rate)}`) : ''}</td>
        <td class="num">${percent(h.anr_rate)}</td></tr>`,
    )}</tbody></table></div>
  </section>
  <section class="card"><h2>Events per hour</h2>${bars(
    d.timeline.map((t) => t.bucket),
    d.timeline.map((t) => t.events),
    'Events of this release per hour',
  )}</section>
  <section class="card"><h2>Crashes per hour</h2>${bars(
    d.timeline.map((t) => t.bucket),
    d.timeline.map((t) => t.crashes),
    'Crashes of this release per hour',
  )}</section>
  <h2>Issues introduced in this release <span class="sub">most events first</span></h2>${issueTable(project, d.issues_introduced, ctx, { href: href(projectPath(project.slug, 'issues'), { sort: 'events', days: '90' }), label: 'All issues' })}
  <h2>Issues last seen in this release <span class="sub">most events first</span></h2>${issueTable(project, d.issues_present, ctx, { href: href(projectPath(project.slug, 'issues'), { release: r.release, sort: 'events', days: '90' }), label: 'All issues last seen in this release' })}`;
  return page(ctx, { title: `${r.release} · ${project.name}`, project, section: 'releases', body });
}
