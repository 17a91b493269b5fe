// What an alert looks like in the places teams read it: a Slack (and Mattermost)
// Block Kit message, a Discord embed, a Microsoft Teams Adaptive Card and an email.
// Pure builders over one summary of the alert, so every provider says the same
// things (project, type, title, level, release, environment, counts, first seen, the
// dashboard link; a digest lists up to 20 then "and N more") within that provider's
// documented limits (docs/api.md "Chat and email messages").
import type { AlertContent, AlertProject } from './channels.js';
import { alertLink } from './channels.js';

/** One labelled value of an alert ("Level: error"). */
export interface Fact {
  name: string;
  value: string;
}

/** One alert a digest lists. */
export interface SummaryItem {
  text: string;
  url?: string;
  facts: string;
}

/** What every message says, before any provider's formatting. */
export interface AlertSummary {
  /** "New issue in Shop app", "3 new issues in Shop app since 2026-11-21 10:02 UTC". */
  headline: string;
  /** The issue's title, or for other alerts a sentence saying what happened. */
  title: string;
  facts: Fact[];
  url?: string;
  /** Digests: the listed alerts and how many more there are. */
  items?: SummaryItem[];
  more?: number;
  level?: string;
  triggeredAt: string;
}

const TYPE_NAMES: Record<string, [string, string]> = {
  new_issue: ['New issue', 'new issues'],
  regression: ['Regression', 'regressions'],
  crash_spike: ['Crash spike', 'crash spikes'],
  monitor: ['Cron monitor', 'monitor alerts'],
  test: ['Test alert', 'test alerts'],
};

function typeName(type: string): [string, string] {
  return (
    TYPE_NAMES[type] ?? [
      type.replace(/_/g, ' ').replace(/^./, (c) => c.toUpperCase()),
      `${type.replace(/_/g, ' ')} alerts`,
    ]
  );
}

/** `2026-11-21 10:02 UTC`: the form every message shows times in. */
export function utcMinute(ms: number): string {
  const iso = new Date(ms).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

export function summarize(content: AlertContent, project: AlertProject, publicUrl: string | null): AlertSummary {
  const [one, many] = typeName(content.type);
  const projectFact: Fact = { name: 'Project', value: `${project.name} (${project.slug})` };
  const triggeredAt = new Date(content.triggered_at).toISOString();
  if (content.digest && content.type !== 'test') {
    const d = content.digest;
    const items: SummaryItem[] = d.items.map((raw) => {
      const fp = str(raw.fingerprint);
      const url = fp
        ? alertLink(publicUrl, project, { type: 'new_issue', fingerprint: fp, triggered_at: 0 })
        : undefined;
      if (content.type === 'crash_spike') {
        return {
          text: `${num(raw.recent) ?? '?'} crashes in 60 minutes`,
          facts: `hourly average before: ${num(raw.baseline) ?? '?'}`,
        };
      }
      const count = num(raw.event_count);
      const facts = [
        str(raw.level),
        count !== undefined ? plural(count, 'event') : undefined,
        str(raw.release) && `release ${raw.release}`,
        str(raw.environment) && `env ${raw.environment}`,
      ]
        .filter(Boolean)
        .join(', ');
      return { text: str(raw.title) ?? fp ?? '(untitled)', ...(url ? { url } : {}), facts };
    });
    const summary: AlertSummary = {
      headline: `${d.count} ${d.count === 1 ? one.toLowerCase() : many} in ${project.name} since ${utcMinute(d.since)}`,
      title: `${plural(d.count, 'alert')} held back by the rule's cooldown`,
      facts: [
        projectFact,
        { name: 'Type', value: one },
        { name: 'Alerts', value: String(d.count) },
        { name: 'Since', value: utcMinute(d.since) },
      ],
      items,
      more: Math.max(0, d.count - d.items.length),
      triggeredAt,
    };
    const url = alertLink(publicUrl, project, { type: content.type, triggered_at: content.triggered_at });
    if (url) summary.url = url;
    return summary;
  }
  const facts: Fact[] = [projectFact, { name: 'Type', value: one }];
  let title: string;
  if (content.type === 'crash_spike') {
    title = `${content.recent ?? '?'} crashes in the last 60 minutes`;
    facts.push(
      { name: 'Crashes (60 min)', value: String(content.recent ?? '?') },
      { name: 'Hourly average before', value: String(content.baseline ?? '?') },
    );
  } else if (content.type === 'test') {
    title = 'Faultline can reach this channel.';
  } else {
    title = content.title || content.fingerprint || '(untitled)';
    if (content.monitor) facts.push({ name: 'Monitor', value: content.monitor });
    if (content.level) facts.push({ name: 'Level', value: content.level });
    if (content.release) facts.push({ name: 'Release', value: content.release });
    if (content.environment) facts.push({ name: 'Environment', value: content.environment });
    if (content.event_count !== undefined) facts.push({ name: 'Events', value: String(content.event_count) });
    const firstSeen = content.first_seen ?? (content.type === 'new_issue' ? content.triggered_at : undefined);
    if (firstSeen !== undefined) facts.push({ name: 'First seen', value: utcMinute(firstSeen) });
  }
  const summary: AlertSummary = { headline: `${one} in ${project.name}`, title, facts, triggeredAt };
  if (content.level) summary.level = content.level;
  const url = alertLink(publicUrl, project, content);
  if (url) summary.url = url;
  return summary;
}

/** Cuts text to `max` characters (code units), ending with an ellipsis when cut. */
export function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  let cut = text.slice(0, max - 1);
  // Never leave half of a surrogate pair.
  if (/[\uD800-\uDBFF]$/.test(cut)) cut = cut.slice(0, -1);
  return `${cut}…`;
}

