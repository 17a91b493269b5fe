// Events pages: the list with the read API's filters (keyset paging by id), one
// event's detail, and the event view the issue page shows too: exceptions with
// their stack traces (symbolicated frames beside the frames as received),
// breadcrumbs, tags, user, contexts, request, and the raw payload.
import type { eventDetail, EventSummaryJson } from '../../read/events.js';
import { LEVELS } from '../../read/params.js';
import type { NormalizedFrame } from '../../ingest/types.js';
import { count, href, html, nonEmpty, options, prettyJson, projectPath, raw, text, utc, when, type Html } from '../html.js';
import { page, type PageContext } from '../layout.js';
import type { EventFile } from '../../attachments/storage.js';
import { attachmentsView } from './attachments.js';

export type EventDetail = Awaited<ReturnType<typeof eventDetail>>;
type Project = { slug: string; name: string };

/** Filters of the events list form; any other `tag.<key>` in the URL is kept as it is. */
const TEXT_FILTERS = [
  ['release', 'Release'],
  ['environment', 'Environment'],
  ['platform', 'Platform'],
  ['error_type', 'Error type'],
  ['error_location', 'Error location'],
  ['screen', 'Screen'],
  ['user_id', 'User id'],
  ['device_id', 'Device id'],
  ['device_model', 'Device model'],
  ['os_version', 'OS version'],
  ['fingerprint', 'Issue fingerprint'],
] as const;

/**
 * The read API's query for the dashboard's events list: blank fields dropped, and
 * the form's `tag` field (`key:value`) turned into `tag.<key>=value`.
 */
export function eventListQuery(query: Record<string, string>): Record<string, string> {
  const q = nonEmpty(query);
  const tag = q.tag;
  delete q.tag;
  if (tag !== undefined) {
    const at = tag.indexOf(':');
    if (at > 0) q[`tag.${tag.slice(0, at).trim()}`] = tag.slice(at + 1).trim();
  }
  return q;
}

export function eventRows(project: Project, events: EventSummaryJson[], ctx: PageContext, o: { showIssue?: boolean } = {}): Html {
  if (events.length === 0) return html`<p>No events match.</p>`;
  return html`<div class="scroll"><table>
    <thead><tr><th>Event</th><th>Level</th><th class="opt">Release</th><th class="opt">Device / OS</th><th class="opt">User</th><th>Time</th></tr></thead>
    <tbody>${events.map(
      (e) => html`<tr>
        <td><a class="title" href="${projectPath(project.slug, 'events', String(e.id))}">${e.title || e.message || e.event_id}</a>
          <div class="sub">${[e.error_location, e.screen].filter(Boolean).join(' · ')} ${e.crash ? html`<span class="badge l-fatal">crash</span>` : ''}
          ${o.showIssue !== false ? html`· <a href="${projectPath(project.slug, 'issues', e.fingerprint)}">issue</a>` : ''}</div></td>
        <td><span class="l-${e.level}">${e.level}</span></td>
        <td class="opt">${e.release}</td>
        <td class="opt">${e.device.model ?? ''} ${e.os.name ?? ''} ${e.os.version ?? ''}</td>
        <td class="opt">${e.user?.id ?? e.user?.email ?? e.user?.username ?? e.user?.ip_address ?? ''}</td>
        <td>${when(e.time, ctx.now)}</td>
      </tr>`,
    )}</tbody></table></div>`;
}

