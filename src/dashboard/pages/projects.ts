// Project-level pages: the project list with the creation form, a project's
// settings (sampling, quota, DSN with copy, rotate key, delete with
// confirmation) and the error page.
import type { projectJson } from '../../http/projects.js';
import { PLATFORMS } from '../../store/projects.js';
import { html, options, projectPath, utc, type Html } from '../html.js';
import { bars, meter } from '../charts.js';
import type { ProjectUsage } from '../../privacy/usage.js';
import { csrfField, flash, page, type PageContext } from '../layout.js';

/** A project as the JSON API shows it (with its DSN). */
export type ProjectView = ReturnType<typeof projectJson>;

export function projectListPage(
  ctx: PageContext,
  projects: ProjectView[],
  form: Record<string, string> = {},
  error?: string,
  message?: string,
): Html {
  const body = html`<h1>Projects</h1>
  ${flash(message)}
  ${
    projects.length === 0
      ? html`<p>No project yet: create one below, then give its DSN to your app's Sentry SDK.</p>`
      : html`<div class="scroll"><table><thead><tr><th>Project</th><th>Platform</th><th class="opt">Created</th><th></th></tr></thead><tbody>
      ${projects.map(
        (
          p,
        ) => html`<tr><td><a class="title" href="${projectPath(p.slug)}">${p.name}</a><div class="sub">${p.slug}</div></td><td>${p.platform}</td>
          <td class="opt">${utc(p.created_at)}</td><td><a href="${projectPath(p.slug, 'issues')}">Issues</a> · <a href="${projectPath(p.slug, 'settings')}">Settings</a></td></tr>`,
      )}</tbody></table></div>`
  }
  <section class="card" aria-labelledby="new-project"><h2 id="new-project">New project</h2>
    ${flash(error, 'error')}
    <form method="post" action="/new" class="filters">
      ${csrfField(ctx)}
      <label>Slug (lowercase, used in URLs)<input name="slug" required pattern="[a-z0-9][a-z0-9._\\-]{0,63}" value="${form.slug ?? ''}"></label>
      <label>Name<input name="name" value="${form.name ?? ''}"></label>
      <label>Platform<select name="platform">${options(PLATFORMS, form.platform ?? 'other')}</select></label>
      <button type="submit">Create project</button>
    </form>
  </section>`;
  return page(ctx, { title: 'Projects', body });
}

function megabytes(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(bytes < 10 * 1024 * 1024 ? 2 : 0)} MB`;
}

/** The storage panel: bytes and counts by kind, the budget's share, growth per day. */
function usagePanel(u: ProjectUsage): Html {
  return html`<section class="card" aria-labelledby="usage-h"><h2 id="usage-h">Storage</h2>
    <dl class="kv" data-usage-bytes="${String(u.bytes)}">
      <dt>Events</dt><dd>${u.kinds.events.count.toLocaleString('en-US')} stored · ${megabytes(u.kinds.events.bytes)}</dd>
      <dt>Attachments</dt><dd>${u.kinds.attachments.count.toLocaleString('en-US')} · ${megabytes(u.kinds.attachments.bytes)}</dd>
      <dt>Symbol files</dt><dd>${u.kinds.symbols.count.toLocaleString('en-US')} · ${megabytes(u.kinds.symbols.bytes)}</dd>
      <dt>Total</dt><dd>${megabytes(u.bytes)}${u.budget_bytes !== null ? html` of a ${megabytes(u.budget_bytes)} budget ${meter(u.bytes, u.budget_bytes, 'share of the storage budget used')}` : ' (no budget)'}</dd>
    </dl>
    <h3>Stored per day (last ${String(u.growth.length)} days)</h3>
    ${bars(
      u.growth.map((g) => g.day),
      u.growth.map((g) => g.bytes),
      'bytes stored per day',
    )}
  </section>`;
}