/** Lines joined until the next would pass `max`; the rest is said as "and N more". */
function fitLines(lines: string[], max: number, moreAlready: number): string {
  const out: string[] = [];
  let size = 0;
  let dropped = 0;
  for (const line of lines) {
    // Room for the "and N more" line.
    if (size + line.length + 1 > max - 24) {
      dropped += 1;
      continue;
    }
    out.push(line);
    size += line.length + 1;
  }
  const more = moreAlready + dropped;
  if (more > 0) out.push(`and ${more} more`);
  return out.join('\n');
}

// ---------------------------------------------------------------------------
// Slack (Block Kit), Mattermost-compatible
// ---------------------------------------------------------------------------

/** Slack's documented limits (Block Kit reference). */
export const SLACK_LIMITS = {
  headerText: 150,
  sectionText: 3000,
  fieldText: 2000,
  fields: 10,
  blocks: 50,
  buttonText: 75,
  url: 3000,
};

/** Slack mrkdwn: &, < and > must be escaped; everything else is shown as written. */
export function slackEscape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function slackLink(url: string | undefined, text: string): string {
  // `|` and `>` end a Slack link's text; the escaped text has no `>` left.
  return url ? `<${url}|${slackEscape(text).replace(/\|/g, '¦')}>` : slackEscape(text);
}

/**
 * An incoming-webhook message: `text` is the notification (and what Mattermost, which
 * ignores `blocks`, shows; it translates `<url|text>` links), `blocks` what Slack shows.
 */
export function slackMessage(
  content: AlertContent,
  project: AlertProject,
  publicUrl: string | null,
): Record<string, unknown> {
  const s = summarize(content, project, publicUrl);
  const L = SLACK_LIMITS;
  const factLine = s.facts
    .slice(1)
    .map((f) => `${f.name}: ${f.value}`)
    .join(' · ');
  const blocks: Record<string, unknown>[] = [
    { type: 'header', text: { type: 'plain_text', text: clip(s.headline, L.headerText), emoji: false } },
    {
      type: 'section',
      text: {
        type: 'mrkdwn',
        text: clip(`*${slackLink(s.url && !s.items ? s.url : undefined, clip(s.title, 1000))}*`, L.sectionText),
      },
    },
    {
      type: 'section',
      fields: s.facts
        .slice(0, L.fields)
        .map((f) => ({ type: 'mrkdwn', text: clip(`*${slackEscape(f.name)}*\n${slackEscape(f.value)}`, L.fieldText) })),
    },
  ];
  let listText = '';
  if (s.items) {
    const lines = s.items.map(
      (i) => `• ${slackLink(i.url, clip(i.text, 200))}${i.facts ? ` (${slackEscape(i.facts)})` : ''}`,
    );
    listText = fitLines(lines, L.sectionText, s.more ?? 0);
    if (listText) blocks.push({ type: 'section', text: { type: 'mrkdwn', text: listText } });
  }
  if (s.url && s.url.length <= L.url) {
    blocks.push({
      type: 'actions',
      elements: [{ type: 'button', text: { type: 'plain_text', text: 'Open in Faultline' }, url: s.url }],
    });
  }
  blocks.push({
    type: 'context',
    elements: [{ type: 'mrkdwn', text: clip(`Faultline · ${slackEscape(s.triggeredAt)}`, L.sectionText) }],
  });
  const text = [slackEscape(s.headline), slackLink(s.url, clip(s.title, 1000)), slackEscape(factLine), listText]
    .filter(Boolean)
    .join('\n');
  return { text: clip(text, 40_000), blocks };
}

