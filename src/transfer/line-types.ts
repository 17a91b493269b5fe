// Every line type of the export file, in the order an export writes them: a row's
// parents come before it (project → issue → the issue's rows → events), so a file
// imports in one pass. Adding a table to export and import is one entry here.
import { ACCOUNT_LINE_TYPES } from './account-line-types.js';
import { sql } from 'kysely';
import { alertRuleChannelLineType } from './alert-rule-channel-line-type.js';
import { attachmentChunkLineType, attachmentLineType, userFeedbackLineType } from './attachment-line-types.js';
import { eventLineType } from './event-line-type.js';
import type { LineType } from './line-type.js';
import { projectLineType } from './project-line-type.js';
import { symbolChunkLineType, symbolLineType } from './symbol-line-types.js';
import {
  alertChannelProblem,
  alertRuleProblem,
  allOf,
  checkinStatusProblem,
  issueStatusProblem,
  levelProblem,
  monitorProblem,
  sessionStatusProblem,
  versionFieldProblem,
} from './line-checks.js';
import { ISSUE_PARENT, tableLineType } from './table-line-type.js';

export const issueLineType = tableLineType({
  type: 'issue',
  table: 'issues',
  parent: 'project',
  key: ['fingerprint'],
  order: ['id'],
  check: allOf(issueStatusProblem, levelProblem),
  // first_seen_id / last_seen_id are database ids: the event lines carry them instead
  // (first_of_issue / last_of_issue).
  columns: [
    { column: 'fingerprint', kind: 'text' },
    { column: 'status', kind: 'text' },
    { column: 'title', kind: 'text' },
    { column: 'level', kind: 'text' },
    { column: 'error_type', kind: 'text' },
    { column: 'screen', kind: 'text' },
    { column: 'location', kind: 'text' },
    { column: 'platform', kind: 'text' },
    { column: 'event_count', kind: 'count' },
    { column: 'stored_count', kind: 'count' },
    { column: 'users', kind: 'count' },
    { column: 'first_seen', kind: 'time' },
    { column: 'last_seen', kind: 'time' },
    { column: 'first_release', kind: 'text' },
    { column: 'last_release', kind: 'text' },
    { column: 'resolved_release', kind: 'text?' },
    { column: 'resolved_at', kind: 'time?' },
    { column: 'regressed_at', kind: 'time?' },
    { column: 'ignore_until', kind: 'time-added' },
    { column: 'ignore_count', kind: 'count-added' },
    { column: 'ignore_users', kind: 'count-added' },
    { column: 'ignored_event_count', kind: 'count-added' },
    { column: 'ignored_users', kind: 'count-added' },
    { column: 'created_at', kind: 'time' },
    { column: 'updated_at', kind: 'time' },
  ],
});