export function settingsPage(
  ctx: PageContext,
  p: ProjectView,
  o: { message?: string; error?: string; form?: Record<string, string>; usage?: ProjectUsage } = {},
): Html {
  const f = o.form ?? {};
  const value = (name: keyof ProjectView) => f[name] ?? String(p[name]);
  const base = projectPath(p.slug);
  const checked = (name: 'scrub_defaults' | 'scrub_ip_addresses') =>
    (o.form ? f[name] === '1' : p[name]) ? html` checked` : '';
  const list = (name: 'scrub_fields' | 'safe_fields') => f[name] ?? p[name].join('\n');
  const body = html`<h1>Settings</h1>
  ${flash(o.message)}${flash(o.error, 'error')}
  <section class="card" aria-labelledby="dsn-h"><h2 id="dsn-h">DSN</h2>
    <p>Give this to the Sentry SDK of your app (<code>Sentry.init({ dsn })</code>).</p>
    <div class="actions"><label for="dsn" class="sub">DSN</label><input id="dsn" readonly value="${p.dsn}" size="60"><button type="button" data-copy="dsn" class="secondary">Copy</button></div>
    <form method="post" action="${base}/rotate-key">
      ${csrfField(ctx)}
      <p class="sub">Rotating gives the project a new key; the old DSN stops working at once.</p>
      <button type="submit" class="secondary" data-confirm="Rotate the key? Apps using the old DSN stop reporting.">Rotate key</button>
    </form>
  </section>
  <section class="card" aria-labelledby="settings-h"><h2 id="settings-h">Project</h2>
    <form method="post" action="${base}/settings" class="filters">
      ${csrfField(ctx)}
      <label>Name<input name="name" required value="${value('name')}"></label>
      <label>Platform<select name="platform">${options(PLATFORMS, value('platform'))}</select></label>
      <label>Keep the first N events of each issue<input name="sample_keep_first" type="number" min="0" step="1" value="${value('sample_keep_first')}"></label>
      <label>Then keep this share (0 to 1)<input name="sample_rate" type="number" min="0" max="1" step="any" value="${value('sample_rate')}"></label>
      <label>Daily quota of events (0 = unlimited)<input name="daily_quota" type="number" min="0" step="1" value="${value('daily_quota')}"></label>
      <button type="submit">Save</button>
    </form>
  </section>
  ${o.usage ? usagePanel(o.usage) : ''}
  <section class="card" aria-labelledby="privacy-h"><h2 id="privacy-h">Privacy and storage</h2>
    <p class="sub">Scrubbing runs before an event is grouped or stored (the raw payload too); see docs/privacy.md.</p>
    <form method="post" action="${base}/privacy">
      ${csrfField(ctx)}
      <p><label><input type="checkbox" name="scrub_defaults" value="1"${checked('scrub_defaults')}> Scrub by the default rules (passwords, secrets, tokens, auth headers, cookies, sessions, card numbers, bearer tokens, private keys)</label></p>
      <p><label><input type="checkbox" name="scrub_ip_addresses" value="1"${checked('scrub_ip_addresses')}> Remove IP addresses (the user's and the request's)</label></p>
      <p><label>Also scrub keys containing (one a line)<br><textarea name="scrub_fields" rows="3" cols="40">${list('scrub_fields')}</textarea></label></p>
      <p><label>Never scrub these keys (one a line)<br><textarea name="safe_fields" rows="3" cols="40">${list('safe_fields')}</textarea></label></p>
      <p><label>Storage budget in MB (0 = none; past it the oldest events go)<input name="storage_budget_mb" type="number" min="0" step="1" value="${value('storage_budget_mb')}"></label></p>
      <button type="submit">Save</button>
    </form>
  </section>
  <section class="card" aria-labelledby="delete-h"><h2 id="delete-h">Delete project</h2>
    <form method="post" action="${base}/delete">
      ${csrfField(ctx)}
      <p>Deleting removes the project with every issue, event, session and setting. It cannot be undone.</p>
      <label><span>Type the slug <code>${p.slug}</code> to confirm</span><input name="confirm" autocomplete="off" required size="30"></label>
      <p><button type="submit" class="danger">Delete project</button></p>
    </form>
  </section>`;
  return page(ctx, { title: `Settings · ${p.name}`, project: p, section: 'settings', body });
}

export function errorPage(
  ctx: PageContext,
  status: number,
  message: string,
  project?: { slug: string; name: string },
): Html {
  const title = status === 404 ? 'Not found' : status === 400 ? 'Bad request' : status === 403 ? 'Refused' : 'Error';
  return page(ctx, {
    title,
    project,
    body: html`<h1>${title}</h1><p class="flash error" role="alert">${message}</p><p><a href="/">All projects</a></p>`,
  });
}
