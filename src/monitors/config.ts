// What a check-in and its `monitor_config` may say (docs/api.md "Cron monitors"), as
// SDKs, sentry-cli and the legacy cron route send them: parsed and checked here, pure,
// so envelope items and the legacy route give the same answers. A malformed
// `monitor_config` (a bad crontab, an unknown time zone, a negative margin) is a
// MonitorConfigError, which the callers turn into a 400; a check-in that is not usable
// at all (no slug, an unknown status) is an InvalidCheckInError, skipped like any bad
// envelope item.
import { z } from 'zod';
import { MAX_MONITOR_MINUTES, MAX_MONITOR_SCHEDULE, MAX_MONITOR_SLUG, MAX_MONITOR_THRESHOLD } from '../limits.js';
import { checkCrontab, checkTimezone, INTERVAL_UNITS, type Schedule } from './schedule.js';

export class MonitorConfigError extends Error {}
export class InvalidCheckInError extends Error {}

/** What a client may report; `missed` and `timeout` are only ever recorded by the check. */
export const CLIENT_STATUSES = ['ok', 'error', 'in_progress'] as const;
export type ClientStatus = (typeof CLIENT_STATUSES)[number];
/** Every status a stored check-in may have. */
export const CHECKIN_STATUSES = ['ok', 'error', 'in_progress', 'missed', 'timeout'] as const;

/** Sentry's defaults for the fields a config leaves out. */
export const CONFIG_DEFAULTS = {
  checkin_margin: 1,
  max_runtime: 30,
  timezone: 'UTC',
  failure_issue_threshold: 1,
  recovery_threshold: 1,
};

export interface MonitorConfig {
  schedule: Schedule;
  checkin_margin: number;
  max_runtime: number;
  failure_issue_threshold: number;
  recovery_threshold: number;
}

export interface CheckInInput {
  slug: string;
  /** 32 lowercase hex digits; null for none (the nil UUID: "the latest in-progress one"). */
  checkInId: string | null;
  status: ClientStatus;
  /** Seconds, as sent. */
  duration: number | null;
  environment: string | null;
  release: string | null;
  config: MonitorConfig | null;
}

const minutes = (name: string) =>
  z
    .number({ error: `${name} must be a whole number of minutes` })
    .int(`${name} must be a whole number of minutes`)
    .min(1, `${name} must be between 1 and ${MAX_MONITOR_MINUTES} minutes`)
    .max(MAX_MONITOR_MINUTES, `${name} must be between 1 and ${MAX_MONITOR_MINUTES} minutes`)
    .nullish();
const threshold = (name: string) =>
  z
    .number({ error: `${name} must be a whole number` })
    .int(`${name} must be a whole number`)
    .min(1, `${name} must be between 1 and ${MAX_MONITOR_THRESHOLD}`)
    .max(MAX_MONITOR_THRESHOLD, `${name} must be between 1 and ${MAX_MONITOR_THRESHOLD}`)
    .nullish();

const scheduleSchema = z.discriminatedUnion(
  'type',
  [
    z.object({
      type: z.literal('crontab'),
      value: z
        .string({ error: 'schedule.value must be a crontab string' })
        .max(MAX_MONITOR_SCHEDULE, 'schedule.value is too long'),
    }),
    z.object({
      type: z.literal('interval'),
      value: z
        .number({ error: 'schedule.value must be a positive whole number' })
        .int('schedule.value must be a positive whole number')
        .min(1, 'schedule.value must be a positive whole number')
        .max(1_000_000),
      unit: z.enum(INTERVAL_UNITS, { error: `schedule.unit must be one of ${INTERVAL_UNITS.join(', ')}` }),
    }),
  ],
  { error: 'schedule must be {type: "crontab", value} or {type: "interval", value, unit}' },
);

const configSchema = z.object({
  schedule: scheduleSchema,
  checkin_margin: minutes('checkin_margin'),
  max_runtime: minutes('max_runtime'),
  timezone: z.string({ error: 'timezone must be a time zone name' }).max(MAX_MONITOR_SCHEDULE).nullish(),
  failure_issue_threshold: threshold('failure_issue_threshold'),
  recovery_threshold: threshold('recovery_threshold'),
});

function firstIssue(err: z.ZodError): string {
  const issue = err.issues[0];
  const where = issue.path.join('.');
  // Messages written above already name their field.
  return issue.message.startsWith(String(issue.path[issue.path.length - 1] ?? '')) || where === ''
    ? issue.message
    : `${where}: ${issue.message}`;
}

/** A `monitor_config` object → the monitor's settings, defaults filled in; MonitorConfigError when malformed. */
export function parseMonitorConfig(raw: unknown): MonitorConfig {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    throw new MonitorConfigError('monitor_config must be an object');
  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) throw new MonitorConfigError(`monitor_config: ${firstIssue(parsed.error)}`);
  const c = parsed.data;
  const timezone = c.timezone ?? CONFIG_DEFAULTS.timezone;
  const tzProblem = checkTimezone(timezone);
  if (tzProblem) throw new MonitorConfigError(`monitor_config: timezone: ${tzProblem}`);
  let schedule: Schedule;
  if (c.schedule.type === 'crontab') {
    const value = c.schedule.value.trim().replace(/\s+/g, ' ');
    const problem = checkCrontab(value, timezone);
    if (problem) throw new MonitorConfigError(`monitor_config: schedule.value: ${problem}`);
    schedule = { type: 'crontab', value, unit: null, timezone };
  } else {
    schedule = { type: 'interval', value: String(c.schedule.value), unit: c.schedule.unit, timezone };
  }
  return {
    schedule,
    checkin_margin: c.checkin_margin ?? CONFIG_DEFAULTS.checkin_margin,
    max_runtime: c.max_runtime ?? CONFIG_DEFAULTS.max_runtime,
    failure_issue_threshold: c.failure_issue_threshold ?? CONFIG_DEFAULTS.failure_issue_threshold,
    recovery_threshold: c.recovery_threshold ?? CONFIG_DEFAULTS.recovery_threshold,
  };
}

