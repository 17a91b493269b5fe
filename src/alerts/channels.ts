// What an alert says and how it reaches a channel: the webhook payload (docs/api.md
// "Webhook payload": fields that do not apply are omitted), its headers and HMAC signature,
// the Telegram message, and one attempt at sending either. The bot token is part of
// the Bot API's URL only: it is cut out of every error text this file produces.
import { HOUR_MS } from '../clock.js';
import type { AlertType } from './rules.js';
import type { EmailConfig, ProviderConfig, ProviderKind, TelegramConfig, WebhookConfig } from './rules.js';
import { isProviderKind } from './rules.js';
import { discordMessage, emailMessage, slackMessage, teamsMessage } from './messages.js';
import type { DigestFields } from './outbox.js';
import { ForbiddenAddressError, type AlertRuntime } from './transport.js';

export const WEBHOOK_TIMEOUT_MS = 10_000;
export const TELEGRAM_TIMEOUT_MS = 10_000;
export const USER_AGENT = 'faultline';
export const SIGNATURE_HEADER = 'X-Faultline-Signature';

/** What an alert carries besides its project: the outbox row's payload plus when it fired. */
export interface AlertContent {
  type: AlertType | 'test';
  title?: string;
  fingerprint?: string;
  level?: string;
  event_count?: number;
  release?: string;
  /** crash_spike: crashes in the last 60 minutes, and the hourly average of the 24 hours before. */
  recent?: number;
  baseline?: number;
  environment?: string;
  /** Epoch ms the issue was first seen (issue alerts recorded since messages show it). */
  first_seen?: number;
  /** monitor: the monitor's slug, and what happened (missed, error, timeout, recovered; src/monitors/alert.ts). */
  monitor?: string;
  reason?: string;
  /** Set when this is the digest of the alerts a cooldown held back. */
  digest?: DigestFields;
  triggered_at: number;
}

export interface AlertProject {
  slug: string;
  name: string;
}

export interface WebhookPayload {
  type: string;
  project: AlertProject;
  title?: string;
  fingerprint?: string;
  level?: string;
  event_count?: number;
  release?: string;
  url?: string;
  recent?: number;
  baseline?: number;
  environment?: string;
  monitor?: string;
  reason?: string;
  /** The digest form (docs/api.md "Webhook payload"). */
  digest?: true;
  count?: number;
  since?: string;
  issues?: DigestItem[];
  more?: number;
  triggered_at: string;
}

/** One alert a digest lists: its issue (or, for crash spikes, its counts). */
export interface DigestItem {
  title?: string;
  fingerprint?: string;
  level?: string;
  event_count?: number;
  release?: string;
  environment?: string;
  url?: string;
  recent?: number;
  baseline?: number;
  monitor?: string;
  reason?: string;
}

const DIGEST_NOUNS: Record<AlertType, [string, string]> = {
  new_issue: ['new issue', 'new issues'],
  regression: ['regression', 'regressions'],
  crash_spike: ['crash spike', 'crash spikes'],
  monitor: ['monitor alert', 'monitor alerts'],
};

const TITLES: Record<AlertContent['type'], string> = {
  new_issue: 'New issue',
  regression: 'Regression',
  crash_spike: 'Crash spike',
  monitor: 'Cron monitor',
  test: 'Test alert',
};

/**
 * Where a person sees what the alert is about, when PUBLIC_URL is known: the dashboard's
 * project page `/{slug}` or issue page `/{slug}/issues/{fingerprint}`.
 */
export function alertLink(publicUrl: string | null, project: AlertProject, content: AlertContent): string | undefined {
  if (publicUrl === null) return undefined;
  const base = `${publicUrl}/${encodeURIComponent(project.slug)}`;
  if (content.monitor) return `${base}/monitors/${encodeURIComponent(content.monitor)}`;
  return content.fingerprint ? `${base}/issues/${encodeURIComponent(content.fingerprint)}` : base;
}

/** The fields of one listed alert of a digest that apply to it. */
function digestItem(raw: Record<string, unknown>, project: AlertProject, publicUrl: string | null): DigestItem {
  const item: DigestItem = {};
  for (const k of ['title', 'fingerprint', 'level', 'release', 'environment', 'monitor', 'reason'] as const) {
    if (typeof raw[k] === 'string' && raw[k] !== '') item[k] = raw[k] as string;
  }
  for (const k of ['event_count', 'recent', 'baseline'] as const) {
    if (typeof raw[k] === 'number') item[k] = raw[k] as number;
  }
  if (item.fingerprint !== undefined || item.monitor !== undefined) {
    const url = alertLink(publicUrl, project, {
      type: 'new_issue',
      fingerprint: item.fingerprint,
      monitor: item.monitor,
      triggered_at: 0,
    });
    if (url !== undefined) item.url = url;
  }
  return item;
}

