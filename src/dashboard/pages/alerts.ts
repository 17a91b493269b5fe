// The alerts page: the three rules (on/off, cooldown, filters: environments, lowest
// level, channels), the channels (webhook, Telegram, email, Slack, Discord,
// Teams) with "send test" and delete, the form adding a channel, and the
// delivery log. Built on src/alerts, as the alerts API is.
import { ALERT_LEVELS, CHANNEL_KINDS } from '../../alerts/rules.js';
import type { AlertRuleJson, channelJson, listDeliveries } from '../../alerts/store.js';
import { html, raw, utc, type Html } from '../html.js';
import { csrfField, flash, page, type PageContext } from '../layout.js';

type Project = { slug: string; name: string };
type Channel = ReturnType<typeof channelJson>;
type Delivery = Awaited<ReturnType<typeof listDeliveries>>[number];

const RULE_NAMES: Record<string, string> = {
  new_issue: 'New issue',
  regression: 'Regression (a resolved issue is back)',
  crash_spike: 'Crash spike',
  monitor: 'Cron monitor (missed, failed or timed out; recovered)',
};

function channelTarget(ch: Channel): string {
  const c = ch.config as { url?: unknown; has_secret?: unknown; chat_id?: unknown; to?: unknown; host?: unknown };
  if (ch.kind === 'webhook') return `${String(c.url)}${c.has_secret ? ' (signed with a secret)' : ''}`;
  if (ch.kind === 'telegram') return `chat ${String(c.chat_id)}`;
  if (ch.kind === 'email') return Array.isArray(c.to) ? c.to.join(', ') : '';
  // The hook URL is its credential: only its host is shown.
  return `hook at ${String(c.host)}`;
}

/** The issue titles a delivery names; a digest says how many more it stood for. */
function deliveryIssues(d: Delivery): string {
  const titles = d.issues.map((i) => i.title || i.fingerprint).join('; ');
  const more = d.issue_count - d.issues.length;
  return more > 0 ? `${titles} and ${more} more` : titles;
}