export function eventListPage(
  ctx: PageContext,
  project: Project,
  query: Record<string, string>,
  list: { events: EventSummaryJson[]; more: boolean; next_before: number | null },
): Html {
  const keep = { ...query };
  delete keep.before;
  const extraTags = Object.entries(query).filter(([k]) => k.startsWith('tag.'));
  const body = html`<h1>Events</h1>
  <form class="filters" method="get" action="${projectPath(project.slug, 'events')}">
    <label>Search message<input type="search" name="q" value="${query.q ?? ''}"></label>
    <label>Level<select name="level">${options([['', 'any'], ...LEVELS], query.level)}</select></label>
    <label>Window<select name="days">${options([['', 'all'], ['1', '24 hours'], ['7', '7 days'], ['14', '14 days'], ['30', '30 days'], ['90', '90 days']], query.days)}</select></label>
    <label><span><input type="checkbox" name="crash" value="1" ${query.crash === '1' ? raw('checked') : ''}> crashes only</span></label>
    <details><summary>More filters</summary><div class="filters">
      ${TEXT_FILTERS.map(([name, label]) => html`<label>${label}<input name="${name}" value="${query[name] ?? ''}"></label>`)}
      <label>Tag (key:value)<input name="tag" value="${query.tag ?? ''}" placeholder="device_class:medium"></label>
      ${extraTags.map(([k, v]) => html`<label>${k}<input name="${k}" value="${v}"></label>`)}
    </div></details>
    <button type="submit">Apply</button> <a href="${projectPath(project.slug, 'events')}">Clear</a>
  </form>
  ${eventRows(project, list.events, ctx)}
  <nav class="pager" aria-label="Pages">
    ${query.before ? html`<a href="${href(projectPath(project.slug, 'events'), keep)}">Newest</a>` : ''}
    ${list.more && list.next_before !== null ? html`<a href="${href(projectPath(project.slug, 'events'), { ...keep, before: list.next_before })}">Older events →</a>` : html`<span class="sub">End of the list</span>`}
  </nav>`;
  return page(ctx, { title: `Events · ${project.name}`, project, section: 'events', body });
}

/** A JVM frame names its method with its class (`com.example.Parser.parse`), as the JVM prints it. */
function frameFunction(f: NormalizedFrame, jvm: boolean): string {
  const fn = f.function ?? '?';
  return jvm && f.module && f.function ? `${f.module}.${fn}` : fn;
}

function frameLine(f: NormalizedFrame, jvm: boolean): Html {
  const where = [f.filename ?? f.abs_path ?? f.module ?? f.package ?? '', f.lineno !== undefined ? `:${f.lineno}` : '', f.colno !== undefined ? `:${f.colno}` : ''].join('');
  return html`<li class="${f.in_app ? 'app' : ''}"><code>${frameFunction(f, jvm)}</code> <span class="sub">${where}${f.instruction_addr ? ` ${f.instruction_addr}` : ''}</span>
    ${f.context_line ? html`<pre>${f.context_line}</pre>` : ''}</li>`;
}

/** Frames crashing frame first (the API lists them caller first). */
function stack(frames: NormalizedFrame[], label: string, jvm: boolean): Html {
  const list = [...frames].reverse();
  return html`<div><h4>${label}</h4>${list.length === 0 ? html`<p class="sub">No frames.</p>` : html`<ol class="stack">${list.map((f) => frameLine(f, jvm))}</ol>`}</div>`;
}

function kvList(entries: [string, unknown][]): Html {
  if (entries.length === 0) return html`<p class="sub">None.</p>`;
  return html`<dl class="kv">${entries.map(([k, v]) => html`<dt>${k}</dt><dd>${text(v)}</dd>`)}</dl>`;
}