export const LINE_TYPES: readonly LineType[] = [
  projectLineType,
  // Alert rules and channels (src/alerts): a rule per project and alert type; channels
  // have no key but what they are (kind and config, which holds the webhook secret).
  // Deliveries and the outbox are the instance's history of sending, not moved.
  tableLineType({
    type: 'alert_rule',
    table: 'alert_rules',
    parent: 'project',
    key: ['type'],
    order: ['project_id', 'type'],
    check: alertRuleProblem,
    // `type` names the line type, so the rule's type travels as `alert`.
    columns: [
      { column: 'type', field: 'alert', kind: 'text' },
      { column: 'enabled', kind: 'bool' },
      { column: 'cooldown_minutes', kind: 'int' },
      { column: 'last_triggered', kind: 'time?' },
      // The rule's channel list names this instance's ids: alert_rule_channel lines carry it.
      { column: 'environments', kind: 'list' },
      { column: 'min_level', kind: 'text-added' },
    ],
  }),
  tableLineType({
    type: 'alert_channel',
    table: 'alert_channels',
    parent: 'project',
    key: ['kind', 'config'],
    order: ['id'],
    existing: 'lookup',
    check: alertChannelProblem,
    columns: [
      { column: 'kind', kind: 'text' },
      { column: 'config', kind: 'json' },
      { column: 'created_at', kind: 'time' },
    ],
  }),
  alertRuleChannelLineType,
  // Cron monitors (src/monitors) with their schedule and health, then their check-ins
  // (the last 30 days' are kept) under the monitor's slug. Their alerts are outbox rows,
  // not moved, as for the other alert types.
  tableLineType({
    type: 'monitor',
    table: 'monitors',
    parent: 'project',
    key: ['slug'],
    order: ['id'],
    check: monitorProblem,
    // A moved monitor starts a new history of writes: its version and claim are the instance's.
    fixed: { version: 1, claim: null },
    columns: [
      { column: 'slug', kind: 'text' },
      { column: 'schedule_type', kind: 'text' },
      { column: 'schedule', kind: 'text' },
      { column: 'schedule_unit', kind: 'text?' },
      { column: 'timezone', kind: 'text' },
      { column: 'checkin_margin', kind: 'int' },
      { column: 'max_runtime', kind: 'int' },
      { column: 'failure_issue_threshold', kind: 'int' },
      { column: 'recovery_threshold', kind: 'int' },
      { column: 'enabled', kind: 'bool' },
      { column: 'health', kind: 'text' },
      { column: 'failures', kind: 'count' },
      { column: 'successes', kind: 'count' },
      { column: 'last_status', kind: 'text?' },
      { column: 'last_checkin_at', kind: 'time?' },
      { column: 'next_expected_at', kind: 'time?' },
      { column: 'deadline_at', kind: 'time?' },
      { column: 'created_at', kind: 'time' },
      { column: 'updated_at', kind: 'time' },
    ],
  }),
  tableLineType({
    type: 'monitor_checkin',
    table: 'monitor_checkins',
    parent: {
      name: 'monitor',
      table: 'monitors',
      column: 'monitor_id',
      key: [{ column: 'slug', field: 'monitor', kind: 'text' }],
    },
    key: ['check_in_id'],
    order: ['id'],
    existing: 'lookup',
    withProjectId: true,
    check: checkinStatusProblem,
    columns: [
      { column: 'check_in_id', kind: 'text' },
      { column: 'status', kind: 'text' },
      { column: 'environment', kind: 'text?' },
      { column: 'release', kind: 'text?' },
      { column: 'duration_ms', kind: 'count?' },
      { column: 'created_at', kind: 'time' },
      { column: 'updated_at', kind: 'time' },
      { column: 'timeout_at', kind: 'time?' },
    ],
  }),
  symbolLineType,
  symbolChunkLineType,
  // Releases sentry-cli created or finalised (src/uploads), and the ProGuard mappings the
  // build plugins tied to releases.
  tableLineType({
    type: 'cli_release',
    table: 'cli_releases',
    parent: 'project',
    key: ['version'],
    order: ['project_id', 'version'],
    check: versionFieldProblem('version'),
    columns: [
      { column: 'version', kind: 'text' },
      { column: 'url', kind: 'text?' },
      { column: 'date_created', kind: 'time' },
      { column: 'date_started', kind: 'time?' },
      { column: 'date_released', kind: 'time?' },
    ],
  }),
  // What sentry-cli recorded of those releases: commits (set-commits) and deploys.
  tableLineType({
    type: 'release_commit',
    table: 'release_commits',
    parent: 'project',
    key: ['version', 'repository', 'commit_id'],
    order: ['project_id', 'version', 'repository', 'commit_id'],
    columns: [
      { column: 'version', kind: 'text' },
      { column: 'repository', kind: 'text' },
      { column: 'commit_id', kind: 'text' },
      { column: 'position', kind: 'int' },
      { column: 'message', kind: 'text?' },
      { column: 'author_name', kind: 'text?' },
      { column: 'author_email', kind: 'text?' },
      { column: 'date', kind: 'time?' },
    ],
  }),
  tableLineType({
    type: 'release_deploy',
    table: 'release_deploys',
    parent: 'project',
    key: ['deploy_id'],
    order: ['project_id', 'deploy_id'],
    columns: [
      { column: 'deploy_id', kind: 'text' },
      { column: 'version', kind: 'text' },
      { column: 'environment', kind: 'text' },
      { column: 'name', kind: 'text?' },
      { column: 'url', kind: 'text?' },
      { column: 'date_started', kind: 'time?' },
      { column: 'date_finished', kind: 'time' },
    ],
  }),
  tableLineType({
    type: 'proguard_release',
    table: 'proguard_releases',
    parent: 'project',
    key: ['release', 'proguard_uuid'],
    order: ['project_id', 'release', 'proguard_uuid'],
    columns: [
      { column: 'release', kind: 'text' },
      { column: 'proguard_uuid', kind: 'text' },
      { column: 'created_at', kind: 'time' },
    ],
  }),
  issueLineType,
  // The releases an issue was seen on (regressions are decided by them).
  tableLineType({
    type: 'issue_release',
    table: 'issue_releases',
    parent: ISSUE_PARENT,
    key: ['release'],
    order: ['issue_id', 'release'],
    columns: [
      { column: 'release', kind: 'text' },
      { column: 'first_seen', kind: 'time' },
    ],
  }),
  // Fingerprints merged into an issue (or mapped to it by re-symbolication): later events
  // with them go to that issue. The line names the issue by its fingerprint as `into`.
  tableLineType({
    type: 'issue_merge',
    table: 'issue_merges',
    parent: { ...ISSUE_PARENT, key: [{ column: 'fingerprint', field: 'into', kind: 'text' }] },
    key: ['fingerprint'],
    order: ['issue_id', 'fingerprint'],
    withProjectId: true,
    columns: [
      { column: 'fingerprint', kind: 'text' },
      { column: 'merged_at', kind: 'time' },
    ],
  }),
  // The distinct users behind an issue's `users`, so later events count exactly.
  tableLineType({
    type: 'issue_user',
    table: 'issue_users',
    parent: ISSUE_PARENT,
    key: ['user_key'],
    order: ['issue_id', 'user_key'],
    columns: [{ column: 'user_key', kind: 'text' }],
  }),
  // An issue's history (new issue, regressions, status changes): no unique key.
  tableLineType({
    type: 'issue_change',
    table: 'issue_changes',
    parent: ISSUE_PARENT,
    key: ['kind', 'at', 'release'],
    order: ['id'],
    existing: 'lookup',
    withProjectId: true,
    columns: [
      { column: 'kind', kind: 'text' },
      { column: 'at', kind: 'time' },
      { column: 'release', kind: 'text' },
      // Who did it and what (activity, comments); the user is an id of the users lines.
      { column: 'actor', kind: 'text-added' },
      { column: 'actor_user_id', kind: 'count-added' },
      { column: 'data', kind: 'text-added' },
    ],
  }),
  tableLineType({
    type: 'issue_environment_hour',
    table: 'issue_environment_hourly',
    parent: ISSUE_PARENT,
    key: ['environment', 'bucket'],
    order: ['issue_id', 'environment', 'bucket'],
    columns: [
      { column: 'environment', kind: 'text' },
      { column: 'bucket', field: 'hour', kind: 'time' },
      { column: 'events', kind: 'count' },
    ],
  }),
  tableLineType({
    type: 'issue_hour',
    table: 'issue_hourly',
    parent: ISSUE_PARENT,
    key: ['bucket'],
    order: ['issue_id', 'bucket'],
    columns: [
      { column: 'bucket', field: 'hour', kind: 'time' },
      { column: 'events', kind: 'count' },
    ],
  }),
  tableLineType({
    type: 'project_hour',
    table: 'project_hourly',
    parent: 'project',
    key: ['bucket', 'release'],
    order: ['project_id', 'bucket', 'release'],
    columns: [
      { column: 'bucket', field: 'hour', kind: 'time' },
      { column: 'release', kind: 'text' },
      { column: 'events', kind: 'count' },
      { column: 'crashes', kind: 'count' },
      { column: 'errors', kind: 'count' },
      { column: 'fatal', kind: 'count' },
      { column: 'error', kind: 'count' },
      { column: 'warning', kind: 'count' },
      { column: 'info', kind: 'count' },
      { column: 'debug', kind: 'count' },
    ],
  }),
  tableLineType({
    type: 'release',
    table: 'releases',
    parent: 'project',
    key: ['release'],
    order: ['project_id', 'release'],
    columns: [
      { column: 'release', kind: 'text' },
      { column: 'first_seen', kind: 'time' },
      { column: 'last_seen', kind: 'time' },
      { column: 'platforms', kind: 'json' },
    ],
  }),
  // Release health: sessions per release and hour (outlives the sessions themselves).
  tableLineType({
    type: 'release_hour',
    table: 'session_hourly',
    parent: 'project',
    key: ['release', 'bucket'],
    order: ['project_id', 'release', 'bucket'],
    columns: [
      { column: 'release', kind: 'text' },
      { column: 'bucket', field: 'hour', kind: 'time' },
      { column: 'total', kind: 'count' },
      { column: 'crashed', kind: 'count' },
      { column: 'errored', kind: 'count' },
      { column: 'anr', kind: 'counter-added' },
    ],
  }),
  // Crash-free users: each release's users per hour of session start (outlives the sessions).
  tableLineType({
    type: 'release_user_hour',
    table: 'session_users',
    parent: 'project',
    key: ['release', 'bucket', 'did'],
    order: ['project_id', 'release', 'bucket', 'did'],
    columns: [
      { column: 'release', kind: 'text' },
      { column: 'bucket', field: 'hour', kind: 'time' },
      { column: 'did', kind: 'text' },
      { column: 'crashed', kind: 'count' },
    ],
  }),
  // Events accepted per day: the daily quota.
  tableLineType({
    type: 'usage_day',
    table: 'daily_usage',
    parent: 'project',
    key: ['day'],
    order: ['project_id', 'day'],
    columns: [
      { column: 'day', kind: 'time' },
      { column: 'events', kind: 'count' },
    ],
  }),
  eventLineType,
  attachmentLineType,
  attachmentChunkLineType,
  userFeedbackLineType,
  // Event ids accepted but not stored (sampled out): a resend after the move stays a duplicate.
  tableLineType({
    type: 'seen_event',
    table: 'seen_events',
    parent: 'project',
    key: ['event_id'],
    order: ['project_id', 'event_id'],
    where: sql`t.stored_id is null`,
    fixed: { stored_id: null },
    columns: [
      { column: 'event_id', kind: 'text' },
      { column: 'received_at', kind: 'time' },
    ],
  }),
  tableLineType({
    type: 'session',
    table: 'sessions',
    parent: 'project',
    key: ['sid'],
    order: ['project_id', 'sid'],
    check: sessionStatusProblem,
    columns: [
      { column: 'sid', kind: 'text' },
      { column: 'did', kind: 'text?' },
      { column: 'release', kind: 'text' },
      { column: 'environment', kind: 'text' },
      { column: 'started', kind: 'time' },
      { column: 'status', kind: 'text' },
      { column: 'errors', kind: 'count' },
      { column: 'updated_at', kind: 'time' },
      { column: 'anr', kind: 'counter-added' },
    ],
  }),
  // Users, personal tokens and the audit log of the instance (never sessions).
  ...ACCOUNT_LINE_TYPES,
];

export function lineTypeNamed(type: string): LineType | undefined {
  return LINE_TYPES.find((t) => t.type === type);
}