export function alertsPage(
  ctx: PageContext,
  project: Project,
  data: { rules: AlertRuleJson[]; channels: Channel[]; deliveries: Delivery[] },
  o: { message?: string; error?: string; form?: Record<string, string> } = {},
): Html {
  const base = `/${encodeURIComponent(project.slug)}/alerts`;
  const f = o.form ?? {};
  const body = html`<h1>Alerts</h1>
  ${flash(o.message)}${flash(o.error, 'error')}
  <section class="card" aria-labelledby="rules-h"><h2 id="rules-h">Rules</h2>
    <p class="sub">Alerts inside a rule's cooldown are sent together as one digest when it ends. Empty environments, no lowest level and no channel ticked mean all.</p>
    <div class="scroll"><table><thead><tr><th>Alert</th><th>On</th><th>Cooldown (minutes)</th><th>Environments</th><th>Lowest level</th><th>Channels</th><th class="opt">Last sent</th><th></th></tr></thead><tbody>
    ${data.rules.map(
      (r) => html`<tr>
        <td>${RULE_NAMES[r.type] ?? r.type}</td>
        <td><input type="checkbox" form="rule-${r.type}" name="enabled" value="true" ${r.enabled ? raw('checked') : ''} aria-label="${RULE_NAMES[r.type] ?? r.type} on"></td>
        <td><input type="number" form="rule-${r.type}" name="cooldown_minutes" min="0" max="43200" step="1" value="${r.cooldown_minutes}" aria-label="Cooldown of ${RULE_NAMES[r.type] ?? r.type} in minutes"></td>
        <td><input form="rule-${r.type}" name="environments" value="${r.environments.join(', ')}" placeholder="all" aria-label="Environments of ${RULE_NAMES[r.type] ?? r.type}, comma-separated"></td>
        <td><select form="rule-${r.type}" name="min_level" aria-label="Lowest level of ${RULE_NAMES[r.type] ?? r.type}">
          <option value="" ${r.min_level === null ? raw('selected') : ''}>all</option>
          ${ALERT_LEVELS.map((l) => html`<option value="${l}" ${r.min_level === l ? raw('selected') : ''}>${l}</option>`)}
        </select></td>
        <td>${
          data.channels.length === 0
            ? html`<span class="sub">all</span>`
            : data.channels.map(
                (ch) =>
                  html`<label><input type="checkbox" form="rule-${r.type}" name="channels" value="${ch.id}" ${r.channels.includes(ch.id) ? raw('checked') : ''}> #${ch.id} ${ch.kind}</label> `,
              )
        }<input type="hidden" form="rule-${r.type}" name="channels_shown" value="1"></td>
        <td class="opt">${utc(r.last_triggered)}</td>
        <td><form id="rule-${r.type}" method="post" action="${base}/rules/${r.type}">${csrfField(ctx)}<button type="submit" class="secondary">Save</button></form></td>
      </tr>`,
    )}</tbody></table></div>
  </section>
  <section class="card" aria-labelledby="channels-h"><h2 id="channels-h">Channels</h2>
    ${
      data.channels.length === 0
        ? html`<p>No channel yet: alerts are recorded but sent nowhere.</p>`
        : html`<div class="scroll"><table><thead><tr><th>Kind</th><th>Sends to</th><th class="opt">Added</th><th></th></tr></thead><tbody>
      ${data.channels.map(
        (
          ch,
        ) => html`<tr><td>${ch.kind}</td><td class="title">${channelTarget(ch)}</td><td class="opt">${utc(ch.created_at)}</td>
          <td><div class="actions">
            <form method="post" action="${base}/channels/${ch.id}/test">${csrfField(ctx)}<button type="submit" class="secondary">Send test</button></form>
            <form method="post" action="${base}/channels/${ch.id}/delete">${csrfField(ctx)}<button type="submit" class="secondary" data-confirm="Delete this channel?">Delete</button></form>
          </div></td></tr>`,
      )}</tbody></table></div>`
    }
    <h3>Add a channel</h3>
    <form method="post" action="${base}/channels" class="filters">
      ${csrfField(ctx)}
      <label>Kind<select name="kind">${CHANNEL_KINDS.map((k) => html`<option value="${k}" ${(f.kind ?? 'webhook') === k ? raw('selected') : ''}>${k}</option>`)}</select></label>
      <label>Webhook URL (or the Slack, Discord or Teams hook)<input name="url" type="url" value="${f.url ?? ''}" placeholder="https://hooks.slack.com/services/…"></label>
      <label>Webhook secret (optional)<input name="secret" type="password" autocomplete="off"></label>
      <label>Telegram chat id<input name="chat_id" value="${f.chat_id ?? ''}" placeholder="-1001234567890 or @channel"></label>
      <label>Email recipients<input name="to" value="${f.to ?? ''}" placeholder="oncall@example.com, lead@example.com"></label>
      <button type="submit">Add channel</button>
    </form>
  </section>
  <section aria-labelledby="deliveries-h"><h2 id="deliveries-h">Deliveries <span class="sub">latest 100</span></h2>
    ${
      data.deliveries.length === 0
        ? html`<p class="sub">None yet.</p>`
        : html`<div class="scroll"><table><thead><tr><th>Alert</th><th>Issues</th><th>Channel</th><th>State</th><th class="num">Attempts</th><th>Created</th><th class="opt">Sent</th><th class="opt">Last error</th></tr></thead><tbody>
      ${data.deliveries.map(
        (d) =>
          html`<tr><td>${d.type}${d.digest ? ' (digest)' : ''}</td><td class="title">${deliveryIssues(d)}</td><td>${d.channel_id}</td><td>${d.state}</td><td class="num">${d.attempts}</td><td>${utc(d.created_at)}</td><td class="opt">${utc(d.sent_at)}</td><td class="opt">${d.last_error ?? ''}</td></tr>`,
      )}</tbody></table></div>`
    }
  </section>`;
  return page(ctx, { title: `Alerts · ${project.name}`, project, section: 'alerts', body });
}
