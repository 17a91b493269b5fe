// Events pages: the list with the read API's filters (keyset paging by id), one
// event's detail (with the issue's newer and older events), and the event view the
// issue page shows too: the exception chain with mechanisms and stack traces
// (symbolicated frames beside the frames as received, context lines numbered,
// library frames collapsed, frame variables), the raw trace in the platform's form,
// threads, breadcrumbs, tags, user, contexts, request and extra, and the raw
// payload. Empty fields are left out; formatting rules live in ../event-format.ts.
import type { eventDetail, EventSummaryJson } from '../../read/events.js';
import { LEVELS } from '../../read/params.js';
import type { NormalizedFrame } from '../../ingest/types.js';
import { MAX_TITLE } from '../../limits.js';
import {
  breadcrumbData,
  contextLines,
  formatBytes,
  frameRuns,
  isByteField,
  isEmptyValue,
  rawStackTrace,
  shownEntries,
  stackStyle,
  titleDisplay,
  valueText,
} from '../event-format.js';
import { count, href, html, nonEmpty, options, prettyJson, projectPath, raw, utc, when, type Html } from '../html.js';
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

/** A list row's title link: an ellipsis and the whole title on hover when ingest cut it. */
function rowTitle(project: Project, e: EventSummaryJson): Html {
  const t = titleDisplay(
    e.title || e.message || e.event_id,
    [e.error_type && e.message ? `${e.error_type}: ${e.message.trim()}` : '', e.message.trim()],
    MAX_TITLE,
  );
  const link = projectPath(project.slug, 'events', String(e.id));
  return t.full
    ? html`<a class="title" href="${link}" title="${t.full}">${t.text}</a>`
    : html`<a class="title" href="${link}">${t.text}</a>`;
}

