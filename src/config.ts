// Settings from the environment (README lists them). Parsed once at start; a bad
// value stops the server with a message naming the setting.
import { type AddressRange, LOOPBACK_RANGES, parseAddressRanges } from './ip-ranges.js';

export interface Config {
  port: number;
  host: string;
  /** PUBLIC_URL without a trailing slash, or null to derive from each request's host. */
  publicUrl: string | null;
  apiKeys: string[];
  /** Requests per minute per API key and per DSN key; 0 disables. */
  rateLimit: number;
  retentionDays: number;
  corsOrigin: string;
  telegramBotToken: string | null;
  telegramApiUrl: string;
  webhookAllowPrivate: boolean;
  /** Email alerts: SMTP_URL and SMTP_FROM, or null when not set (docs/api.md "Email channels"). */
  smtp: SmtpConfig | null;
  databaseUrl: string | undefined;
  logLevel: string;
  /**
   * Peers whose X-Forwarded-Host, -Proto and -For are believed (TRUSTED_PROXIES; loopback
   * unless set). Anyone else's are ignored.
   */
  trustedProxies: AddressRange[];
  /**
   * MIN_FREE_DISK_MB: below this much free space on the SQLite database's file system,
   * ingest is refused (docs/privacy.md "Disk guard"); 0 turns the guard off.
   */
  minFreeDiskMb: number;
  /**
   * D1_MAX_SIZE_MB: the size the serverless edition's D1 database stops at (10 GB on the
   * paid plan, 500 MB free); /health and the dashboard warn from 80 % of it.
   */
  d1MaxSizeMb: number;
  /** METRICS_TOKEN: the Bearer token of `GET /metrics`; without it an API key is asked. */
  metricsToken: string | null;
  /** OIDC single sign-on (OIDC_*), or null when OIDC_ISSUER is not set. */
  oidc: OidcConfig | null;
}

export interface OidcConfig {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Email domains allowed to sign in (lower case); required. */
  allowedDomains: string[];
  /** The role a first SSO sign-in gets. */
  defaultRole: 'viewer' | 'member' | 'admin';
  /** Values of the ID token's `groups` claim that make the user an admin. */
  adminGroups: string[];
}

export interface SmtpConfig {
  /** `smtp://` (STARTTLS when offered) or `smtps://`, with user:password@ when the server wants them. */
  url: string;
  from: string;
}

export class ConfigError extends Error {}

/** SMTP_URL and SMTP_FROM: both or neither. The URL's password never appears in a message. */
function smtpConfig(env: Record<string, string | undefined>): SmtpConfig | null {
  const raw = (env.SMTP_URL ?? '').trim();
  const from = (env.SMTP_FROM ?? '').trim();
  if (raw === '') {
    if (from !== '') throw new ConfigError('SMTP_FROM is set but SMTP_URL is not: set both to send email alerts');
    return null;
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError('SMTP_URL must look like smtp://user:password@host:587 or smtps://user:password@host:465');
  }
  if ((url.protocol !== 'smtp:' && url.protocol !== 'smtps:') || url.hostname === '') {
    throw new ConfigError(
      `SMTP_URL must start with smtp:// or smtps:// and name a host (got the scheme "${url.protocol.replace(/:$/, '')}")`,
    );
  }
  if (from === '')
    throw new ConfigError(
      'SMTP_URL is set but SMTP_FROM is not: set the sender address, e.g. SMTP_FROM="Faultline <alerts@example.com>"',
    );
  if (/[\r\n]/.test(from) || !from.includes('@'))
    throw new ConfigError(`SMTP_FROM must be one email address, optionally with a name (got ${JSON.stringify(from)})`);
  return { url: raw, from };
}

const list = (raw: string | undefined) =>
  (raw ?? '')
    .split(',')
    .map((v) => v.trim())
    .filter((v) => v !== '');

/** The OIDC_* settings: all or nothing, each checked (README "Single sign-on"). */
function loadOidc(env: Record<string, string | undefined>): OidcConfig | null {
  const issuer = (env.OIDC_ISSUER ?? '').trim();
  if (issuer === '') return null;
  try {
    const u = new URL(issuer);
    if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new Error('not http(s)');
  } catch {
    throw new ConfigError(`OIDC_ISSUER must be the provider's https URL (got ${JSON.stringify(issuer)})`);
  }
  const clientId = (env.OIDC_CLIENT_ID ?? '').trim();
  const clientSecret = (env.OIDC_CLIENT_SECRET ?? '').trim();
  if (clientId === '' || clientSecret === '')
    throw new ConfigError('OIDC_CLIENT_ID and OIDC_CLIENT_SECRET must be set with OIDC_ISSUER');
  const allowedDomains = list(env.OIDC_ALLOWED_DOMAINS).map((d) => d.toLowerCase().replace(/^@/, ''));
  if (allowedDomains.length === 0)
    throw new ConfigError(
      'OIDC_ALLOWED_DOMAINS must list the email domains allowed to sign in with SSO (e.g. example.com)',
    );
  const role = (env.OIDC_DEFAULT_ROLE ?? '').trim() || 'viewer';
  if (role !== 'viewer' && role !== 'member' && role !== 'admin')
    throw new ConfigError(`OIDC_DEFAULT_ROLE must be viewer, member or admin (got ${JSON.stringify(role)})`);
  return {
    issuer,
    clientId,
    clientSecret,
    allowedDomains,
    defaultRole: role,
    adminGroups: list(env.OIDC_ADMIN_GROUPS),
  };
}

