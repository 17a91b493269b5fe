// The alert tables (migration 012): rules, channels, the outbox and deliveries,
// and the claims that keep several processes on one database from sending an alert
// twice. Every claim is one conditional UPDATE, so the database decides who wins:
// an outbox row is taken by the process that moves it out of `pending`, a rule's
// cooldown by the process whose compare-and-set of `last_triggered` matches, a
// delivery by the process that sets its lease.
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Dialect, Store } from '../store/database.js';
import type { ProjectCreated } from '../store/projects.js';
import type { Database } from '../store/schema.js';
import { digestFields, namedIssues, OUTBOX_HELD, OUTBOX_PENDING } from './outbox.js';
import { ASSIGNEE_FEEDBACK, type AssignedIssue, type AssigneeMailState } from './assignee.js';
import {
  ALERT_TYPES,
  AlertInputError,
  NO_FILTERS,
  RULE_DEFAULTS,
  ruleChannels,
  ruleLetsThrough,
  storedRuleFilters,
  type AlertCause,
  type AlertLevel,
  type AlertType,
  type ChannelInput,
  type RulePatch,
} from './rules.js';
import { DELIVERY_LIST_LIMIT } from '../limits.js';

type Db = Kysely<Database>;

export interface AlertRuleJson {
  project_id: number;
  type: AlertType;
  enabled: boolean;
  cooldown_minutes: number;
  last_triggered: string | null;
  environments: string[];
  min_level: AlertLevel | null;
  channels: number[];
}

const iso = (ms: number | null) => (ms === null ? null : new Date(Number(ms)).toISOString());

/** The three rules of every new project (also what a missing row means). */
export async function insertDefaultRules(db: Db, projectId: number): Promise<void> {
  await db
    .insertInto('alert_rules')
    .values(ALERT_TYPES.map((type) => ({ project_id: projectId, type, enabled: RULE_DEFAULTS.enabled ? 1 : 0, cooldown_minutes: RULE_DEFAULTS.cooldown_minutes, last_triggered: null })))
    .onConflict((oc) => oc.columns(['project_id', 'type']).doNothing())
    .execute();
}

/** The project-created hook (src/store/projects.ts ProjectCreated): a new project starts with its three rules. */
export const addDefaultRules: ProjectCreated = (db, project) => insertDefaultRules(db, project.id);

/** All three rules, in type order. */
export async function listRules(db: Db, projectId: number): Promise<AlertRuleJson[]> {
  const rows = await db.selectFrom('alert_rules').selectAll().where('project_id', '=', projectId).execute();
  return ALERT_TYPES.map((type) => {
    const row = rows.find((r) => r.type === type);
    return {
      project_id: projectId,
      type,
      enabled: row ? Number(row.enabled) === 1 : RULE_DEFAULTS.enabled,
      cooldown_minutes: row ? Number(row.cooldown_minutes) : RULE_DEFAULTS.cooldown_minutes,
      last_triggered: row ? iso(row.last_triggered) : null,
      ...(row ? storedRuleFilters(row) : NO_FILTERS),
    };
  });
}

/** Changes a rule; a channel id that is not one of the project's is an AlertInputError. */
export async function updateRule(db: Db, projectId: number, type: AlertType, patch: RulePatch): Promise<AlertRuleJson> {
  if (patch.channels && patch.channels.length > 0) {
    const known = new Set((await listChannels(db, projectId)).map((c) => Number(c.id)));
    const unknown = patch.channels.filter((id) => !known.has(id));
    if (unknown.length > 0) throw new AlertInputError(`channels: ${unknown.join(', ')} ${unknown.length > 1 ? 'are not channels' : 'is not a channel'} of this project`);
  }
  await insertDefaultRules(db, projectId);
  const set: { enabled?: number; cooldown_minutes?: number; environments?: string; min_level?: string | null; channels?: string } = {};
  if (patch.enabled !== undefined) set.enabled = patch.enabled ? 1 : 0;
  if (patch.cooldown_minutes !== undefined) set.cooldown_minutes = patch.cooldown_minutes;
  if (patch.environments !== undefined) set.environments = JSON.stringify(patch.environments);
  if (patch.min_level !== undefined) set.min_level = patch.min_level;
  if (patch.channels !== undefined) set.channels = JSON.stringify(patch.channels);
  await db.updateTable('alert_rules').set(set).where('project_id', '=', projectId).where('type', '=', type).execute();
  return (await listRules(db, projectId)).find((r) => r.type === type)!;
}