// ---------------------------------------------------------------------------
// Discord (one embed)
// ---------------------------------------------------------------------------

/** Discord's documented embed limits. */
export const DISCORD_LIMITS = {
  title: 256,
  description: 4096,
  fields: 25,
  fieldName: 256,
  fieldValue: 1024,
  footer: 2048,
  total: 6000,
  url: 2048,
};

const LEVEL_COLORS: Record<string, number> = {
  fatal: 0x8b0000,
  error: 0xd93025,
  warning: 0xf29900,
  info: 0x1a73e8,
  debug: 0x5f6368,
};
const DEFAULT_COLOR = 0x6b4fbb;

/**
 * Discord markdown: backslash-escapes what would format or link, and breaks `@everyone`
 * and `@here` (allowed_mentions already keeps them from pinging; this keeps them from
 * looking like one).
 */
export function discordEscape(text: string): string {
  return text.replace(/([\\*_~`|[\]()<>])/g, '\\$1').replace(/@(everyone|here)/g, '@\u200b$1');
}

export function discordMessage(
  content: AlertContent,
  project: AlertProject,
  publicUrl: string | null,
): Record<string, unknown> {
  const s = summarize(content, project, publicUrl);
  const L = DISCORD_LIMITS;
  const title = clip(s.headline, L.title);
  const fields = s.facts
    .slice(0, L.fields)
    .map((f) => ({ name: clip(f.name, L.fieldName), value: clip(f.value, L.fieldValue), inline: true }));
  const footer = 'Faultline';
  // What the fields and the title take, so the whole embed stays within Discord's 6 000.
  const used = title.length + footer.length + fields.reduce((n, f) => n + f.name.length + f.value.length, 0);
  let description = discordEscape(clip(s.title, 1000));
  if (s.items) {
    const lines = s.items.map(
      (i) =>
        `• ${i.url ? `[${discordEscape(clip(i.text, 200))}](${i.url})` : discordEscape(clip(i.text, 200))}${i.facts ? ` (${discordEscape(i.facts)})` : ''}`,
    );
    description = fitLines(lines, Math.min(L.description, L.total - used), s.more ?? 0);
  }
  const embed: Record<string, unknown> = {
    title,
    description: clip(description, Math.min(L.description, L.total - used)),
    color: LEVEL_COLORS[s.level ?? ''] ?? DEFAULT_COLOR,
    fields,
    footer: { text: footer },
    timestamp: s.triggeredAt,
  };
  if (s.url && s.url.length <= L.url) embed.url = s.url;
  // Issue titles are user input: nothing in them may ping anyone.
  return { username: 'Faultline', embeds: [embed], allowed_mentions: { parse: [] } };
}

// ---------------------------------------------------------------------------
// Microsoft Teams (Workflows webhook, Adaptive Card)
// ---------------------------------------------------------------------------

/** Teams: a message of at most 28 KB; Adaptive Card 1.4 is what Teams renders everywhere. */
export const TEAMS_LIMITS = { messageBytes: 28_000, cardVersion: '1.4' };

export function teamsMessage(
  content: AlertContent,
  project: AlertProject,
  publicUrl: string | null,
): Record<string, unknown> {
  const s = summarize(content, project, publicUrl);
  const body: Record<string, unknown>[] = [
    { type: 'TextBlock', text: clip(s.headline, 300), size: 'Medium', weight: 'Bolder', wrap: true },
    {
      type: 'TextBlock',
      text: clip(s.title, 1000),
      wrap: true,
      ...(s.level === 'fatal' || s.level === 'error' ? { color: 'Attention' } : {}),
    },
    { type: 'FactSet', facts: s.facts.map((f) => ({ title: f.name, value: clip(f.value, 500) })) },
  ];
  if (s.items) {
    const lines = s.items.map(
      (i) =>
        `- ${i.url ? `[${clip(i.text, 200).replace(/[[\]]/g, '')}](${i.url})` : clip(i.text, 200)}${i.facts ? ` (${i.facts})` : ''}`,
    );
    body.push({ type: 'TextBlock', text: fitLines(lines, 16_000, s.more ?? 0), wrap: true });
  }
  const card: Record<string, unknown> = {
    $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
    type: 'AdaptiveCard',
    version: TEAMS_LIMITS.cardVersion,
    body,
  };
  if (s.url) card.actions = [{ type: 'Action.OpenUrl', title: 'Open in Faultline', url: s.url }];
  return {
    type: 'message',
    attachments: [{ contentType: 'application/vnd.microsoft.card.adaptive', contentUrl: null, content: card }],
  };
}

// ---------------------------------------------------------------------------
// Email
// ---------------------------------------------------------------------------

export interface MailContent {
  subject: string;
  text: string;
  html: string;
}

export const htmlEscape = (s: string) =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** Subject (one line, at most 200 characters), plain text and a simple HTML part. */
export function emailMessage(
  content: AlertContent,
  project: AlertProject,
  publicUrl: string | null,
  options: { assignee?: string } = {},
): MailContent {
  const s = summarize(content, project, publicUrl);
  // The assignee's own email says why it came to them.
  if (options.assignee !== undefined) s.headline = `Your issue regressed in ${project.name}`;
  const subject = clip(`[Faultline] ${s.headline}: ${s.title}`.replace(/[\r\n\t]+/g, ' '), 200);
  const text: string[] = [s.headline, '', s.title, ''];
  if (options.assignee !== undefined)
    text.splice(1, 0, '', `${options.assignee}, this issue is assigned to you and has come back.`);
  for (const f of s.facts) text.push(`${f.name}: ${f.value}`);
  if (s.items) {
    text.push('');
    for (const i of s.items) text.push(`- ${i.text}${i.facts ? ` (${i.facts})` : ''}${i.url ? `\n  ${i.url}` : ''}`);
    if (s.more) text.push(`and ${s.more} more`);
  }
  if (s.url) text.push('', s.url);
  const html: string[] = [
    '<!doctype html><html><body style="font-family:sans-serif">',
    `<h2 style="margin:0 0 8px">${htmlEscape(s.headline)}</h2>`,
    options.assignee !== undefined
      ? `<p>${htmlEscape(options.assignee)}, this issue is assigned to you and has come back.</p>`
      : '',
    `<p style="font-size:16px">${s.url && !s.items ? `<a href="${htmlEscape(s.url)}">${htmlEscape(s.title)}</a>` : htmlEscape(s.title)}</p>`,
    '<table cellpadding="4">',
    ...s.facts.map((f) => `<tr><th align="left">${htmlEscape(f.name)}</th><td>${htmlEscape(f.value)}</td></tr>`),
    '</table>',
  ];
  if (s.items) {
    html.push('<ul>');
    for (const i of s.items)
      html.push(
        `<li>${i.url ? `<a href="${htmlEscape(i.url)}">${htmlEscape(i.text)}</a>` : htmlEscape(i.text)}${i.facts ? ` (${htmlEscape(i.facts)})` : ''}</li>`,
      );
    html.push('</ul>');
    if (s.more) html.push(`<p>and ${s.more} more</p>`);
  }
  if (s.url) html.push(`<p><a href="${htmlEscape(s.url)}">Open in Faultline</a></p>`);
  html.push('</body></html>');
  return { subject, text: text.join('\n'), html: html.join('\n') };
}
