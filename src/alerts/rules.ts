// Alert types, rule defaults and the validation of what the alerts API accepts
// (docs/api.md "Alerts"). Pure: the routes in src/http/alerts.ts call these and map
// AlertInputError to 400, AlertNotFoundError to 404.
import { z } from 'zod';
import { MAX_COOLDOWN_MINUTES, MAX_SECRET_LENGTH, MAX_WEBHOOK_URL_LENGTH } from '../limits.js';

export const ALERT_TYPES = ['new_issue', 'regression', 'crash_spike', 'monitor'] as const;
export type AlertType = (typeof ALERT_TYPES)[number];
export type IssueAlertType = Exclude<AlertType, 'crash_spike' | 'monitor'>;

export const RULE_DEFAULTS = { enabled: true, cooldown_minutes: 60 };

export class AlertInputError extends Error {}
export class AlertNotFoundError extends Error {}

export function isAlertType(value: string): value is AlertType {
  return (ALERT_TYPES as readonly string[]).includes(value);
}

/** Event levels, lowest first: a rule's `min_level` lets through that level and those after it. */
export const ALERT_LEVELS = ['debug', 'info', 'warning', 'error', 'fatal'] as const;
export type AlertLevel = (typeof ALERT_LEVELS)[number];

/** At most this many environments in one rule, each at most MAX_ENVIRONMENT_LENGTH characters. */
export const MAX_RULE_ENVIRONMENTS = 50;
export const MAX_ENVIRONMENT_LENGTH = 64;
export const MAX_RULE_CHANNELS = 50;

/**
 * What a rule lets through (docs/api.md "Alerts"): events of these environments (empty:
 * all), at or above this level (null: all), sent to these channels (empty: all).
 */
export interface RuleFilters {
  environments: string[];
  min_level: AlertLevel | null;
  channels: number[];
}

export const NO_FILTERS: RuleFilters = { environments: [], min_level: null, channels: [] };

export interface RulePatch extends Partial<RuleFilters> {
  enabled?: boolean;
  cooldown_minutes?: number;
}

/** What an alert tells a rule about its cause (the outbox payload's fields). */
export interface AlertCause {
  environment?: string;
  level?: string;
}

/**
 * Whether a rule's filters let an alert through. An alert that says nothing about an
 * environment or level (a crash spike) is not held back by that filter.
 */
export function ruleLetsThrough(filters: RuleFilters, cause: AlertCause): boolean {
  if (
    filters.environments.length > 0 &&
    cause.environment !== undefined &&
    !filters.environments.includes(cause.environment)
  )
    return false;
  if (filters.min_level !== null && cause.level !== undefined) {
    const at = ALERT_LEVELS.indexOf(cause.level as AlertLevel);
    if (at < ALERT_LEVELS.indexOf(filters.min_level)) return false;
  }
  return true;
}

/** The channels a rule sends to, of the project's `channelIds` (in their order). */
export function ruleChannels(filters: RuleFilters, channelIds: number[]): number[] {
  return filters.channels.length === 0 ? channelIds : channelIds.filter((id) => filters.channels.includes(id));
}

/** The filters as stored (alert_rules columns), read back leniently: anything unreadable is "all". */
export function storedRuleFilters(row: {
  environments?: string | null;
  min_level?: string | null;
  channels?: string | null;
}): RuleFilters {
  const list = (text: string | null | undefined): unknown[] => {
    try {
      const v = text ? JSON.parse(text) : [];
      return Array.isArray(v) ? v : [];
    } catch {
      return [];
    }
  };
  return {
    environments: list(row.environments).filter((e): e is string => typeof e === 'string'),
    min_level: (ALERT_LEVELS as readonly string[]).includes(row.min_level ?? '') ? (row.min_level as AlertLevel) : null,
    channels: list(row.channels).filter((c): c is number => Number.isSafeInteger(c)),
  };
}

const COOLDOWN_MESSAGE = `cooldown_minutes must be an integer between 0 and ${MAX_COOLDOWN_MINUTES}`;
const ENVIRONMENTS_MESSAGE = `environments must be a list of at most ${MAX_RULE_ENVIRONMENTS} environment names of 1 to ${MAX_ENVIRONMENT_LENGTH} characters (empty: all)`;
const LEVEL_MESSAGE = `min_level must be one of ${ALERT_LEVELS.join(', ')}, or null for all levels`;
const CHANNELS_MESSAGE = `channels must be a list of at most ${MAX_RULE_CHANNELS} channel ids of this project (empty: all channels)`;
const RULE_FIELDS = ['enabled', 'cooldown_minutes', 'environments', 'min_level', 'channels'];