// ---------------------------------------------------------------------------
// Channels
// ---------------------------------------------------------------------------

export interface ChannelRow {
  id: number;
  project_id: number;
  kind: string;
  config: string;
  created_at: number;
}

/**
 * The channel object of the API: the webhook secret is never returned, nor the URL of a
 * Slack, Discord or Teams hook (the URL is its credential): only its host.
 */
export function channelJson(row: ChannelRow) {
  const config = JSON.parse(row.config) as Record<string, unknown>;
  let shown: Record<string, unknown>;
  if (row.kind === 'webhook') shown = { url: config.url, has_secret: typeof config.secret === 'string' && config.secret !== '' };
  else if (row.kind === 'telegram') shown = { chat_id: config.chat_id };
  else if (row.kind === 'email') shown = { to: config.to };
  else shown = { host: hostOf(config.url) };
  return { id: Number(row.id), kind: row.kind, config: shown, created_at: new Date(Number(row.created_at)).toISOString() };
}

function hostOf(url: unknown): string | null {
  try {
    return new URL(String(url)).host;
  } catch {
    return null;
  }
}

export async function listChannels(db: Db, projectId: number): Promise<ChannelRow[]> {
  return db.selectFrom('alert_channels').selectAll().where('project_id', '=', projectId).orderBy('id').execute();
}

export async function findChannel(db: Db, projectId: number, id: number): Promise<ChannelRow | undefined> {
  if (!Number.isSafeInteger(id) || id <= 0) return undefined;
  return db.selectFrom('alert_channels').selectAll().where('project_id', '=', projectId).where('id', '=', id).executeTakeFirst();
}

