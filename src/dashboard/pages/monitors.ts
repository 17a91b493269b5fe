// The monitors pages: each cron monitor of the project with a status strip of its recent
// check-ins (oldest left), and one monitor's settings and check-ins. Built on src/monitors,
// as the monitors API is; check-ins arrive from SDKs and sentry-cli, so there is no form.
import type { checkinJson, monitorJson } from '../../monitors/store.js';
import { html, projectPath, utc, type Html } from '../html.js';
import { page, type PageContext } from '../layout.js';

type Project = { slug: string; name: string };
type Monitor = ReturnType<typeof monitorJson>;
type Checkin = ReturnType<typeof checkinJson>;

const STATUS_TEXT: Record<string, string> = {
  ok: 'ok',
  error: 'failed',
  in_progress: 'running',
  missed: 'missed',
  timeout: 'timed out',
};

function scheduleText(m: Monitor): string {
  const s = m.config.schedule as { type: string; value: string | number; unit?: string };
  const when = s.type === 'interval' ? `every ${s.value} ${s.unit}${Number(s.value) === 1 ? '' : 's'}` : `${s.value}`;
  return `${when} (${m.config.timezone})`;
}

/** The check-ins as coloured cells, oldest first, each titled with its status and time. */
export function statusStrip(checkins: Checkin[]): Html {
  const cells = [...checkins].reverse();
  return html`<ol class="strip" aria-label="Recent check-ins, oldest first">${cells.map(
    (c) =>
      html`<li class="c-${c.status}" title="${STATUS_TEXT[c.status] ?? c.status} · ${utc(c.date_created)}"><span class="visually-hidden">${STATUS_TEXT[c.status] ?? c.status}</span></li>`,
  )}</ol>`;
}

function healthBadge(m: Monitor): Html {
  if (m.status === 'disabled') return html`<span class="badge">disabled</span>`;
  return m.health === 'failing'
    ? html`<span class="badge l-error">failing (${m.failures} in a row)</span>`
    : html`<span class="badge s-resolved">ok</span>`;
}

export function monitorListPage(
  ctx: PageContext,
  project: Project,
  monitors: { monitor: Monitor; checkins: Checkin[] }[],
): Html {
  const body = html`<h1>Cron monitors</h1>
  <p class="sub">Monitors are created by the first check-in that carries a <code>monitor_config</code> (<code>sentry-cli monitors run</code>, an SDK's <code>withMonitor</code>).</p>
  ${
    monitors.length === 0
      ? html`<p>No monitor yet.</p>`
      : html`<div class="scroll"><table><thead><tr><th>Monitor</th><th>Health</th><th>Recent check-ins</th><th class="opt">Schedule</th><th class="opt">Last check-in</th><th class="opt">Next expected</th></tr></thead><tbody>
    ${monitors.map(
      ({
        monitor: m,
        checkins,
      }) => html`<tr><td class="title"><a href="${projectPath(project.slug, 'monitors', m.slug)}">${m.slug}</a></td><td>${healthBadge(m)}</td>
        <td>${statusStrip(checkins)}</td><td class="opt">${scheduleText(m)}</td><td class="opt">${utc(m.last_checkin)}</td><td class="opt">${m.status === 'active' ? utc(m.next_expected) : ''}</td></tr>`,
    )}</tbody></table></div>`
  }`;
  return page(ctx, { title: `Monitors · ${project.name}`, project, section: 'monitors', body });
}

export function monitorPage(ctx: PageContext, project: Project, m: Monitor, checkins: Checkin[]): Html {
  const c = m.config;
  const body = html`<h1>${m.slug} ${healthBadge(m)}</h1>
  ${statusStrip(checkins)}
  <dl class="kv">
    <dt>Schedule</dt><dd>${scheduleText(m)}</dd>
    <dt>Margin</dt><dd>${c.checkin_margin} min</dd>
    <dt>Max runtime</dt><dd>${c.max_runtime} min</dd>
    <dt>Thresholds</dt><dd>alert after ${c.failure_issue_threshold} failure(s) in a row; recovered after ${c.recovery_threshold} ok check-in(s)</dd>
    <dt>Last check-in</dt><dd>${utc(m.last_checkin)} ${m.last_status ? `(${STATUS_TEXT[m.last_status] ?? m.last_status})` : ''}</dd>
    <dt>Next expected</dt><dd>${m.status === 'active' ? utc(m.next_expected) : 'disabled'}</dd>
  </dl>
  <h2>Check-ins</h2>
  ${
    checkins.length === 0
      ? html`<p>No check-in kept.</p>`
      : html`<div class="scroll"><table><thead><tr><th>Status</th><th>Time</th><th class="num">Duration</th><th class="opt">Environment</th><th class="opt">Release</th></tr></thead><tbody>
    ${checkins.map(
      (
        k,
      ) => html`<tr><td class="${k.status === 'ok' ? 's-resolved' : k.status === 'in_progress' ? '' : 'l-error'}">${STATUS_TEXT[k.status] ?? k.status}</td><td>${utc(k.date_created)}</td>
        <td class="num">${k.duration === null ? '' : `${k.duration.toFixed(1)} s`}</td><td class="opt">${k.environment ?? ''}</td><td class="opt">${k.release ?? ''}</td></tr>`,
    )}</tbody></table></div>`
  }`;
  return page(ctx, { title: `${m.slug} · Monitors · ${project.name}`, project, section: 'monitors', body });
}