function integer(
  env: Record<string, string | undefined>,
  name: string,
  fallback: number,
  min: number,
  max: number,
): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new ConfigError(`${name} must be an integer between ${min} and ${max} (got ${JSON.stringify(raw)})`);
  }
  return n;
}

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const publicUrlRaw = (env.PUBLIC_URL ?? '').trim();
  let publicUrl: string | null = null;
  if (publicUrlRaw !== '') {
    let parsed: URL;
    try {
      parsed = new URL(publicUrlRaw);
    } catch {
      throw new ConfigError(`PUBLIC_URL must be an absolute http(s) URL (got ${JSON.stringify(publicUrlRaw)})`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      throw new ConfigError(`PUBLIC_URL must use http or https (got ${JSON.stringify(publicUrlRaw)})`);
    }
    publicUrl = publicUrlRaw.replace(/\/+$/, '');
  }
  const logLevel = (env.LOG_LEVEL ?? 'info').trim() || 'info';
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(logLevel)) {
    throw new ConfigError(
      `LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent (got ${JSON.stringify(logLevel)})`,
    );
  }
  const apiKeys = (env.API_KEYS ?? '')
    .split(',')
    .map((k) => k.trim())
    .filter((k) => k !== '');
  if (apiKeys.some((k) => /\s/.test(k))) {
    throw new ConfigError('API_KEYS must be a comma-separated list of keys without spaces inside a key');
  }
  let trustedProxies: AddressRange[];
  try {
    trustedProxies = parseAddressRanges((env.TRUSTED_PROXIES ?? '').trim() || LOOPBACK_RANGES);
  } catch (err) {
    throw new ConfigError(
      `TRUSTED_PROXIES must be a comma-separated list of IP addresses or CIDR ranges, "loopback" or "none": ${(err as Error).message}`,
    );
  }
  return {
    port: integer(env, 'PORT', 8080, 0, 65535),
    host: (env.HOST ?? '0.0.0.0').trim() || '0.0.0.0',
    publicUrl,
    apiKeys,
    rateLimit: integer(env, 'RATE_LIMIT', 600, 0, 1_000_000_000),
    retentionDays: integer(env, 'RETENTION_DAYS', 30, 1, 36_500),
    corsOrigin: (env.CORS_ORIGIN ?? '*').trim() || '*',
    telegramBotToken: (env.TELEGRAM_BOT_TOKEN ?? '').trim() || null,
    telegramApiUrl: ((env.TELEGRAM_API_URL ?? '').trim() || 'https://api.telegram.org').replace(/\/+$/, ''),
    webhookAllowPrivate: (env.WEBHOOK_ALLOW_PRIVATE ?? '').trim().toLowerCase() === 'true',
    smtp: smtpConfig(env),
    databaseUrl: env.DATABASE_URL,
    logLevel,
    trustedProxies,
    minFreeDiskMb: integer(env, 'MIN_FREE_DISK_MB', 0, 0, 1_000_000_000),
    d1MaxSizeMb: integer(env, 'D1_MAX_SIZE_MB', 10_240, 1, 1_000_000_000),
    metricsToken: (env.METRICS_TOKEN ?? '').trim() || null,
    oidc: loadOidc(env),
  };
}

/** Whether `host` accepts connections from this machine only (127.0.0.0/8, ::1, localhost). */
export function isLoopbackHost(host: string): boolean {
  const h = host
    .trim()
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1');
  if (h === 'localhost' || h === '::1' || h === '0:0:0:0:0:0:0:1') return true;
  const v4 = h.startsWith('::ffff:') ? h.slice('::ffff:'.length) : h;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(v4);
}

/**
 * The warning `serve` logs when anyone who reaches its address can use the management
 * API and the dashboard: a non-loopback address and no API_KEYS. Null otherwise.
 */
export function openAccessWarning(config: Pick<Config, 'host' | 'apiKeys'>): string | null {
  if (config.apiKeys.length > 0 || isLoopbackHost(config.host)) return null;
  return (
    `listening on ${config.host} with no API_KEYS: anyone who can reach this address can read every event, ` +
    'create and delete projects and use the dashboard; set API_KEYS, or HOST=127.0.0.1 behind a proxy that checks access'
  );
}