export async function createChannel(db: Db, projectId: number, input: ChannelInput, now: number): Promise<ChannelRow> {
  return db
    .insertInto('alert_channels')
    .values({ project_id: projectId, kind: input.kind, config: JSON.stringify(input.config), created_at: now })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/**
 * Deletes a channel and takes it out of the rules limited to it (docs/api.md "Alerts"), in
 * one `Store.atomic` (on D1 a transaction would run one statement at a time). The rules are
 * read first; each update is conditional on the rule's channels being as read, so a rule
 * changed meanwhile keeps its list, where the id then names no channel.
 */
export async function deleteChannel(store: Pick<Store, 'db' | 'atomic'>, projectId: number, id: number): Promise<boolean> {
  if (!Number.isSafeInteger(id) || id <= 0) return false;
  const db = store.db;
  const rules = await db.selectFrom('alert_rules').select(['type', 'channels']).where('project_id', '=', projectId).where('channels', '<>', '[]').execute();
  const statements = [db.deleteFrom('alert_channels').where('project_id', '=', projectId).where('id', '=', id).returning('id').compile()];
  for (const rule of rules) {
    const channels = storedRuleFilters(rule).channels;
    if (!channels.includes(id)) continue;
    statements.push(
      db
        .updateTable('alert_rules')
        .set({ channels: JSON.stringify(channels.filter((c) => c !== id)) })
        .where('project_id', '=', projectId)
        .where('type', '=', rule.type)
        .where('channels', '=', rule.channels)
        // Only when this batch deleted the channel (it is gone now).
        .where(({ not, exists, selectFrom }) => not(exists(selectFrom('alert_channels').select('id').where('id', '=', id))))
        .returning('type')
        .compile(),
    );
  }
  const [deleted] = await store.atomic(statements);
  return deleted.rows.length > 0;
}

// ---------------------------------------------------------------------------
// Deliveries
// ---------------------------------------------------------------------------

/** The latest deliveries, newest first, each naming the issue(s) its alert is about. */
export async function listDeliveries(db: Db, projectId: number) {
  const rows = await db
    .selectFrom('alert_deliveries as d')
    .leftJoin('alert_outbox as o', 'o.id', 'd.alert_id')
    .select(['d.id', 'd.type', 'd.channel_id', 'd.state', 'd.attempts', 'd.last_error', 'd.created_at', 'd.sent_at', 'o.payload'])
    .where('d.project_id', '=', projectId)
    .orderBy('d.id', 'desc')
    .limit(DELIVERY_LIST_LIMIT)
    .execute();
  return rows.map((r) => ({
    id: Number(r.id),
    type: r.type,
    channel_id: Number(r.channel_id),
    state: r.state,
    attempts: Number(r.attempts),
    last_error: r.last_error,
    created_at: iso(r.created_at),
    sent_at: iso(r.sent_at),
    ...deliveryIssues(r.payload),
  }));
}

function deliveryIssues(payload: string | null): { digest: boolean; issue_count: number; issues: { fingerprint: string; title: string }[] } {
  const issues = namedIssues(payload);
  let digest: { count?: unknown } | undefined;
  try {
    digest = payload ? (JSON.parse(payload) as { digest?: { count?: unknown } }).digest : undefined;
  } catch {
    digest = undefined;
  }
  const count = digest && Number.isSafeInteger(digest.count) ? Number(digest.count) : issues.length;
  return { digest: digest !== undefined, issue_count: count, issues };
}

/** A test delivery, recorded once its one attempt is over. */
export async function recordTestDelivery(
  db: Db,
  projectId: number,
  channelId: number,
  result: { delivered: boolean; status: number | null; error: string | null },
  now: number,
  wallNow: number,
): Promise<void> {
  await db
    .insertInto('alert_deliveries')
    .values({
      project_id: projectId,
      alert_id: null,
      channel_id: channelId,
      type: 'test',
      state: result.delivered ? 'sent' : 'failed',
      attempts: 1,
      last_error: result.error,
      status: result.status,
      created_at: now,
      sent_at: result.delivered ? now : null,
      next_attempt_at: wallNow,
      lease_until: null,
      claimed_by: null,
    })
    .execute();
}

// ---------------------------------------------------------------------------
// The outbox: from recorded alert to deliveries
// ---------------------------------------------------------------------------

/** Records an alert to be sent (the crash-spike check; the ingest batch writes its own rows). */
export async function recordAlert(db: Db, projectId: number, type: AlertType, payload: object, now: number): Promise<void> {
  await db
    .insertInto('alert_outbox')
    .values({ project_id: projectId, type, issue_id: null, payload: JSON.stringify(payload), state: OUTBOX_PENDING, created_at: now })
    .execute();
}

export async function pendingAlertIds(db: Db, limit: number): Promise<number[]> {
  const rows = await db.selectFrom('alert_outbox').select('id').where('state', '=', OUTBOX_PENDING).where('type', '!=', ASSIGNEE_FEEDBACK).orderBy('id').limit(limit).execute();
  return rows.map((r) => Number(r.id));
}

/** Assignee emails recorded and not yet taken (src/alerts/assignee.ts), oldest first. */
export async function pendingAssigneeMails(db: Db, limit: number): Promise<{ id: number; issue_id: number | null; payload: string }[]> {
  const rows = await db
    .selectFrom('alert_outbox')
    .select(['id', 'issue_id', 'payload'])
    .where('state', '=', OUTBOX_PENDING)
    .where('type', '=', ASSIGNEE_FEEDBACK)
    .orderBy('id')
    .limit(limit)
    .execute();
  return rows.map((r) => ({ id: Number(r.id), issue_id: r.issue_id === null ? null : Number(r.issue_id), payload: r.payload }));
}

/** Takes a recorded assignee email for this process; false when another took it first. */
export async function claimAssigneeMail(store: Store, id: number): Promise<boolean> {
  const [result] = await store.atomic([
    store.db.updateTable('alert_outbox').set({ state: 'claimed' }).where('id', '=', id).where('state', '=', OUTBOX_PENDING).returning('id').compile(),
  ]);
  return (result?.rows.length ?? 0) > 0;
}

/** Records how a claimed assignee email ended. */
export async function finishAssigneeMail(store: Store, id: number, state: AssigneeMailState, at: number): Promise<void> {
  await store.atomic([store.db.updateTable('alert_outbox').set({ state, triggered_at: at }).where('id', '=', id).compile()]);
}

/** The issue and its assignee's address as they are now; null when it has no (enabled) assignee any more. */
export async function assignedIssue(db: Db, issueId: number): Promise<(AssignedIssue & { to: string }) | null> {
  const row = await db
    .selectFrom('issues as i')
    .innerJoin('users as u', 'u.id', 'i.assignee_id')
    .innerJoin('projects as p', 'p.id', 'i.project_id')
    .select(['i.title', 'i.fingerprint', 'p.slug', 'p.name as project_name', 'u.email', 'u.name as user_name'])
    .where('i.id', '=', issueId)
    .where('u.disabled', '=', 0)
    .executeTakeFirst();
  if (!row) return null;
  return { title: row.title, fingerprint: row.fingerprint, projectSlug: row.slug, projectName: row.project_name, assigneeName: row.user_name, to: row.email };
}

export type AlertOutcome = 'sent' | 'taken' | 'disabled' | 'no_channel' | 'held' | 'filtered';

/** The rule of a type with its filters, read inside the dispatching transaction. */
async function ruleFor(tx: Db, projectId: number, type: string) {
  await insertDefaultRules(tx, projectId);
  const rule = await tx
    .selectFrom('alert_rules')
    .select(['enabled', 'cooldown_minutes', 'last_triggered', 'environments', 'min_level', 'channels'])
    .where('project_id', '=', projectId)
    .where('type', '=', type)
    .executeTakeFirstOrThrow();
  return { ...rule, filters: storedRuleFilters(rule), prev: rule.last_triggered === null ? null : Number(rule.last_triggered) };
}

/** The channels a rule sends to, of those the project has now. */
async function channelsFor(tx: Db, projectId: number, rule: { filters: Parameters<typeof ruleChannels>[0] }): Promise<number[]> {
  const all = await tx.selectFrom('alert_channels').select('id').where('project_id', '=', projectId).orderBy('id').execute();
  return ruleChannels(rule.filters, all.map((c) => Number(c.id)));
}

/**
 * Compare-and-set of a rule's cooldown: the cooldown is over and nobody moved
 * last_triggered since it was read. Of two processes, one wins.
 */
async function claimCooldown(tx: Db, projectId: number, type: string, prev: number | null, now: number): Promise<boolean> {
  const claimed = await tx
    .updateTable('alert_rules')
    .set({ last_triggered: now })
    .where('project_id', '=', projectId)
    .where('type', '=', type)
    .where('enabled', '=', 1)
    .where((eb) =>
      prev === null
        ? eb('last_triggered', 'is', null)
        : eb.and([eb('last_triggered', '=', prev), eb(sql<number>`last_triggered + cooldown_minutes * 60000`, '<=', now)]),
    )
    .executeTakeFirst();
  return Number(claimed.numUpdatedRows) > 0;
}

async function insertDeliveries(tx: Db, projectId: number, alertId: number, type: string, channelIds: number[], now: number, wallNow: number): Promise<void> {
  await tx
    .insertInto('alert_deliveries')
    .values(
      channelIds.map((id) => ({
        project_id: projectId,
        alert_id: alertId,
        channel_id: id,
        type,
        state: 'pending',
        attempts: 0,
        last_error: null,
        status: null,
        created_at: now,
        sent_at: null,
        next_attempt_at: wallNow,
        lease_until: null,
        claimed_by: null,
      })),
    )
    .execute();
}

function alertCause(payload: string): AlertCause {
  try {
    const v = JSON.parse(payload) as { environment?: unknown; level?: unknown };
    return {
      environment: typeof v.environment === 'string' ? v.environment : undefined,
      level: typeof v.level === 'string' ? v.level : undefined,
    };
  } catch {
    return {};
  }
}

/**
 * Takes one recorded alert: checks its rule's filters, claims the rule's cooldown and
 * creates one pending delivery per channel of the rule, in one transaction. Inside the
 * cooldown the alert is held for the rule's next digest (sendDueDigests). `taken` when
 * another process got it first.
 */
export async function dispatchAlert(db: Db, alertId: number, now: number, wallNow: number): Promise<AlertOutcome> {
  return db.transaction().execute(async (tx) => {
    const taken = await tx
      .updateTable('alert_outbox')
      .set({ state: 'claimed' })
      .where('id', '=', alertId)
      .where('state', '=', OUTBOX_PENDING)
      .returning(['project_id', 'type', 'payload'])
      .executeTakeFirst();
    if (!taken) return 'taken';
    const projectId = Number(taken.project_id);
    const finish = async (state: string, claim?: { triggered: number; prev: number | null }) => {
      await tx
        .updateTable('alert_outbox')
        .set({ state, triggered_at: claim?.triggered ?? null, prev_triggered: claim?.prev ?? null })
        .where('id', '=', alertId)
        .execute();
    };
    const rule = await ruleFor(tx, projectId, taken.type);
    if (Number(rule.enabled) !== 1) {
      await finish('disabled');
      return 'disabled';
    }
    if (!ruleLetsThrough(rule.filters, alertCause(taken.payload))) {
      await finish('filtered');
      return 'filtered';
    }
    const channels = await channelsFor(tx, projectId, rule);
    if (channels.length === 0) {
      await finish('no_channel');
      return 'no_channel';
    }
    if (!(await claimCooldown(tx, projectId, taken.type, rule.prev, now))) {
      await finish(OUTBOX_HELD);
      return 'held';
    }
    await insertDeliveries(tx, projectId, alertId, taken.type, channels, now, wallNow);
    await finish('sent', { triggered: now, prev: rule.prev });
    return 'sent';
  });
}

/**
 * The rules with alerts held back whose cooldown is over at `now` (at most `limit`). Read
 * from the held rows (a partial index keeps them apart), as every dispatcher pass asks.
 */
export async function dueDigests(db: Db, now: number, limit: number): Promise<{ project_id: number; type: string }[]> {
  const rows = await db
    .selectFrom('alert_outbox as o')
    .innerJoin('alert_rules as r', (join) => join.onRef('r.project_id', '=', 'o.project_id').onRef('r.type', '=', 'o.type'))
    .select(['o.project_id', 'o.type'])
    .distinct()
    .where('o.state', '=', OUTBOX_HELD)
    .where((eb) => eb.or([eb('r.last_triggered', 'is', null), eb(sql<number>`r.last_triggered + r.cooldown_minutes * 60000`, '<=', now)]))
    .orderBy('o.project_id')
    .orderBy('o.type')
    .limit(limit)
    .execute();
  return rows.map((r) => ({ project_id: Number(r.project_id), type: r.type }));
}

export type DigestOutcome = 'sent' | 'taken' | 'disabled' | 'no_channel';

/**
 * Sends one rule's digest: claims the rule's cooldown (the same compare-and-set as a
 * single alert, so of two processes one sends it), records the digest as an outbox row
 * naming the alerts it stands for, marks those `digested`, and creates its deliveries,
 * in one transaction. A rule switched off or left without channels meanwhile sets its
 * held alerts aside as a single alert would be.
 */
export async function sendDigest(db: Db, projectId: number, type: string, now: number, wallNow: number): Promise<DigestOutcome> {
  return db.transaction().execute(async (tx) => {
    const rule = await ruleFor(tx, projectId, type);
    const held = () => tx.updateTable('alert_outbox').where('project_id', '=', projectId).where('type', '=', type).where('state', '=', OUTBOX_HELD);
    if (Number(rule.enabled) !== 1) {
      await held().set({ state: 'disabled' }).execute();
      return 'disabled';
    }
    const channels = await channelsFor(tx, projectId, rule);
    if (channels.length === 0) {
      await held().set({ state: 'no_channel' }).execute();
      return 'no_channel';
    }
    if (!(await claimCooldown(tx, projectId, type, rule.prev, now))) return 'taken';
    const rows = await tx
      .selectFrom('alert_outbox')
      .select(['id', 'payload', 'created_at'])
      .where('project_id', '=', projectId)
      .where('type', '=', type)
      .where('state', '=', OUTBOX_HELD)
      .orderBy('id')
      .execute();
    if (rows.length === 0) {
      // Another process sent them between the look and the claim: give the cooldown back.
      await tx.updateTable('alert_rules').set({ last_triggered: rule.prev }).where('project_id', '=', projectId).where('type', '=', type).where('last_triggered', '=', now).execute();
      return 'taken';
    }
    const digest = await tx
      .insertInto('alert_outbox')
      .values({
        project_id: projectId,
        type,
        issue_id: null,
        payload: JSON.stringify({ digest: digestFields(rows.map((r) => ({ payload: r.payload, created_at: Number(r.created_at) }))) }),
        state: 'sent',
        created_at: now,
        triggered_at: now,
        prev_triggered: rule.prev,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    const digestId = Number(digest.id);
    const ids = rows.map((r) => Number(r.id));
    for (let i = 0; i < ids.length; i += 500) {
      await tx.updateTable('alert_outbox').set({ state: 'digested', digest_id: digestId }).where('id', 'in', ids.slice(i, i + 500)).where('state', '=', OUTBOX_HELD).execute();
    }
    await insertDeliveries(tx, projectId, digestId, type, channels, now, wallNow);
    return 'sent';
  });
}

export interface ClaimedDelivery {
  id: number;
  project_id: number;
  alert_id: number | null;
  channel_id: number;
  type: string;
  attempts: number;
  lease_until: number;
}

/**
 * Claims up to `limit` due deliveries for `holder` until `leaseUntil`: one UPDATE whose
 * conditions are checked again on each row it changes, so of two processes only one
 * gets a row (PostgreSQL re-evaluates them on the row version another transaction left).
 * Channels in `busyChannels` are skipped, and one claim takes at most one delivery per
 * channel: a slow channel holds no more than its share of the slots.
 */
export async function claimDeliveries(
  store: Store,
  holder: string,
  wallNow: number,
  leaseUntil: number,
  limit: number,
  busyChannels: number[],
): Promise<ClaimedDelivery[]> {
  const db = store.db;
  const due = (eb: any) =>
    eb.and([
      eb('state', '=', 'pending'),
      eb('next_attempt_at', '<=', wallNow),
      eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', wallNow)]),
    ]);
  // The oldest due delivery of each channel: one claim never takes two of one channel,
  // so a channel with many waiting deliveries cannot fill every slot.
  let candidates = db
    .selectFrom('alert_deliveries')
    .select((eb) => eb.fn.min('id').as('id'))
    .where(due)
    .groupBy('channel_id')
    .orderBy((eb) => eb.fn.min('id'))
    .limit(limit);
  if (busyChannels.length > 0) candidates = candidates.where('channel_id', 'not in', busyChannels);
  const rows = await db
    .updateTable('alert_deliveries')
    .set((eb) => ({ lease_until: leaseUntil, claimed_by: holder, attempts: eb('attempts', '+', 1) }))
    .where('id', 'in', candidates)
    .where(due)
    .returning(['id', 'project_id', 'alert_id', 'channel_id', 'type', 'attempts', 'lease_until'])
    .execute();
  return rows.map((r) => ({
    id: Number(r.id),
    project_id: Number(r.project_id),
    alert_id: r.alert_id === null ? null : Number(r.alert_id),
    channel_id: Number(r.channel_id),
    type: r.type,
    attempts: Number(r.attempts),
    lease_until: Number(r.lease_until),
  }));
}

/** Whether any delivery could be claimed now (a cheap probe before the claiming UPDATE). */
export async function anyDeliveryDue(db: Db, wallNow: number): Promise<boolean> {
  const row = await db
    .selectFrom('alert_deliveries')
    .select('id')
    .where('state', '=', 'pending')
    .where('next_attempt_at', '<=', wallNow)
    .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', wallNow)]))
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/** The soonest wall-clock time a pending delivery is due, or null when none is pending. */
export async function nextDeliveryDue(db: Db): Promise<number | null> {
  const row = await db
    .selectFrom('alert_deliveries')
    .select((eb) => eb.fn.min('next_attempt_at').as('due'))
    .where('state', '=', 'pending')
    .executeTakeFirst();
  return row?.due == null ? null : Number(row.due);
}

export interface DeliveryContext {
  project: { slug: string; name: string } | undefined;
  channel: { id: number; kind: string; config: string } | undefined;
  alert: { payload: string; triggered_at: number | null } | undefined;
}

export async function deliveryContext(db: Db, d: ClaimedDelivery): Promise<DeliveryContext> {
  const [project, channel, alert] = await Promise.all([
    db.selectFrom('projects').select(['slug', 'name']).where('id', '=', d.project_id).executeTakeFirst(),
    db.selectFrom('alert_channels').select(['id', 'kind', 'config']).where('id', '=', d.channel_id).where('project_id', '=', d.project_id).executeTakeFirst(),
    d.alert_id === null
      ? Promise.resolve(undefined)
      : db.selectFrom('alert_outbox').select(['payload', 'triggered_at']).where('id', '=', d.alert_id).executeTakeFirst(),
  ]);
  return {
    project,
    channel: channel && { id: Number(channel.id), kind: channel.kind, config: channel.config },
    alert: alert && { payload: alert.payload, triggered_at: alert.triggered_at === null ? null : Number(alert.triggered_at) },
  };
}

/** Only the lease holder may settle a delivery; false when its lease was lost meanwhile. */
function held(d: ClaimedDelivery, holder: string) {
  return (eb: any) => eb.and([eb('id', '=', d.id), eb('claimed_by', '=', holder), eb('lease_until', '=', d.lease_until), eb('state', '=', 'pending')]);
}

export async function markDelivered(db: Db, d: ClaimedDelivery, holder: string, status: number | null, now: number): Promise<boolean> {
  const r = await db
    .updateTable('alert_deliveries')
    .set({ state: 'sent', sent_at: now, status, last_error: null, lease_until: null })
    .where(held(d, holder))
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

export async function scheduleRetry(db: Db, d: ClaimedDelivery, holder: string, status: number | null, error: string, nextAttemptAt: number): Promise<boolean> {
  const r = await db
    .updateTable('alert_deliveries')
    .set({ status, last_error: error, next_attempt_at: nextAttemptAt, lease_until: null })
    .where(held(d, holder))
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/**
 * The delivery failed for good. When it was its alert's last hope (no other delivery of
 * the alert is pending or sent), the rule's cooldown is given back: `last_triggered`
 * returns to what it was, unless another alert has claimed it since. The alert row is
 * locked first, so of two processes failing an alert's last two deliveries at once the
 * second sees the first's outcome.
 */
export async function markFailed(db: Db, dialect: Dialect, d: ClaimedDelivery, holder: string, status: number | null, error: string): Promise<{ gaveBack: boolean }> {
  return db.transaction().execute(async (tx) => {
    if (d.alert_id !== null && dialect === 'postgres') {
      await sql`select id from alert_outbox where id = ${d.alert_id} for update`.execute(tx);
    }
    const r = await tx
      .updateTable('alert_deliveries')
      .set({ state: 'failed', status, last_error: error, lease_until: null })
      .where(held(d, holder))
      .executeTakeFirst();
    if (Number(r.numUpdatedRows) === 0 || d.alert_id === null) return { gaveBack: false };
    return { gaveBack: await giveBackIfUndelivered(tx, d.alert_id) };
  });
}

async function giveBackIfUndelivered(tx: Transaction<Database>, alertId: number): Promise<boolean> {
  const alive = await tx
    .selectFrom('alert_deliveries')
    .select('id')
    .where('alert_id', '=', alertId)
    .where('state', 'in', ['pending', 'sent'])
    .limit(1)
    .executeTakeFirst();
  if (alive) return false;
  const alert = await tx
    .selectFrom('alert_outbox')
    .select(['project_id', 'type', 'state', 'triggered_at', 'prev_triggered'])
    .where('id', '=', alertId)
    .executeTakeFirst();
  if (alert?.state !== 'sent' || alert.triggered_at === null) return false;
  await tx
    .updateTable('alert_rules')
    .set({ last_triggered: alert.prev_triggered })
    .where('project_id', '=', alert.project_id)
    .where('type', '=', alert.type)
    .where('last_triggered', '=', alert.triggered_at)
    .execute();
  await tx.updateTable('alert_outbox').set({ state: 'undelivered' }).where('id', '=', alertId).execute();
  // The alerts an undelivered digest stood for wait for the next one.
  await tx.updateTable('alert_outbox').set({ state: OUTBOX_HELD, digest_id: null }).where('digest_id', '=', alertId).where('state', '=', 'digested').execute();
  return true;
}