function digestPayload(
  content: AlertContent,
  digest: DigestFields,
  project: AlertProject,
  publicUrl: string | null,
): WebhookPayload {
  const payload: WebhookPayload = {
    type: content.type,
    digest: true,
    project: { slug: project.slug, name: project.name },
    count: digest.count,
    since: new Date(digest.since).toISOString(),
    issues: digest.items.map((i) => digestItem(i, project, publicUrl)),
    more: Math.max(0, digest.count - digest.items.length),
    triggered_at: new Date(content.triggered_at).toISOString(),
  };
  const url = alertLink(publicUrl, project, { type: content.type, triggered_at: content.triggered_at });
  if (url !== undefined) payload.url = url;
  return payload;
}

export function webhookPayload(content: AlertContent, project: AlertProject, publicUrl: string | null): WebhookPayload {
  if (content.digest && content.type !== 'test') return digestPayload(content, content.digest, project, publicUrl);
  const payload = { type: content.type, project: { slug: project.slug, name: project.name } } as WebhookPayload;
  if (content.title !== undefined) payload.title = content.title;
  if (content.fingerprint !== undefined) payload.fingerprint = content.fingerprint;
  if (content.level !== undefined) payload.level = content.level;
  if (content.event_count !== undefined) payload.event_count = content.event_count;
  if (content.release) payload.release = content.release;
  const url = alertLink(publicUrl, project, content);
  if (url !== undefined) payload.url = url;
  if (content.recent !== undefined) payload.recent = content.recent;
  if (content.baseline !== undefined) payload.baseline = content.baseline;
  if (content.environment) payload.environment = content.environment;
  if (content.monitor) payload.monitor = content.monitor;
  if (content.reason) payload.reason = content.reason;
  payload.triggered_at = new Date(content.triggered_at).toISOString();
  return payload;
}

/** The short plain-text Telegram message: type, project, title, counts, link. */
export function telegramText(content: AlertContent, project: AlertProject, publicUrl: string | null): string {
  if (content.digest && content.type !== 'test')
    return telegramDigestText(content.type, content.digest, project, publicUrl);
  const lines = [`${TITLES[content.type]} in ${project.name} (${project.slug})`];
  if (content.type === 'crash_spike') {
    lines.push(
      `${content.recent} crashes in the last 60 minutes; hourly average of the 24 hours before: ${content.baseline}`,
    );
  } else if (content.type === 'test') {
    lines.push('Faultline can reach this chat.');
  } else if (content.type === 'monitor') {
    if (content.title) lines.push(content.title.slice(0, 300));
    if (content.environment) lines.push(`environment ${content.environment}`);
  } else {
    if (content.title) lines.push(content.title.slice(0, 300));
    const facts = [`${content.event_count} event${content.event_count === 1 ? '' : 's'}`];
    if (content.level) facts.push(`level ${content.level}`);
    if (content.release) facts.push(`release ${content.release}`);
    lines.push(facts.join(', '));
  }
  const url = alertLink(publicUrl, project, content);
  if (url) lines.push(url);
  return lines.join('\n');
}

/** "3 new issues in Shop app (shop-app) since 10:02 UTC", one line per listed alert, "and N more", the link. */
function telegramDigestText(
  type: AlertType,
  digest: DigestFields,
  project: AlertProject,
  publicUrl: string | null,
): string {
  const since = new Date(digest.since).toISOString();
  const [one, many] = DIGEST_NOUNS[type];
  const lines = [
    `${digest.count} ${digest.count === 1 ? one : many} in ${project.name} (${project.slug}) since ${since.slice(0, 10)} ${since.slice(11, 16)} UTC`,
  ];
  for (const raw of digest.items) {
    const item = digestItem(raw, project, null);
    if (type === 'crash_spike') {
      lines.push(`- ${item.recent} crashes in 60 minutes (hourly average before: ${item.baseline})`);
      continue;
    }
    const facts = [
      item.level,
      item.event_count !== undefined ? `${item.event_count} event${item.event_count === 1 ? '' : 's'}` : undefined,
      item.release && `release ${item.release}`,
    ]
      .filter(Boolean)
      .join(', ');
    lines.push(`- ${(item.title ?? item.fingerprint ?? '').slice(0, 150)}${facts ? ` (${facts})` : ''}`);
  }
  const more = digest.count - digest.items.length;
  if (more > 0) lines.push(`and ${more} more`);
  const url = alertLink(publicUrl, project, { type, triggered_at: 0 });
  if (url) lines.push(url);
  return lines.join('\n');
}

