// What the API would refuse in an import line whose fields have the right types: each
// check runs the validation the API itself runs on that kind of row (the project
// schema, the alert rule and channel parsers, the issue and session statuses, the
// symbol kinds, the release version rule), so an import stores only rows the service
// could have stored. A check returns the reason a line is refused, or null.
import { AlertInputError, ALERT_TYPES, isAlertType, parseChannelInput, parseRulePatch } from '../alerts/rules.js';
import { isSessionStatus } from '../ingest/sessions.js';
import { LEVELS } from '../ingest/types.js';
import { ISSUE_STATUSES, isIssueStatus } from '../read/params.js';
import { createSchema } from '../store/project-input.js';
import { FILE_PART, INDEX_PART, isKeptKind, SYMBOL_KINDS, KEPT_SYMBOL_KINDS } from '../symbols/storage.js';
import { versionProblem } from '../uploads/releases.js';
import { CHECKIN_STATUSES, MonitorConfigError, parseMonitorConfig, slugifyMonitor } from '../monitors/config.js';

type Line = Record<string, unknown>;
type Check = (line: Line) => string | null;

function alertInputProblem(parse: () => unknown): string | null {
  try {
    parse();
    return null;
  } catch (err) {
    if (err instanceof AlertInputError) return err.message;
    throw err;
  }
}

function oneOf(field: string, allowed: readonly string[], is: (v: unknown) => boolean): Check {
  return (line) => (is(line[field]) ? null : `${field}: must be one of ${allowed.join(', ')}`);
}

/** All of `checks`, the first problem found. */
export function allOf(...checks: Check[]): Check {
  return (line) => {
    for (const check of checks) {
      const problem = check(line);
      if (problem) return problem;
    }
    return null;
  };
}

export const projectProblem: Check = (line) => {
  const {
    slug,
    name,
    platform,
    sample_keep_first,
    sample_rate,
    daily_quota,
    scrub_defaults,
    scrub_ip_addresses,
    scrub_fields,
    safe_fields,
    storage_budget_mb,
  } = line;
  const result = createSchema.safeParse({
    slug,
    name,
    platform,
    sample_keep_first,
    sample_rate,
    daily_quota,
    scrub_defaults,
    scrub_ip_addresses,
    scrub_fields,
    safe_fields,
    storage_budget_mb,
  });
  // The API's messages name their field already.
  return result.success ? null : [...new Set(result.error.issues.map((i) => i.message))].join('; ');
};

export const alertRuleProblem: Check = allOf(
  oneOf('alert', ALERT_TYPES, (v) => typeof v === 'string' && isAlertType(v)),
  (line) =>
    alertInputProblem(() =>
      parseRulePatch({
        enabled: line.enabled,
        cooldown_minutes: line.cooldown_minutes,
        ...(line.environments !== undefined ? { environments: line.environments } : {}),
        ...(line.min_level !== undefined ? { min_level: line.min_level } : {}),
      }),
    ),
);

export const alertChannelProblem: Check = (line) =>
  alertInputProblem(() => parseChannelInput({ kind: line.kind, config: line.config }));

export const levelProblem: Check = oneOf('level', LEVELS, (v) => (LEVELS as readonly unknown[]).includes(v));

export const issueStatusProblem: Check = oneOf('status', ISSUE_STATUSES, isIssueStatus);

export const sessionStatusProblem: Check = (line) =>
  isSessionStatus(line.status) ? null : `status: ${JSON.stringify(line.status)} is not a session status`;

export const symbolKindProblem: Check = oneOf(
  'kind',
  [...SYMBOL_KINDS, ...KEPT_SYMBOL_KINDS],
  (v) => typeof v === 'string' && ((SYMBOL_KINDS as readonly string[]).includes(v) || isKeptKind(v)),
);

export const symbolPartProblem: Check = (line) =>
  line.part === FILE_PART || line.part === INDEX_PART
    ? null
    : `part: must be ${FILE_PART} (the file) or ${INDEX_PART} (its index)`;

/** A release version field as sentry-cli's release routes accept it. */
export function versionFieldProblem(field: string): Check {
  return (line) => {
    const problem = versionProblem(String(line[field]));
    return problem ? `${field}: ${problem}` : null;
  };
}

/** A monitor line: its slug and settings as a check-in's monitor_config would have to say them. */
export const monitorProblem: Check = (line) => {
  if (typeof line.slug !== 'string' || slugifyMonitor(line.slug) !== line.slug || line.slug === '')
    return 'slug: must be a monitor slug (lowercase letters, digits, - and _)';
  const schedule =
    line.schedule_type === 'interval'
      ? { type: 'interval', value: Number(line.schedule), unit: line.schedule_unit }
      : { type: line.schedule_type, value: line.schedule };
  try {
    parseMonitorConfig({
      schedule,
      timezone: line.timezone,
      checkin_margin: line.checkin_margin,
      max_runtime: line.max_runtime,
      failure_issue_threshold: line.failure_issue_threshold,
      recovery_threshold: line.recovery_threshold,
    });
  } catch (err) {
    if (err instanceof MonitorConfigError) return err.message;
    throw err;
  }
  if (line.health !== 'ok' && line.health !== 'failing') return 'health: must be one of ok, failing';
  return null;
};

export const checkinStatusProblem: Check = oneOf(
  'status',
  CHECKIN_STATUSES,
  (v) => typeof v === 'string' && (CHECKIN_STATUSES as readonly string[]).includes(v),
);
