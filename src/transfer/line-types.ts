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
  }),
  tableLineType({
    type: 'alert_channel',
    table: 'alert_channels',
    parent: 'project',
    key: ['kind', 'config'],
    order: ['id'],
    existing: 'lookup',
    check: alertChannelProblem,
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
  }),
  // What sentry-cli recorded of those releases: commits (set-commits) and deploys.
  tableLineType({
    type: 'release_commit',
    table: 'release_commits',
    parent: 'project',
    key: ['version', 'repository', 'commit_id'],
    order: ['project_id', 'version', 'repository', 'commit_id'],
  }),
  tableLineType({
    type: 'release_deploy',
    table: 'release_deploys',
    parent: 'project',
    key: ['deploy_id'],
    order: ['project_id', 'deploy_id'],
  }),
  tableLineType({
    type: 'proguard_release',
    table: 'proguard_releases',
    parent: 'project',
    key: ['release', 'proguard_uuid'],
    order: ['project_id', 'release', 'proguard_uuid'],
  }),
  issueLineType,
  // The releases an issue was seen on (regressions are decided by them).
  tableLineType({
    type: 'issue_release',
    table: 'issue_releases',
    parent: ISSUE_PARENT,
    key: ['release'],
    order: ['issue_id', 'release'],
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
  }),
  // The distinct users behind an issue's `users`, so later events count exactly.
  tableLineType({
    type: 'issue_user',
    table: 'issue_users',
    parent: ISSUE_PARENT,
    key: ['user_key'],
    order: ['issue_id', 'user_key'],
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
  }),
  tableLineType({
    type: 'issue_environment_hour',
    table: 'issue_environment_hourly',
    parent: ISSUE_PARENT,
    key: ['environment', 'bucket'],
    order: ['issue_id', 'environment', 'bucket'],
  }),
  tableLineType({
    type: 'issue_hour',
    table: 'issue_hourly',
    parent: ISSUE_PARENT,
    key: ['bucket'],
    order: ['issue_id', 'bucket'],
  }),
  tableLineType({
    type: 'project_hour',
    table: 'project_hourly',
    parent: 'project',
    key: ['bucket', 'release'],
    order: ['project_id', 'bucket', 'release'],
  }),
  tableLineType({
    type: 'release',
    table: 'releases',
    parent: 'project',
    key: ['release'],
    order: ['project_id', 'release'],
  }),
  // Release health: sessions per release and hour (outlives the sessions themselves).
  tableLineType({
    type: 'release_hour',
    table: 'session_hourly',
    parent: 'project',
    key: ['release', 'bucket'],
    order: ['project_id', 'release', 'bucket'],
  }),
  // Crash-free users: each release's users per hour of session start (outlives the sessions).
  tableLineType({
    type: 'release_user_hour',
    table: 'session_users',
    parent: 'project',
    key: ['release', 'bucket', 'did'],
    order: ['project_id', 'release', 'bucket', 'did'],
  }),
  // Events accepted per day: the daily quota.
  tableLineType({
    type: 'usage_day',
    table: 'daily_usage',
    parent: 'project',
    key: ['day'],
    order: ['project_id', 'day'],
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
  }),
  tableLineType({
    type: 'session',
    table: 'sessions',
    parent: 'project',
    key: ['sid'],
    order: ['project_id', 'sid'],
    check: sessionStatusProblem,
  }),
  // Users, personal tokens and the audit log of the instance (never sessions).
  ...ACCOUNT_LINE_TYPES,
];

export function lineTypeNamed(type: string): LineType | undefined {
  return LINE_TYPES.find((t) => t.type === type);
}