/** `sha256=<hex HMAC-SHA256 of body>` with Web Crypto. */
export async function signBody(secret: string, body: string): Promise<string> {
  const enc = new TextEncoder();
  const key = await crypto.subtle.importKey('raw', enc.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, [
    'sign',
  ]);
  const mac = new Uint8Array(await crypto.subtle.sign('HMAC', key, enc.encode(body)));
  return `sha256=${Array.from(mac, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

export interface SendResult {
  delivered: boolean;
  /** The channel's HTTP status, null when none came back. */
  status: number | null;
  error: string | null;
  /** Telegram's 429: wait this long before the next attempt. */
  retryAfterMs?: number;
}

export interface SendContext {
  runtime: AlertRuntime;
  publicUrl: string | null;
  webhookAllowPrivate: boolean;
  telegramBotToken: string | null;
  telegramApiUrl: string;
  /** The delivery's id, sent as X-Faultline-Delivery so receivers can drop repeats. */
  deliveryId?: number;
}

function failureText(err: unknown, timeoutMs: number): string {
  if (err instanceof ForbiddenAddressError) return err.message;
  const e = err as { name?: string; message?: string; code?: string; cause?: { code?: string; message?: string } };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError' || e?.code === 'ETIMEDOUT')
    return `no answer within ${timeoutMs / 1000} s`;
  const code = e?.code ?? e?.cause?.code;
  const message = e?.cause?.message ?? e?.message ?? String(err);
  return code && !message.includes(code) ? `${code}: ${message}` : message;
}

export async function sendWebhook(
  config: WebhookConfig,
  content: AlertContent,
  project: AlertProject,
  ctx: SendContext,
): Promise<SendResult> {
  const body = JSON.stringify(webhookPayload(content, project, ctx.publicUrl));
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
    'x-faultline-event': content.type,
  };
  if (ctx.deliveryId !== undefined) headers['x-faultline-delivery'] = String(ctx.deliveryId);
  if (config.secret) headers[SIGNATURE_HEADER.toLowerCase()] = await signBody(config.secret, body);
  try {
    const response = await ctx.runtime.post({
      url: config.url,
      headers,
      body,
      timeoutMs: WEBHOOK_TIMEOUT_MS,
      guardAddresses: !ctx.webhookAllowPrivate,
    });
    if (response.status >= 200 && response.status < 300)
      return { delivered: true, status: response.status, error: null };
    if (response.status >= 300 && response.status < 400)
      return {
        delivered: false,
        status: response.status,
        error: `HTTP ${response.status}: redirects are not followed`,
      };
    return { delivered: false, status: response.status, error: `HTTP ${response.status}` };
  } catch (err) {
    return { delivered: false, status: null, error: failureText(err, WEBHOOK_TIMEOUT_MS) };
  }
}

/** Longest wait a Telegram 429 may ask for before the next attempt. */
const MAX_RETRY_AFTER_MS = HOUR_MS;

export async function sendTelegram(
  config: TelegramConfig,
  content: AlertContent,
  project: AlertProject,
  ctx: SendContext,
): Promise<SendResult> {
  const token = ctx.telegramBotToken;
  if (!token) return { delivered: false, status: null, error: 'TELEGRAM_BOT_TOKEN is not set on the server' };
  const hide = (text: string) => text.split(token).join('<token>');
  const body = JSON.stringify({
    chat_id: config.chat_id,
    text: telegramText(content, project, ctx.publicUrl),
    disable_web_page_preview: true,
  });
  try {
    const response = await ctx.runtime.post({
      url: `${ctx.telegramApiUrl}/bot${token}/sendMessage`,
      headers: { 'content-type': 'application/json', 'user-agent': USER_AGENT },
      body,
      timeoutMs: TELEGRAM_TIMEOUT_MS,
      guardAddresses: false,
    });
    let answer: { ok?: boolean; description?: string; parameters?: { retry_after?: number } } = {};
    try {
      answer = JSON.parse(response.body);
    } catch {
      // not JSON: judged by the status alone
    }
    if (response.status >= 200 && response.status < 300 && answer.ok !== false)
      return { delivered: true, status: response.status, error: null };
    const description = typeof answer.description === 'string' ? `: ${hide(answer.description).slice(0, 300)}` : '';
    const result: SendResult = {
      delivered: false,
      status: response.status,
      error: `Telegram answered HTTP ${response.status}${description}`,
    };
    const retryAfter = Number(answer.parameters?.retry_after);
    if (response.status === 429 && Number.isFinite(retryAfter) && retryAfter > 0)
      result.retryAfterMs = Math.min(retryAfter * 1000, MAX_RETRY_AFTER_MS);
    return result;
  } catch (err) {
    return { delivered: false, status: null, error: hide(failureText(err, TELEGRAM_TIMEOUT_MS)) };
  }
}

const PROVIDER_MESSAGES = { slack: slackMessage, discord: discordMessage, teams: teamsMessage };
const PROVIDER_NAMES: Record<ProviderKind, string> = { slack: 'Slack', discord: 'Discord', teams: 'Teams' };

/**
 * Slack (Mattermost), Discord and Teams: one POST of the provider's message to its
 * incoming-webhook URL, with the webhook's address rules. The URL is the credential: no
 * error text names it.
 */
export async function sendProvider(
  kind: ProviderKind,
  config: ProviderConfig,
  content: AlertContent,
  project: AlertProject,
  ctx: SendContext,
): Promise<SendResult> {
  // Checked again here: an imported channel never went through creation's checks.
  if (!ctx.webhookAllowPrivate && !config.url.startsWith('https:')) {
    return {
      delivered: false,
      status: null,
      error: `${PROVIDER_NAMES[kind]} hooks must be https URLs (WEBHOOK_ALLOW_PRIVATE=true also allows http)`,
    };
  }
  const body = JSON.stringify(PROVIDER_MESSAGES[kind](content, project, ctx.publicUrl));
  const hide = (text: string) => text.split(config.url).join('<webhook url>');
  try {
    const response = await ctx.runtime.post({
      url: config.url,
      headers: { 'content-type': 'application/json', 'user-agent': USER_AGENT },
      body,
      timeoutMs: WEBHOOK_TIMEOUT_MS,
      guardAddresses: !ctx.webhookAllowPrivate,
    });
    if (response.status >= 200 && response.status < 300)
      return { delivered: true, status: response.status, error: null };
    const detail = response.body.trim().replace(/\s+/g, ' ').slice(0, 200);
    const result: SendResult = {
      delivered: false,
      status: response.status,
      error: hide(`${PROVIDER_NAMES[kind]} answered HTTP ${response.status}${detail ? `: ${detail}` : ''}`),
    };
    if (response.status >= 300 && response.status < 400)
      result.error = `HTTP ${response.status}: redirects are not followed`;
    // Discord's rate limit says in its body how many seconds to wait.
    if (response.status === 429) {
      let wait = Number.NaN;
      try {
        wait = Number((JSON.parse(response.body) as { retry_after?: unknown }).retry_after);
      } catch {
        // not JSON: the usual retry schedule
      }
      if (Number.isFinite(wait) && wait > 0) result.retryAfterMs = Math.min(Math.ceil(wait * 1000), MAX_RETRY_AFTER_MS);
    }
    return result;
  } catch (err) {
    return { delivered: false, status: null, error: hide(failureText(err, WEBHOOK_TIMEOUT_MS)) };
  }
}

/** Email: one message to the channel's recipients through the runtime's MailSender. */
export async function sendEmail(
  config: EmailConfig,
  content: AlertContent,
  project: AlertProject,
  ctx: SendContext,
): Promise<SendResult> {
  const mail = ctx.runtime.mail;
  if (!mail)
    return {
      delivered: false,
      status: null,
      error: ctx.runtime.mailUnavailable ?? 'email is not configured on the server (SMTP_URL, SMTP_FROM)',
    };
  try {
    const result = await mail.send({ to: config.to, ...emailMessage(content, project, ctx.publicUrl) });
    if (result.accepted.length > 0) return { delivered: true, status: null, error: null };
    return {
      delivered: false,
      status: null,
      error: `the mail server accepted no recipient: ${result.response}`.slice(0, 300),
    };
  } catch (err) {
    return { delivered: false, status: null, error: failureText(err, WEBHOOK_TIMEOUT_MS).slice(0, 300) };
  }
}

export interface StoredChannel {
  id: number;
  kind: string;
  config: string;
}

/** One attempt at one channel. */
export async function sendToChannel(
  channel: StoredChannel,
  content: AlertContent,
  project: AlertProject,
  ctx: SendContext,
): Promise<SendResult> {
  let config: unknown;
  try {
    config = JSON.parse(channel.config);
  } catch {
    return { delivered: false, status: null, error: 'the channel configuration is unreadable' };
  }
  if (channel.kind === 'webhook') return sendWebhook(config as WebhookConfig, content, project, ctx);
  if (channel.kind === 'telegram') return sendTelegram(config as TelegramConfig, content, project, ctx);
  if (channel.kind === 'email') return sendEmail(config as EmailConfig, content, project, ctx);
  if (isProviderKind(channel.kind)) return sendProvider(channel.kind, config as ProviderConfig, content, project, ctx);
  return { delivered: false, status: null, error: `unknown channel kind "${channel.kind}"` };
}