export function eventRows(
  project: Project,
  events: EventSummaryJson[],
  ctx: PageContext,
  o: { showIssue?: boolean } = {},
): Html {
  if (events.length === 0) return html`<p>No events match.</p>`;
  return html`<div class="scroll"><table>
    <thead><tr><th>Event</th><th>Level</th><th class="opt">Release</th><th class="opt">Device / OS</th><th class="opt">User</th><th>Time</th></tr></thead>
    <tbody>${events.map(
      (e) => html`<tr>
        <td>${rowTitle(project, e)}
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
    <label>Window<select name="days">${options(
      [
        ['', 'all'],
        ['1', '24 hours'],
        ['7', '7 days'],
        ['14', '14 days'],
        ['30', '30 days'],
        ['90', '90 days'],
      ],
      query.days,
    )}</select></label>
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

function contextTable(f: NormalizedFrame): Html {
  const lines = contextLines(f);
  if (lines.length === 0) return html``;
  return html`<table class="ctx"><tbody>${lines.map(
    (l) =>
      html`<tr${l.current ? raw(' class="cur"') : ''}><td class="ln">${l.lineno ?? ''}</td><td><code>${l.text}</code></td></tr>`,
  )}</tbody></table>`;
}

function varsBlock(f: NormalizedFrame): Html {
  const vars = shownEntries(f.vars);
  if (vars.length === 0) return html``;
  return html`<details class="vars"><summary>Variables (${vars.length})</summary>${kvList(vars)}</details>`;
}

function frameItem(f: NormalizedFrame, jvm: boolean): Html {
  const file = f.filename ?? f.abs_path ?? (jvm ? null : f.module) ?? f.package ?? '';
  const where = [file, f.lineno !== undefined ? `:${f.lineno}` : '', f.colno !== undefined ? `:${f.colno}` : ''].join(
    '',
  );
  return html`<li class="${f.in_app ? 'app' : 'lib'}"><code>${frameFunction(f, jvm)}</code> <span class="sub">${where}${f.instruction_addr ? ` ${f.instruction_addr}` : ''}</span>
    ${contextTable(f)}${varsBlock(f)}</li>`;
}

/** Frames crashing frame first (the API lists them caller first), library runs collapsed. */
function frameList(frames: NormalizedFrame[], jvm: boolean): Html {
  if (frames.length === 0) return html`<p class="sub">No frames.</p>`;
  const runs = frameRuns([...frames].reverse());
  return html`<ol class="stack">${runs.map((r) =>
    r.kind === 'frame'
      ? frameItem(r.frame, jvm)
      : html`<li class="lib-run"><details><summary>${r.frames.length} library frame${r.frames.length === 1 ? '' : 's'}</summary><ol class="stack">${r.frames.map((f) => frameItem(f, jvm))}</ol></details></li>`,
  )}</ol>`;
}

function stack(frames: NormalizedFrame[], label: string, jvm: boolean): Html {
  return html`<div><h4>${label}</h4>${frameList(frames, jvm)}</div>`;
}

/** Key/value pairs; numbers of bytes read as sizes (the exact count on hover). */
function kvList(entries: [string, unknown][]): Html {
  if (entries.length === 0) return html`<p class="sub">None.</p>`;
  return html`<dl class="kv">${entries.map(
    ([k, v]) =>
      html`<dt>${k}</dt><dd>${isByteField(k, v) ? html`<span title="${count(v)} bytes">${formatBytes(v)}</span>` : valueText(v)}</dd>`,
  )}</dl>`;
}

/** A table of key/value pairs (request headers, extra). Pairs may come as an object or a list of [key, value]. */
function kvTable(value: unknown): Html {
  const entries: [string, unknown][] = Array.isArray(value)
    ? value
        .filter((p): p is [unknown, unknown] => Array.isArray(p) && p.length === 2)
        .map(([k, v]) => [valueText(k), v])
    : shownEntries(value);
  return html`<div class="scroll"><table class="kvt"><tbody>${entries.map(([k, v]) => html`<tr><th scope="row">${k}</th><td>${valueText(v)}</td></tr>`)}</tbody></table></div>`;
}

function requestBlock(r: Record<string, unknown> | null): Html {
  if (!r) return html``;
  const line = [valueText(r.method), valueText(r.url)].filter(Boolean).join(' ');
  const parts = (['query_string', 'data', 'headers', 'cookies', 'env'] as const).filter((k) => !isEmptyValue(r[k]));
  if (line === '' && parts.length === 0) return html``;
  return html`<h3>Request</h3>${line ? html`<p><code>${line}</code></p>` : ''}
    ${parts.map((k) => html`<h4>${k.replace('_', ' ')}</h4>${typeof r[k] === 'string' ? html`<pre>${r[k]}</pre>` : kvTable(r[k])}`)}`;
}

function breadcrumbList(crumbs: Record<string, unknown>[]): Html {
  if (crumbs.length === 0) return html``;
  return html`<h3>Breadcrumbs</h3><ol class="crumbs">${crumbs.map((b) => {
    const t = typeof b.timestamp === 'number' ? new Date(b.timestamp * 1000).toISOString() : valueText(b.timestamp);
    const time = /^\d{4}-\d\d-\d\dT/.test(t) ? t.slice(11, 23) : t;
    const level = valueText(b.level);
    const { summary, entries } = breadcrumbData(b.type, b.data);
    return html`<li><div class="crumb-head"><span class="sub">${time}</span>
        ${b.type ? html`<span class="badge">${valueText(b.type)}</span>` : ''}
        ${b.category ? html`<span>${valueText(b.category)}</span>` : ''}
        ${level ? html`<span class="l-${level}">${level}</span>` : ''}</div>
      ${b.message ? html`<div>${valueText(b.message)}</div>` : ''}
      ${summary ? html`<div><code>${summary}</code></div>` : ''}
      ${entries.length > 0 ? html`<dl class="kv crumb-data">${entries.map(([k, v]) => html`<dt>${k}</dt><dd><code>${v}</code></dd>`)}</dl>` : ''}</li>`;
  })}</ol>`;
}

function threadList(threads: EventDetail['threads'], jvm: boolean): Html {
  if (threads.length === 0) return html``;
  return html`<h3>Threads (${threads.length})</h3><div class="threads">${threads.map(
    (
      th,
    ) => html`<details class="thread" ${th.crashed ? raw('open') : ''}><summary><strong>${th.name ?? (th.id !== null ? `Thread ${th.id}` : 'Thread')}</strong>
      ${th.id !== null && th.name !== null ? html`<span class="sub">#${th.id}</span>` : ''}
      ${th.crashed ? html`<span class="badge l-fatal">crashed</span>` : ''}${th.current ? html` <span class="badge">current</span>` : ''}${th.main ? html` <span class="badge">main</span>` : ''}
      ${th.state ? html` <span class="sub">${th.state}</span>` : ''}</summary>
      ${th.symbolicated_frames ? html`<div class="frames pair">${stack(th.symbolicated_frames, 'Symbolicated', jvm)}${stack(th.frames, 'As received', jvm)}</div>` : frameList(th.frames, jvm)}</details>`,
  )}</div>`;
}

function mechanismBadges(m: EventDetail['exceptions'][number]['mechanism']): Html {
  if (!m) return html``;
  return html`${m.type ? html`<span class="badge">${valueText(m.type)}</span>` : ''}
    ${m.handled === false ? html`<span class="badge l-fatal">unhandled</span>` : m.handled === true ? html`<span class="badge">handled</span>` : ''}
    ${m.synthetic === true ? html`<span class="badge">synthetic</span>` : ''}`;
}

/** The full view of one event. */
export function eventView(project: Project, e: EventDetail, ctx: PageContext, files: EventFile[] = []): Html {
  const exceptions = [...e.exceptions].reverse(); // main exception first
  const jvm = stackStyle(e.platform) === 'jvm';
  const raw_ = prettyJson(e.raw);
  const apiPath = `/api/projects/${encodeURIComponent(project.slug)}/events/${e.id}`;
  const sdk = e.sdk as Record<string, unknown> | null;
  const device = [e.device.model, e.os.name, e.os.version].filter(Boolean).join(' ');
  // The raw trace reads the readable frames: symbolicated where symbolication changed them.
  const trace = rawStackTrace(
    e.platform,
    e.exceptions.map((x) => ({ ...x, frames: (x.symbolicated_frames as NormalizedFrame[] | null) ?? x.frames })),
  );
  const tags = Object.entries(e.tags);
  const user = shownEntries(e.user);
  const contexts = Object.entries(e.contexts).filter(([, v]) => !isEmptyValue(v));
  return html`<section class="card" aria-labelledby="event-${e.id}">
    <h2 id="event-${e.id}">Event <a href="${projectPath(project.slug, 'events', String(e.id))}">#${e.id}</a> <span class="sub">${e.event_id}</span></h2>
    <dl class="kv">
      <dt>Time</dt><dd>${utc(e.time)} (${when(e.time, ctx.now)}), received ${utc(e.received_at)}</dd>
      <dt>Level</dt><dd class="l-${e.level}">${e.level}${e.crash ? ' · crash' : ''}</dd>
      ${e.message ? html`<dt>Message</dt><dd>${e.message}</dd>` : ''}
      ${e.release ? html`<dt>Release</dt><dd><a href="${projectPath(project.slug, 'releases', e.release)}">${e.release}</a> ${e.dist ? `(dist ${e.dist})` : ''}</dd>` : ''}
      ${e.environment ? html`<dt>Environment</dt><dd>${e.environment}</dd>` : ''}
      <dt>Platform</dt><dd>${e.platform}${sdk?.name ? ` · ${valueText(sdk.name)} ${valueText(sdk.version)}` : ''}</dd>
      ${device ? html`<dt>Device / OS</dt><dd>${device}</dd>` : ''}
      ${e.screen ? html`<dt>Screen</dt><dd>${e.screen}</dd>` : ''}
    </dl>
    ${exceptions.length > 0 ? html`<h3>${exceptions.length > 1 ? 'Exceptions (most recent first, then causes)' : 'Exception'}</h3>` : ''}
    ${exceptions.map(
      (x, i) => html`<div class="exception">
        <p>${i > 0 ? html`<span class="sub">Caused by </span>` : ''}${x.type ? html`<strong>${x.type}</strong>` : ''}${x.type && x.value ? ': ' : ''}${x.value} ${mechanismBadges(x.mechanism)}</p>
        ${'obfuscated_type' in x && x.obfuscated_type ? html`<p class="sub">Received as <code>${x.obfuscated_type}</code> (remapped with ProGuard)</p>` : ''}
        ${
          x.symbolicated_frames
            ? html`<div class="frames pair">${stack(x.symbolicated_frames as NormalizedFrame[], 'Symbolicated', jvm)}${stack(x.frames, 'As received', jvm)}</div>`
            : html`<div class="frames">${stack(x.frames, 'Stack trace (most recent call first)', jvm)}</div>`
        }
      </div>`,
    )}
    ${exceptions.some((x) => x.frames.length > 0) ? html`<details class="raw-trace"><summary>Raw stack trace</summary><pre>${trace}</pre></details>` : ''}
    ${threadList(e.threads, jvm)}
    ${attachmentsView(project, files)}
    ${breadcrumbList(e.breadcrumbs)}
    ${
      tags.length > 0 || user.length > 0
        ? html`<div class="grid2">
      ${tags.length > 0 ? html`<div><h3>Tags</h3>${kvList(tags)}</div>` : ''}
      ${user.length > 0 ? html`<div><h3>User</h3>${kvList(user)}</div>` : ''}
    </div>`
        : ''
    }
    ${
      contexts.length > 0
        ? html`<h3>Contexts</h3><div class="grid2">${contexts.map(
            ([name, value]) =>
              html`<div><h4>${name}</h4>${value && typeof value === 'object' ? kvList(shownEntries(value)) : html`<p>${valueText(value)}</p>`}</div>`,
          )}</div>`
        : ''
    }
    ${requestBlock(e.request)}
    ${e.extra && shownEntries(e.extra).length > 0 ? html`<h3>Extra</h3>${kvTable(e.extra)}` : ''}
    ${
      e.scrubbed
        ? html`<p class="sub" data-scrubbed="${String(e.scrubbed.total)}">Filtered by scrubbing: ${String(e.scrubbed.total)} value${e.scrubbed.total === 1 ? '' : 's'}
          (${Object.entries(e.scrubbed.rules)
            .map(([rule, n]) => `${rule} ${n}`)
            .join(
              ', ',
            )})${e.scrubbed.paths.length > 0 ? html` at <code>${e.scrubbed.paths.join(', ')}</code>` : ''}.</p>`
        : ''
    }
    <details><summary>Raw payload (${e.raw_encoding}, ${formatBytes(e.raw_size)})</summary>
      <pre>${raw_.text}</pre>
      ${raw_.cut ? html`<p class="sub">Cut for display; the whole payload is at <code>${apiPath}</code>.</p>` : ''}
    </details>
  </section>`;
}

/** The page's title: the stored one, with an ellipsis and the whole title on hover when ingest cut it. */
function eventTitle(e: EventDetail): { text: string; full: string | null } {
  const stored = e.title || e.message || e.event_id;
  const main = e.exceptions[e.exceptions.length - 1];
  const candidates = [
    main ? (main.type && main.value ? `${main.type}: ${main.value.trim()}` : main.type || main.value.trim()) : '',
    e.message.trim(),
  ];
  return titleDisplay(stored, candidates, MAX_TITLE);
}

export function eventPage(ctx: PageContext, project: Project, e: EventDetail, files: EventFile[] = []): Html {
  const title = eventTitle(e);
  const link = (id: number) => projectPath(project.slug, 'events', String(id));
  const body = html`<p class="sub"><a href="${projectPath(project.slug, 'events')}">Events</a> · <a href="${projectPath(project.slug, 'issues', e.fingerprint)}">Issue</a></p>
    <h1${title.full ? html` title="${title.full}"` : ''}>${title.text}</h1>
    <nav class="pager" aria-label="Events of this issue">
      ${e.next_id !== null ? html`<a class="button secondary" rel="prev" href="${link(e.next_id)}">← Newer event</a>` : html`<span class="sub">Newest event of the issue</span>`}
      ${e.previous_id !== null ? html`<a class="button secondary" rel="next" href="${link(e.previous_id)}">Older event →</a>` : html`<span class="sub">Oldest stored event</span>`}
    </nav>
    ${eventView(project, e, ctx, files)}`;
  return page(ctx, { title: `Event ${count(e.id)} · ${project.name}`, project, section: 'events', body });
}