/** The full view of one event. */
export function eventView(project: Project, e: EventDetail, ctx: PageContext, files: EventFile[] = []): Html {
  const exceptions = [...e.exceptions].reverse(); // main exception first
  const jvm = e.platform === 'java';
  const raw_ = prettyJson(e.raw);
  const apiPath = `/api/projects/${encodeURIComponent(project.slug)}/events/${e.id}`;
  return html`<section class="card" aria-labelledby="event-${e.id}">
    <h2 id="event-${e.id}">Event <a href="${projectPath(project.slug, 'events', String(e.id))}">#${e.id}</a> <span class="sub">${e.event_id}</span></h2>
    <dl class="kv">
      <dt>Time</dt><dd>${utc(e.time)} (${when(e.time, ctx.now)}), received ${utc(e.received_at)}</dd>
      <dt>Level</dt><dd class="l-${e.level}">${e.level}${e.crash ? ' · crash' : ''}</dd>
      <dt>Message</dt><dd>${e.message}</dd>
      <dt>Release</dt><dd>${e.release ? html`<a href="${projectPath(project.slug, 'releases', e.release)}">${e.release}</a>` : '–'} ${e.dist ? `(dist ${e.dist})` : ''}</dd>
      <dt>Environment</dt><dd>${e.environment || '–'}</dd>
      <dt>Platform</dt><dd>${e.platform} ${e.sdk ? `· ${text((e.sdk as Record<string, unknown>).name)} ${text((e.sdk as Record<string, unknown>).version)}` : ''}</dd>
      <dt>Device / OS</dt><dd>${e.device.model ?? '–'} · ${e.os.name ?? ''} ${e.os.version ?? ''}</dd>
      <dt>Screen</dt><dd>${e.screen || '–'}</dd>
    </dl>
    <h3>Exceptions</h3>
    ${exceptions.length === 0 ? html`<p class="sub">No exception (a message event).</p>` : ''}
    ${exceptions.map(
      (x) => html`<div class="exception">
        <p>${x.type ? html`<strong>${x.type}</strong>: ` : ''}${x.value} ${x.mechanism ? html`<span class="badge">${text(x.mechanism.type)}${x.mechanism.handled === false ? ' · unhandled' : ''}</span>` : ''}</p>
        ${x.symbolicated_frames
          ? html`<div class="frames pair">${stack(x.symbolicated_frames as NormalizedFrame[], 'Symbolicated', jvm)}${stack(x.frames, 'As received', jvm)}</div>`
          : html`<div class="frames">${stack(x.frames, 'Stack trace (most recent call first)', jvm)}</div>`}
      </div>`,
    )}
    ${attachmentsView(project, files)}
    <h3>Breadcrumbs</h3>
    ${e.breadcrumbs.length === 0
      ? html`<p class="sub">None.</p>`
      : html`<div class="scroll"><table><thead><tr><th>Time</th><th>Category</th><th>Level</th><th>Message / data</th></tr></thead><tbody>
        ${e.breadcrumbs.map((b) => {
          const t = typeof b.timestamp === 'number' ? new Date(b.timestamp * 1000).toISOString() : text(b.timestamp);
          return html`<tr><td>${t.slice(11, 23)}</td><td>${text(b.category ?? b.type)}</td><td>${text(b.level)}</td><td>${text(b.message)} ${b.data ? html`<code>${text(b.data)}</code>` : ''}</td></tr>`;
        })}</tbody></table></div>`}
    <div class="grid2">
      <div><h3>Tags</h3>${kvList(Object.entries(e.tags))}</div>
      <div><h3>User</h3>${e.user ? kvList(Object.entries(e.user as Record<string, unknown>)) : html`<p class="sub">No user.</p>`}</div>
    </div>
    <h3>Contexts</h3>
    ${Object.keys(e.contexts).length === 0
      ? html`<p class="sub">None.</p>`
      : html`<div class="grid2">${Object.entries(e.contexts).map(
          ([name, ctxValue]) => html`<div><h4>${name}</h4>${ctxValue && typeof ctxValue === 'object' ? kvList(Object.entries(ctxValue as Record<string, unknown>)) : html`<p>${text(ctxValue)}</p>`}</div>`,
        )}</div>`}
    ${e.request ? html`<h3>Request</h3><pre>${prettyJson(e.request).text}</pre>` : ''}
    ${e.extra ? html`<h3>Extra</h3><pre>${prettyJson(e.extra).text}</pre>` : ''}
    ${e.scrubbed
      ? html`<p class="sub" data-scrubbed="${String(e.scrubbed.total)}">Filtered by scrubbing: ${String(e.scrubbed.total)} value${e.scrubbed.total === 1 ? '' : 's'}
          (${Object.entries(e.scrubbed.rules).map(([rule, n]) => `${rule} ${n}`).join(', ')})${e.scrubbed.paths.length > 0 ? html` at <code>${e.scrubbed.paths.join(', ')}</code>` : ''}.</p>`
      : ''}
    <details><summary>Raw payload (${e.raw_encoding})</summary>
      <pre>${raw_.text}</pre>
      ${raw_.cut ? html`<p class="sub">Cut for display; the whole payload is at <code>${apiPath}</code>.</p>` : ''}
    </details>
  </section>`;
}

export function eventPage(ctx: PageContext, project: Project, e: EventDetail, files: EventFile[] = []): Html {
  const body = html`<p class="sub"><a href="${projectPath(project.slug, 'events')}">Events</a> · <a href="${projectPath(project.slug, 'issues', e.fingerprint)}">Issue</a></p>
    <h1>${e.title || e.message || e.event_id}</h1>
    ${eventView(project, e, ctx, files)}`;
  return page(ctx, { title: `Event ${count(e.id)} · ${project.name}`, project, section: 'events', body });
}