const rulePatchSchema = z.strictObject(
  {
    enabled: z.boolean({ error: 'enabled must be true or false' }).optional(),
    cooldown_minutes: z
      .int({ error: COOLDOWN_MESSAGE })
      .min(0, { error: COOLDOWN_MESSAGE })
      .max(MAX_COOLDOWN_MINUTES, { error: COOLDOWN_MESSAGE })
      .optional(),
    environments: z
      .array(
        z
          .string({ error: ENVIRONMENTS_MESSAGE })
          .min(1, { error: ENVIRONMENTS_MESSAGE })
          .max(MAX_ENVIRONMENT_LENGTH, { error: ENVIRONMENTS_MESSAGE }),
        { error: ENVIRONMENTS_MESSAGE },
      )
      .max(MAX_RULE_ENVIRONMENTS, { error: ENVIRONMENTS_MESSAGE })
      .optional(),
    min_level: z.enum(ALERT_LEVELS, { error: LEVEL_MESSAGE }).nullable().optional(),
    channels: z
      .array(
        z
          .int({ error: CHANNELS_MESSAGE })
          .positive({ error: CHANNELS_MESSAGE })
          .max(Number.MAX_SAFE_INTEGER, { error: CHANNELS_MESSAGE }),
        { error: CHANNELS_MESSAGE },
      )
      .max(MAX_RULE_CHANNELS, { error: CHANNELS_MESSAGE })
      .optional(),
  },
  { error: unknownFields(RULE_FIELDS) },
);

function unknownFields(allowed: string[]) {
  return (issue: { code?: string; keys?: string[] }) =>
    issue.code === 'unrecognized_keys'
      ? `unknown field${issue.keys!.length > 1 ? 's' : ''} ${issue.keys!.map((k) => `"${k}"`).join(', ')}; allowed fields are ${allowed.join(', ')}`
      : undefined;
}

function firstMessage(error: z.ZodError): string {
  return [...new Set(error.issues.map((i) => i.message))].join('; ');
}

/** A PATCH body: at least one field, each valid (channel ids are checked against the project by the store). */
export function parseRulePatch(body: unknown): RulePatch {
  const result = rulePatchSchema.safeParse(body);
  if (!result.success) throw new AlertInputError(firstMessage(result.error));
  if (Object.values(result.data).every((v) => v === undefined)) {
    throw new AlertInputError(`send at least one of ${RULE_FIELDS.join(', ')}`);
  }
  const patch: RulePatch = { ...result.data };
  if (patch.environments) patch.environments = [...new Set(patch.environments)];
  if (patch.channels) patch.channels = [...new Set(patch.channels)];
  return patch;
}

export interface WebhookConfig {
  url: string;
  secret?: string;
}
export interface TelegramConfig {
  chat_id: number | string;
}
/** Slack (and Mattermost), Discord and Teams: the provider's incoming-webhook URL. */
export interface ProviderConfig {
  url: string;
}
export interface EmailConfig {
  to: string[];
}
export const PROVIDER_KINDS = ['slack', 'discord', 'teams'] as const;
export type ProviderKind = (typeof PROVIDER_KINDS)[number];
export const CHANNEL_KINDS = ['webhook', 'telegram', 'email', ...PROVIDER_KINDS] as const;
export type ChannelKind = (typeof CHANNEL_KINDS)[number];
export const MAX_EMAIL_RECIPIENTS = 20;

export type ChannelInput =
  | { kind: 'webhook'; config: WebhookConfig }
  | { kind: 'telegram'; config: TelegramConfig }
  | { kind: 'email'; config: EmailConfig }
  | { kind: ProviderKind; config: ProviderConfig };

export function isProviderKind(kind: string): kind is ProviderKind {
  return (PROVIDER_KINDS as readonly string[]).includes(kind);
}

const URL_MESSAGE = `config.url must be an absolute http or https URL of at most ${MAX_WEBHOOK_URL_LENGTH} characters`;
const EMAIL_MESSAGE = `config.to must be a list of 1 to ${MAX_EMAIL_RECIPIENTS} email addresses`;
const CHAT_MESSAGE = 'config.chat_id must be an integer chat id or an "@channelname" string';

const webhookSchema = z.strictObject(
  {
    url: z
      .string({ error: URL_MESSAGE })
      .min(1, { error: URL_MESSAGE })
      .max(MAX_WEBHOOK_URL_LENGTH, { error: URL_MESSAGE }),
    secret: z
      .string({ error: `config.secret must be a string of 1 to ${MAX_SECRET_LENGTH} characters` })
      .min(1, { error: `config.secret must be a string of 1 to ${MAX_SECRET_LENGTH} characters` })
      .max(MAX_SECRET_LENGTH, { error: `config.secret must be a string of 1 to ${MAX_SECRET_LENGTH} characters` })
      .optional(),
  },
  { error: unknownFields(['url', 'secret']) },
);

