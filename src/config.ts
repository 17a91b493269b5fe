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
  /** METRICS_TOKEN: the Bearer token of `GET /metrics`; without it an API key is asked. */
  metricsToken: string | null;
}

export class ConfigError extends Error {}

function integer(env: Record<string, string | undefined>, name: string, fallback: number, min: number, max: number): number {
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
    throw new ConfigError(`LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent (got ${JSON.stringify(logLevel)})`);
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
    throw new ConfigError(`TRUSTED_PROXIES must be a comma-separated list of IP addresses or CIDR ranges, "loopback" or "none": ${(err as Error).message}`);
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
    databaseUrl: env.DATABASE_URL,
    logLevel,
    trustedProxies,
    minFreeDiskMb: integer(env, 'MIN_FREE_DISK_MB', 0, 0, 1_000_000_000),
    metricsToken: (env.METRICS_TOKEN ?? '').trim() || null,
  };
}

/** Whether `host` accepts connections from this machine only (127.0.0.0/8, ::1, localhost). */
export function isLoopbackHost(host: string): boolean {
  const h = host.trim().toLowerCase().replace(/^\[(.*)\]$/, '$1');
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