/** Sentry's slug rule for `monitor_slug`: lowercase letters, digits, `-` and `_`, at most 50 characters. */
export function slugifyMonitor(raw: string): string {
  return raw
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, MAX_MONITOR_SLUG)
    .replace(/-+$/, '');
}

const HEX32 = /^[0-9a-f]{32}$/;
const NIL = '0'.repeat(32);

function checkInIdOf(v: unknown): string | null {
  if (v === undefined || v === null || v === '') return null;
  if (typeof v !== 'string') throw new InvalidCheckInError('check_in_id must be a UUID');
  const s = v.replace(/[-{}]/g, '').toLowerCase();
  if (!HEX32.test(s)) throw new InvalidCheckInError('check_in_id must be a UUID');
  return s === NIL ? null : s;
}

function shortText(v: unknown, max: number): string | null {
  if (typeof v !== 'string' || v === '') return null;
  return v.slice(0, max);
}

/**
 * A check-in object (an envelope item's JSON, or the legacy route's body or query) →
 * CheckInInput. `slug` overrides the object's `monitor_slug` (the legacy route's path).
 */
export function parseCheckIn(raw: unknown, slug?: string): CheckInInput {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    throw new InvalidCheckInError('a check-in must be a JSON object');
  const v = raw as Record<string, unknown>;
  const rawSlug = slug ?? v.monitor_slug;
  if (typeof rawSlug !== 'string') throw new InvalidCheckInError('monitor_slug must be a string');
  const cleanSlug = slugifyMonitor(rawSlug);
  if (cleanSlug === '') throw new InvalidCheckInError('monitor_slug must have a letter or digit');
  if (typeof v.status !== 'string' || !(CLIENT_STATUSES as readonly string[]).includes(v.status)) {
    throw new InvalidCheckInError(`status must be one of ${CLIENT_STATUSES.join(', ')}`);
  }
  let duration: number | null = null;
  if (v.duration !== undefined && v.duration !== null) {
    if (typeof v.duration !== 'number' || !Number.isFinite(v.duration) || v.duration < 0)
      throw new InvalidCheckInError('duration must be a number of seconds, 0 or more');
    duration = v.duration;
  }
  const config =
    v.monitor_config === undefined || v.monitor_config === null ? null : parseMonitorConfig(v.monitor_config);
  return {
    slug: cleanSlug,
    checkInId: checkInIdOf(v.check_in_id),
    status: v.status as ClientStatus,
    duration,
    environment: shortText(v.environment, 64),
    release: shortText(v.release, 200),
    config,
  };
}

/** A monitor's settings in monitor_config's own shape (what PATCH merges into). */
export function configObject(c: MonitorConfig): Record<string, unknown> {
  const schedule =
    c.schedule.type === 'interval'
      ? { type: 'interval', value: Number(c.schedule.value), unit: c.schedule.unit }
      : { type: 'crontab', value: c.schedule.value };
  return {
    schedule,
    timezone: c.schedule.timezone,
    checkin_margin: c.checkin_margin,
    max_runtime: c.max_runtime,
    failure_issue_threshold: c.failure_issue_threshold,
    recovery_threshold: c.recovery_threshold,
  };
}

const PATCH_KEYS = new Set(['status', 'config']);

/**
 * `PATCH …/monitors/{slug}`: `status` (active or disabled) and/or `config` (monitor_config
 * fields, merged into the current ones and checked whole). MonitorConfigError when bad.
 */
export function parseMonitorPatch(
  body: unknown,
  current: MonitorConfig,
): { enabled?: boolean; config?: MonitorConfig } {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw new MonitorConfigError('the body must be a JSON object');
  const v = body as Record<string, unknown>;
  const unknown = Object.keys(v).filter((k) => !PATCH_KEYS.has(k));
  if (unknown.length > 0)
    throw new MonitorConfigError(
      `unknown field ${unknown.map((k) => JSON.stringify(k)).join(', ')} (fields are status and config)`,
    );
  if (v.status === undefined && v.config === undefined)
    throw new MonitorConfigError('nothing to change: send status and/or config');
  const out: { enabled?: boolean; config?: MonitorConfig } = {};
  if (v.status !== undefined) {
    if (v.status !== 'active' && v.status !== 'disabled')
      throw new MonitorConfigError('status must be "active" or "disabled"');
    out.enabled = v.status === 'active';
  }
  if (v.config !== undefined) {
    if (v.config === null || typeof v.config !== 'object' || Array.isArray(v.config))
      throw new MonitorConfigError('config must be an object of monitor_config fields');
    out.config = parseMonitorConfig({ ...configObject(current), ...(v.config as Record<string, unknown>) });
  }
  return out;
}