const telegramSchema = z.strictObject(
  {
    chat_id: z.union(
      [
        z.int({ error: CHAT_MESSAGE }).refine((n) => Number.isSafeInteger(n) && n !== 0, { error: CHAT_MESSAGE }),
        z.string({ error: CHAT_MESSAGE }).regex(/^@[A-Za-z][A-Za-z0-9_]{3,63}$/, { error: CHAT_MESSAGE }),
      ],
      { error: CHAT_MESSAGE },
    ),
  },
  { error: unknownFields(['chat_id']) },
);

const emailSchema = z.strictObject(
  {
    to: z
      .array(z.string({ error: EMAIL_MESSAGE }), { error: EMAIL_MESSAGE })
      .min(1, { error: EMAIL_MESSAGE })
      .max(MAX_EMAIL_RECIPIENTS, { error: EMAIL_MESSAGE }),
  },
  { error: unknownFields(['to']) },
);

/** One address as a mail server takes it in RCPT TO: no display name, no line breaks (zod's email rule). */
const addressSchema = z.email();

const providerSchema = z.strictObject(
  {
    url: z
      .string({ error: URL_MESSAGE })
      .min(1, { error: URL_MESSAGE })
      .max(MAX_WEBHOOK_URL_LENGTH, { error: URL_MESSAGE }),
  },
  { error: unknownFields(['url']) },
);

/** The URL of a webhook, parsed: absolute http(s), no NUL, at most 2 048 characters. */
export function parseWebhookUrl(raw: string): URL {
  if (raw.length > MAX_WEBHOOK_URL_LENGTH || raw.includes('\0')) throw new AlertInputError(URL_MESSAGE);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new AlertInputError(URL_MESSAGE);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new AlertInputError(`${URL_MESSAGE} (got the scheme "${url.protocol.replace(/:$/, '')}")`);
  if (url.hostname === '') throw new AlertInputError(URL_MESSAGE);
  return url;
}

/**
 * A POST alerts/channels body: kind and config checked, nothing else accepted. The
 * address check of a webhook's host is separate (src/alerts/addresses.ts), since it may
 * need DNS.
 */
export function parseChannelInput(body: unknown): ChannelInput {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw new AlertInputError('request body must be a JSON object');
  const { kind, config, ...rest } = body as Record<string, unknown>;
  const extra = Object.keys(rest);
  if (extra.length > 0)
    throw new AlertInputError(
      `unknown field${extra.length > 1 ? 's' : ''} ${extra.map((k) => `"${k}"`).join(', ')}; allowed fields are kind, config`,
    );
  if (typeof kind !== 'string' || !(CHANNEL_KINDS as readonly string[]).includes(kind)) {
    throw new AlertInputError(`kind must be one of ${CHANNEL_KINDS.map((k) => `"${k}"`).join(', ')}`);
  }
  if (config === null || typeof config !== 'object' || Array.isArray(config)) {
    throw new AlertInputError(
      'config must be an object: {url} for webhook, slack, discord and teams, {chat_id} for telegram, {to} for email',
    );
  }
  if (kind === 'email') {
    const result = emailSchema.safeParse(config);
    if (!result.success) throw new AlertInputError(firstMessage(result.error));
    const seen = new Set<string>();
    const to: string[] = [];
    for (const raw of result.data.to) {
      const address = raw.trim();
      if (!addressSchema.safeParse(address).success)
        throw new AlertInputError(`config.to: ${JSON.stringify(raw.slice(0, 100))} is not an email address`);
      if (seen.has(address.toLowerCase())) continue;
      seen.add(address.toLowerCase());
      to.push(address);
    }
    return { kind, config: { to } };
  }
  if (isProviderKind(kind)) {
    const result = providerSchema.safeParse(config);
    if (!result.success) throw new AlertInputError(firstMessage(result.error));
    return { kind, config: { url: parseWebhookUrl(result.data.url).href } };
  }
  if (kind === 'webhook') {
    const result = webhookSchema.safeParse(config);
    if (!result.success) throw new AlertInputError(firstMessage(result.error));
    if (result.data.secret?.includes('\0')) throw new AlertInputError('config.secret must not contain NUL characters');
    const url = parseWebhookUrl(result.data.url);
    return {
      kind,
      config: { url: url.href, ...(result.data.secret !== undefined ? { secret: result.data.secret } : {}) },
    };
  }
  const result = telegramSchema.safeParse(config);
  if (!result.success) throw new AlertInputError(firstMessage(result.error));
  return { kind: 'telegram', config: { chat_id: result.data.chat_id } };
}
