// Settings from the environment: defaults, parsing, and a clear message naming
// the setting for every bad value. Also how DATABASE_URL picks the database.
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';
import { parseAddressRanges } from '../src/ip-ranges.js';
import { DEFAULT_SQLITE_PATH, DatabaseConfigError, parseDatabaseUrl, redact } from '../src/store/database.js';

describe('loadConfig', () => {
  it('has the documented defaults', () => {
    expect(loadConfig({})).toEqual({
      port: 8080,
      host: '0.0.0.0',
      publicUrl: null,
      apiKeys: [],
      rateLimit: 600,
      retentionDays: 30,
      corsOrigin: '*',
      telegramBotToken: null,
      telegramApiUrl: 'https://api.telegram.org',
      webhookAllowPrivate: false,
      smtp: null,
      databaseUrl: undefined,
      logLevel: 'info',
      trustedProxies: parseAddressRanges('127.0.0.0/8,::1'),
      oidc: null,
      minFreeDiskMb: 0,
      d1MaxSizeMb: 10_240,
      metricsToken: null,
    });
  });

  it('reads every setting', () => {
    const c = loadConfig({
      PORT: '9000',
      HOST: '127.0.0.1',
      PUBLIC_URL: 'https://errors.example.com/faultline/',
      API_KEYS: 'a, b ,,c',
      RATE_LIMIT: '0',
      RETENTION_DAYS: '90',
      CORS_ORIGIN: 'https://app.example.com',
      TELEGRAM_BOT_TOKEN: '123:abc',
      TELEGRAM_API_URL: 'http://127.0.0.1:9999/',
      WEBHOOK_ALLOW_PRIVATE: 'TRUE',
      SMTP_URL: 'smtps://alerts%40example.com:p%40ss@mail.example.com:465',
      SMTP_FROM: 'Faultline <alerts@example.com>',
      DATABASE_URL: 'postgres://u@h/db',
      LOG_LEVEL: 'warn',
      TRUSTED_PROXIES: '10.0.0.0/8, 2001:db8::1',
      OIDC_ISSUER: 'https://accounts.google.com',
      OIDC_CLIENT_ID: 'client',
      OIDC_CLIENT_SECRET: 'secret',
      OIDC_ALLOWED_DOMAINS: 'Example.com, @example.org',
      OIDC_DEFAULT_ROLE: 'member',
      OIDC_ADMIN_GROUPS: 'ops, leads',
      MIN_FREE_DISK_MB: '512',
      D1_MAX_SIZE_MB: '500',
      METRICS_TOKEN: 'metrics-secret',
    });
    expect(c).toEqual({
      port: 9000,
      host: '127.0.0.1',
      publicUrl: 'https://errors.example.com/faultline',
      apiKeys: ['a', 'b', 'c'],
      rateLimit: 0,
      retentionDays: 90,
      corsOrigin: 'https://app.example.com',
      telegramBotToken: '123:abc',
      telegramApiUrl: 'http://127.0.0.1:9999',
      webhookAllowPrivate: true,
      smtp: { url: 'smtps://alerts%40example.com:p%40ss@mail.example.com:465', from: 'Faultline <alerts@example.com>' },
      databaseUrl: 'postgres://u@h/db',
      logLevel: 'warn',
      trustedProxies: parseAddressRanges('10.0.0.0/8,2001:db8::1'),
      oidc: {
        issuer: 'https://accounts.google.com',
        clientId: 'client',
        clientSecret: 'secret',
        allowedDomains: ['example.com', 'example.org'],
        defaultRole: 'member',
        adminGroups: ['ops', 'leads'],
      },
      minFreeDiskMb: 512,
      d1MaxSizeMb: 500,
      metricsToken: 'metrics-secret',
    });
  });

  it.each([
    [{ PORT: 'http' }, 'PORT must be an integer between 0 and 65535 (got "http")'],
    [{ PORT: '70000' }, 'PORT must be an integer between 0 and 65535'],
    [{ PORT: '80.5' }, 'PORT must be an integer'],
    [{ RATE_LIMIT: '-1' }, 'RATE_LIMIT must be an integer between 0 and'],
    [{ RETENTION_DAYS: '0' }, 'RETENTION_DAYS must be an integer between 1 and 36500'],
    [{ PUBLIC_URL: 'errors.example.com' }, 'PUBLIC_URL must be an absolute http(s) URL'],
    [{ PUBLIC_URL: 'ftp://errors.example.com' }, 'PUBLIC_URL must use http or https'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent'],
    [{ API_KEYS: 'good,has space' }, 'API_KEYS must be a comma-separated list of keys without spaces inside a key'],
    [{ OIDC_ISSUER: 'https://id.example.com' }, 'OIDC_CLIENT_ID and OIDC_CLIENT_SECRET must be set'],
    [
      { OIDC_ISSUER: 'https://id.example.com', OIDC_CLIENT_ID: 'a', OIDC_CLIENT_SECRET: 'b' },
      'OIDC_ALLOWED_DOMAINS must list the email domains',
    ],
    [{ OIDC_ISSUER: 'id.example.com' }, 'OIDC_ISSUER must be the provider'],
    [
      {
        OIDC_ISSUER: 'https://id.example.com',
        OIDC_CLIENT_ID: 'a',
        OIDC_CLIENT_SECRET: 'b',
        OIDC_ALLOWED_DOMAINS: 'x.com',
        OIDC_DEFAULT_ROLE: 'root',
      },
      'OIDC_DEFAULT_ROLE must be viewer, member or admin',
    ],
    [
      { TRUSTED_PROXIES: '10.0.0.0/8,proxy' },
      'TRUSTED_PROXIES must be a comma-separated list of IP addresses or CIDR ranges, "loopback" or "none": "proxy" is not',
    ],
    [
      { SMTP_URL: 'https://u:hunter2@mail.example.com' },
      'SMTP_URL must start with smtp:// or smtps:// and name a host (got the scheme "https")',
    ],
    [{ SMTP_URL: 'mail.example.com:587', SMTP_FROM: 'a@example.com' }, 'SMTP_URL must start with smtp:// or smtps://'],
    [{ SMTP_URL: 'smtp://u:hunter2@mail.example.com:587' }, 'SMTP_URL is set but SMTP_FROM is not'],
    [{ SMTP_FROM: 'a@example.com' }, 'SMTP_FROM is set but SMTP_URL is not'],
    [{ SMTP_URL: 'smtp://mail.example.com', SMTP_FROM: 'nobody' }, 'SMTP_FROM must be one email address'],
  ])('refuses %j', (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
    // The SMTP password never appears in the message.
    expect(() => loadConfig(env)).not.toThrow('hunter2');
  });
});

describe('DATABASE_URL', () => {
  it.each([
    [undefined, { dialect: 'sqlite', path: DEFAULT_SQLITE_PATH }],
    ['', { dialect: 'sqlite', path: './data/faultline.db' }],
    ['sqlite:/var/lib/faultline/f.db', { dialect: 'sqlite', path: '/var/lib/faultline/f.db' }],
    ['sqlite:./rel.db', { dialect: 'sqlite', path: './rel.db' }],
    ['file:/tmp/x.db', { dialect: 'sqlite', path: '/tmp/x.db' }],
    ['file:///tmp/x.db', { dialect: 'sqlite', path: '/tmp/x.db' }],
    ['postgres://u:p@h:5432/db', { dialect: 'postgres', url: 'postgres://u:p@h:5432/db' }],
    ['postgresql://u@h/db', { dialect: 'postgres', url: 'postgresql://u@h/db' }],
  ])('%s', (url, target) => {
    expect(parseDatabaseUrl(url)).toEqual(target);
  });

  it('refuses other schemes and an empty sqlite path', () => {
    expect(() => parseDatabaseUrl('mysql://u:secret@h/db')).toThrow(DatabaseConfigError);
    expect(() => parseDatabaseUrl('mysql://u:secret@h/db')).toThrow('use sqlite:<path>, file:<path> or postgres://');
    expect(() => parseDatabaseUrl('mysql://u:secret@h/db')).not.toThrow('secret');
    expect(() => parseDatabaseUrl('sqlite:')).toThrow('sqlite: needs a file path');
  });

  it('hides the password in descriptions', () => {
    expect(redact('postgres://user:s3cret@db.example:5432/faultline')).toBe(
      'postgres://user:***@db.example:5432/faultline',
    );
  });
});
