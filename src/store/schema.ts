// Store schema: the TypeScript shape of every table, shared by both SQL dialects, derived
// from the tables' descriptors (src/store/tables.ts), where each column is described once.
// Times are epoch milliseconds (integers) in every dialect, so queries and
// aggregates never depend on a database's date functions. Booleans are 0/1.
import type { Insertable, Selectable } from 'kysely';
import type { KyselyTable, TableName, Tables } from './tables.js';

/** Every table as Kysely types it: what query code sees as `Kysely<Database>`. */
export type Database = { [T in TableName]: KyselyTable<Tables[T]> };

/** The step of issues.last_seen_minute (migration 010 computes it in SQL with this value). */
export const LAST_SEEN_MINUTE_MS = 60_000;

export type ProjectTable = Database['projects'];
export type IssueTable = Database['issues'];
export type IssueReleaseTable = Database['issue_releases'];
export type IssueUserTable = Database['issue_users'];
export type IssueHourlyTable = Database['issue_hourly'];
export type IssueChangeTable = Database['issue_changes'];
export type IssueEnvironmentHourlyTable = Database['issue_environment_hourly'];
export type IssueMergeTable = Database['issue_merges'];
export type EventTable = Database['events'];
export type EventTagTable = Database['event_tags'];
export type PayloadChunkTable = Database['payload_chunks'];
export type SeenEventTable = Database['seen_events'];
export type ProjectHourlyTable = Database['project_hourly'];
export type ReleaseTable = Database['releases'];
export type DailyUsageTable = Database['daily_usage'];
export type SessionTable = Database['sessions'];
export type SessionHourlyTable = Database['session_hourly'];
export type SessionUserTable = Database['session_users'];
export type RateLimitWindowTable = Database['rate_limit_windows'];
export type JobLockTable = Database['job_locks'];
export type AlertRuleTable = Database['alert_rules'];
export type AlertChannelTable = Database['alert_channels'];
export type AlertOutboxTable = Database['alert_outbox'];
export type AlertDeliveryTable = Database['alert_deliveries'];
export type UploadChunkTable = Database['upload_chunks'];
export type UploadAssemblyTable = Database['upload_assemblies'];
export type CliReleaseTable = Database['cli_releases'];
export type ProguardReleaseTable = Database['proguard_releases'];
export type ReleaseCommitTable = Database['release_commits'];
export type ReleaseDeployTable = Database['release_deploys'];
export type SymbolFileTable = Database['symbol_files'];
export type SymbolChunkTable = Database['symbol_chunks'];
export type SymbolJobTable = Database['symbol_jobs'];
export type IngestReceiptTable = Database['ingest_receipts'];
export type UserTable = Database['users'];
export type PersonalTokenTable = Database['personal_tokens'];
export type UserSessionTable = Database['user_sessions'];
export type UserInviteTable = Database['user_invites'];
export type SetupTokenTable = Database['setup_tokens'];
export type AuditLogTable = Database['audit_log'];
export type AttachmentTable = Database['attachments'];
export type AttachmentChunkTable = Database['attachment_chunks'];
export type SsoStateTable = Database['sso_states'];
export type MonitorTable = Database['monitors'];
export type MonitorCheckinTable = Database['monitor_checkins'];
export type StorageUsageTable = Database['storage_usage'];
export type UserFeedbackTable = Database['user_feedback'];

export type ProjectRow = Selectable<ProjectTable>;
export type NewProject = Insertable<ProjectTable>;
export type IssueRow = Selectable<IssueTable>;
export type EventRow = Selectable<EventTable>;
export type ReleaseRow = Selectable<ReleaseTable>;
export type SessionRow = Selectable<SessionTable>;
