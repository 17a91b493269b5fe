// The alert tables (migration 012): rules, channels, the outbox and deliveries,
// and the claims that keep several processes on one database from sending an alert
// twice. Every claim is conditional SQL, so the database decides who wins: an outbox
// row is taken by the process that moves it out of `pending`, a rule's cooldown by the
// process whose compare-and-set of `last_triggered` matches, a delivery by the process
// that sets its lease. Writes that commit together are one `Store.atomic` unit, built
// before it runs (one `db.batch()` on D1).
import { sql, type ExpressionBuilder, type Kysely } from 'kysely';
import type { Store } from '../store/database.js';
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
    .values(
      ALERT_TYPES.map((type) => ({
        project_id: projectId,
        type,
        enabled: RULE_DEFAULTS.enabled ? 1 : 0,
        cooldown_minutes: RULE_DEFAULTS.cooldown_minutes,
        last_triggered: null,
      })),
    )
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
    if (unknown.length > 0)
      throw new AlertInputError(
        `channels: ${unknown.join(', ')} ${unknown.length > 1 ? 'are not channels' : 'is not a channel'} of this project`,
      );
  }
  await insertDefaultRules(db, projectId);
  const set: {
    enabled?: number;
    cooldown_minutes?: number;
    environments?: string;
    min_level?: string | null;
    channels?: string;
  } = {};
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
  if (row.kind === 'webhook')
    shown = { url: config.url, has_secret: typeof config.secret === 'string' && config.secret !== '' };
  else if (row.kind === 'telegram') shown = { chat_id: config.chat_id };
  else if (row.kind === 'email') shown = { to: config.to };
  else shown = { host: hostOf(config.url) };
  return {
    id: Number(row.id),
    kind: row.kind,
    config: shown,
    created_at: new Date(Number(row.created_at)).toISOString(),
  };
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
  return db
    .selectFrom('alert_channels')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('id', '=', id)
    .executeTakeFirst();
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
export async function deleteChannel(
  store: Pick<Store, 'db' | 'atomic'>,
  projectId: number,
  id: number,
): Promise<boolean> {
  if (!Number.isSafeInteger(id) || id <= 0) return false;
  const db = store.db;
  const rules = await db
    .selectFrom('alert_rules')
    .select(['type', 'channels'])
    .where('project_id', '=', projectId)
    .where('channels', '<>', '[]')
    .execute();
  const statements = [
    db.deleteFrom('alert_channels').where('project_id', '=', projectId).where('id', '=', id).returning('id').compile(),
  ];
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
        .where(({ not, exists, selectFrom }) =>
          not(exists(selectFrom('alert_channels').select('id').where('id', '=', id))),
        )
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
    .select([
      'd.id',
      'd.type',
      'd.channel_id',
      'd.state',
      'd.attempts',
      'd.last_error',
      'd.created_at',
      'd.sent_at',
      'o.payload',
    ])
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

function deliveryIssues(payload: string | null): {
  digest: boolean;
  issue_count: number;
  issues: { fingerprint: string; title: string }[];
} {
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
export async function recordAlert(
  db: Db,
  projectId: number,
  type: AlertType,
  payload: object,
  now: number,
): Promise<void> {
  await db
    .insertInto('alert_outbox')
    .values({
      project_id: projectId,
      type,
      issue_id: null,
      payload: JSON.stringify(payload),
      state: OUTBOX_PENDING,
      created_at: now,
    })
    .execute();
}

export async function pendingAlertIds(db: Db, limit: number): Promise<number[]> {
  const rows = await db
    .selectFrom('alert_outbox')
    .select('id')
    .where('state', '=', OUTBOX_PENDING)
    .where('type', '!=', ASSIGNEE_FEEDBACK)
    .orderBy('id')
    .limit(limit)
    .execute();
  return rows.map((r) => Number(r.id));
}

/** Assignee emails recorded and not yet taken (src/alerts/assignee.ts), oldest first. */
export async function pendingAssigneeMails(
  db: Db,
  limit: number,
): Promise<{ id: number; issue_id: number | null; payload: string }[]> {
  const rows = await db
    .selectFrom('alert_outbox')
    .select(['id', 'issue_id', 'payload'])
    .where('state', '=', OUTBOX_PENDING)
    .where('type', '=', ASSIGNEE_FEEDBACK)
    .orderBy('id')
    .limit(limit)
    .execute();
  return rows.map((r) => ({
    id: Number(r.id),
    issue_id: r.issue_id === null ? null : Number(r.issue_id),
    payload: r.payload,
  }));
}

/** Takes a recorded assignee email for this process; false when another took it first. */
export async function claimAssigneeMail(store: Store, id: number): Promise<boolean> {
  const [result] = await store.atomic([
    store.db
      .updateTable('alert_outbox')
      .set({ state: 'claimed' })
      .where('id', '=', id)
      .where('state', '=', OUTBOX_PENDING)
      .returning('id')
      .compile(),
  ]);
  return (result?.rows.length ?? 0) > 0;
}

/** Records how a claimed assignee email ended. */
export async function finishAssigneeMail(
  store: Store,
  id: number,
  state: AssigneeMailState,
  at: number,
): Promise<void> {
  await store.atomic([
    store.db.updateTable('alert_outbox').set({ state, triggered_at: at }).where('id', '=', id).compile(),
  ]);
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
  return {
    title: row.title,
    fingerprint: row.fingerprint,
    projectSlug: row.slug,
    projectName: row.project_name,
    assigneeName: row.user_name,
    to: row.email,
  };
}

export type AlertOutcome = 'sent' | 'taken' | 'disabled' | 'no_channel' | 'held' | 'filtered';

type AtomicStore = Pick<Store, 'db' | 'atomic'>;

/** The rule of a type with its filters, read before the statements that act on it are built. */
async function ruleFor(db: Db, projectId: number, type: string) {
  await insertDefaultRules(db, projectId);
  const rule = await db
    .selectFrom('alert_rules')
    .select(['enabled', 'cooldown_minutes', 'last_triggered', 'environments', 'min_level', 'channels'])
    .where('project_id', '=', projectId)
    .where('type', '=', type)
    .executeTakeFirstOrThrow();
  return {
    ...rule,
    filters: storedRuleFilters(rule),
    prev: rule.last_triggered === null ? null : Number(rule.last_triggered),
  };
}

/** The channels a rule sends to, of those the project has now. */
async function channelsFor(
  db: Db,
  projectId: number,
  rule: { filters: Parameters<typeof ruleChannels>[0] },
): Promise<number[]> {
  const all = await db
    .selectFrom('alert_channels')
    .select('id')
    .where('project_id', '=', projectId)
    .orderBy('id')
    .execute();
  return ruleChannels(
    rule.filters,
    all.map((c) => Number(c.id)),
  );
}

/**
 * A value no committed row holds: the outbox row a unit of statements claims carries it
 * as its state until the unit's last statement, so the statements after the claim join
 * on it ("this unit won") without reading an answer in code. Never committed.
 */
function claimToken(): string {
  return `claiming:${crypto.randomUUID()}`;
}

/**
 * Takes the rule's row lock first (a no-op write), so on PostgreSQL two units claiming
 * one rule's cooldown run one after the other and the second sees the first's outcome.
 */
function lockRule(db: Db, projectId: number, type: string) {
  return db
    .updateTable('alert_rules')
    .set((eb) => ({ last_triggered: eb.ref('last_triggered') }))
    .where('project_id', '=', projectId)
    .where('type', '=', type)
    .compile();
}

/**
 * The cooldown compare-and-set as a condition: the rule is enabled, nobody moved
 * last_triggered since it was read as `prev`, and its cooldown is over at `now`.
 */
function cooldownOpen(db: Db, projectId: number, type: string, prev: number | null, now: number) {
  return db
    .selectFrom('alert_rules as r')
    .select('r.project_id')
    .where('r.project_id', '=', projectId)
    .where('r.type', '=', type)
    .where('r.enabled', '=', 1)
    .where((eb) =>
      prev === null
        ? eb('r.last_triggered', 'is', null)
        : eb.and([
            eb('r.last_triggered', '=', prev),
            eb(sql<number>`r.last_triggered + r.cooldown_minutes * 60000`, '<=', now),
          ]),
    );
}

/** The outbox row this unit claimed (its state is the unit's token). */
function claimedRow(db: Db, projectId: number, type: string, token: string) {
  return db
    .selectFrom('alert_outbox as t')
    .where('t.project_id', '=', projectId)
    .where('t.type', '=', type)
    .where('t.state', '=', token);
}

/** Moves the rule's last_triggered to `now` when this unit claimed its outbox row. */
function takeCooldown(db: Db, projectId: number, type: string, token: string, now: number) {
  return db
    .updateTable('alert_rules')
    .set({ last_triggered: now })
    .where('project_id', '=', projectId)
    .where('type', '=', type)
    .where(({ exists }) => exists(claimedRow(db, projectId, type, token).select('t.id')))
    .compile();
}

/** One pending delivery per channel of `channelIds` the project still has, for the outbox row this unit claimed. */
function insertDeliveries(
  db: Db,
  projectId: number,
  type: string,
  token: string,
  channelIds: number[],
  now: number,
  wallNow: number,
) {
  return db
    .insertInto('alert_deliveries')
    .columns(['project_id', 'alert_id', 'channel_id', 'type', 'state', 'attempts', 'created_at', 'next_attempt_at'])
    .expression(
      claimedRow(db, projectId, type, token)
        .innerJoin('alert_channels as c', 'c.project_id', 't.project_id')
        .where('c.id', 'in', channelIds)
        .select([
          't.project_id',
          't.id',
          'c.id as channel_id',
          't.type',
          sql<string>`'pending'`.as('state'),
          sql<number>`0`.as('attempts'),
          sql<number>`cast(${now} as bigint)`.as('created_at'),
          sql<number>`cast(${wallNow} as bigint)`.as('next_attempt_at'),
        ])
        .orderBy('c.id'),
    )
    .compile();
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
 * creates one pending delivery per channel of the rule. The rule and channels are read
 * first; the writes are one `Store.atomic` unit (one `db.batch()` on D1) whose
 * statements decide in SQL: the outbox row is taken only while still pending, and it is
 * sent only when the cooldown compare-and-set holds, else held for the rule's next
 * digest (sendDueDigests). `taken` when another process got it first.
 */
export async function dispatchAlert(
  store: AtomicStore,
  alertId: number,
  now: number,
  wallNow: number,
): Promise<AlertOutcome> {
  const db = store.db;
  const alert = await db
    .selectFrom('alert_outbox')
    .select(['project_id', 'type', 'payload', 'state'])
    .where('id', '=', alertId)
    .executeTakeFirst();
  if (!alert || alert.state !== OUTBOX_PENDING) return 'taken';
  const projectId = Number(alert.project_id);
  const type = alert.type;
  const pending = () => db.updateTable('alert_outbox').where('id', '=', alertId).where('state', '=', OUTBOX_PENDING);
  const setAside = async (state: 'disabled' | 'filtered' | 'no_channel'): Promise<AlertOutcome> => {
    const [r] = await store.atomic([
      pending().set({ state, triggered_at: null, prev_triggered: null }).returning('id').compile(),
    ]);
    return r.rows.length > 0 ? state : 'taken';
  };
  const rule = await ruleFor(db, projectId, type);
  if (Number(rule.enabled) !== 1) return setAside('disabled');
  if (!ruleLetsThrough(rule.filters, alertCause(alert.payload))) return setAside('filtered');
  const channels = await channelsFor(db, projectId, rule);
  if (channels.length === 0) return setAside('no_channel');
  const token = claimToken();
  const [, decided] = await store.atomic([
    lockRule(db, projectId, type),
    pending()
      .set(({ exists }) => ({
        state: sql<string>`case when ${exists(cooldownOpen(db, projectId, type, rule.prev, now))} then ${token} else ${OUTBOX_HELD} end`,
        triggered_at: null,
        prev_triggered: null,
      }))
      .returning('state')
      .compile(),
    takeCooldown(db, projectId, type, token, now),
    insertDeliveries(db, projectId, type, token, channels, now, wallNow),
    db
      .updateTable('alert_outbox')
      .set({ state: 'sent', triggered_at: now, prev_triggered: rule.prev })
      .where('id', '=', alertId)
      .where('state', '=', token)
      .compile(),
  ]);
  const state = (decided.rows[0] as { state?: string } | undefined)?.state;
  if (state === undefined) return 'taken';
  return state === token ? 'sent' : 'held';
}

/**
 * The rules with alerts held back whose cooldown is over at `now` (at most `limit`). Read
 * from the held rows (a partial index keeps them apart), as every dispatcher pass asks.
 */
export async function dueDigests(db: Db, now: number, limit: number): Promise<{ project_id: number; type: string }[]> {
  const rows = await db
    .selectFrom('alert_outbox as o')
    .innerJoin('alert_rules as r', (join) =>
      join.onRef('r.project_id', '=', 'o.project_id').onRef('r.type', '=', 'o.type'),
    )
    .select(['o.project_id', 'o.type'])
    .distinct()
    .where('o.state', '=', OUTBOX_HELD)
    .where((eb) =>
      eb.or([
        eb('r.last_triggered', 'is', null),
        eb(sql<number>`r.last_triggered + r.cooldown_minutes * 60000`, '<=', now),
      ]),
    )
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
 * naming the alerts it stands for, marks those `digested`, and creates its deliveries.
 * The held alerts are read first; the writes are one `Store.atomic` unit whose digest
 * row is inserted only while the cooldown is open and the held alerts are those read,
 * and whose later statements act only when it was. A rule switched off or left without
 * channels meanwhile sets its held alerts aside as a single alert would be.
 */
export async function sendDigest(
  store: AtomicStore,
  projectId: number,
  type: string,
  now: number,
  wallNow: number,
): Promise<DigestOutcome> {
  const db = store.db;
  const rule = await ruleFor(db, projectId, type);
  const held = () =>
    db
      .updateTable('alert_outbox')
      .where('project_id', '=', projectId)
      .where('type', '=', type)
      .where('state', '=', OUTBOX_HELD);
  if (Number(rule.enabled) !== 1) {
    await store.atomic([held().set({ state: 'disabled' }).compile()]);
    return 'disabled';
  }
  const channels = await channelsFor(db, projectId, rule);
  if (channels.length === 0) {
    await store.atomic([held().set({ state: 'no_channel' }).compile()]);
    return 'no_channel';
  }
  const rows = await db
    .selectFrom('alert_outbox')
    .select(['id', 'payload', 'created_at'])
    .where('project_id', '=', projectId)
    .where('type', '=', type)
    .where('state', '=', OUTBOX_HELD)
    .orderBy('id')
    .execute();
  if (rows.length === 0) return 'taken';
  const ids = rows.map((r) => Number(r.id));
  const last = ids[ids.length - 1];
  const idSum = ids.reduce((a, b) => a + b, 0);
  const token = claimToken();
  const payload = JSON.stringify({
    digest: digestFields(rows.map((r) => ({ payload: r.payload, created_at: Number(r.created_at) }))),
  });
  // The held alerts up to the last one read are still exactly those read: none was sent
  // or set aside meanwhile (count and sum of their ids).
  const sameHeld = sql<boolean>`(select count(*) from alert_outbox h where h.project_id = ${projectId} and h.type = ${type} and h.state = ${OUTBOX_HELD} and h.id <= ${last}) = ${ids.length}
    and (select sum(h.id) from alert_outbox h where h.project_id = ${projectId} and h.type = ${type} and h.state = ${OUTBOX_HELD} and h.id <= ${last}) = ${idSum}`;
  const [, digest] = await store.atomic([
    lockRule(db, projectId, type),
    sql`insert into alert_outbox (project_id, type, issue_id, payload, state, created_at, triggered_at, prev_triggered)
      select ${projectId}, ${type}, null, ${payload}, ${token}, ${now}, ${now}, ${rule.prev}
      where exists ${cooldownOpen(db, projectId, type, rule.prev, now)} and ${sameHeld}
      returning id`.compile(db),
    takeCooldown(db, projectId, type, token, now),
    held()
      .set(() => ({ state: 'digested', digest_id: claimedRow(db, projectId, type, token).select('t.id') }))
      .where('id', '<=', last)
      .where(({ exists }) => exists(claimedRow(db, projectId, type, token).select('t.id')))
      .compile(),
    insertDeliveries(db, projectId, type, token, channels, now, wallNow),
    db
      .updateTable('alert_outbox')
      .set({ state: 'sent' })
      .where('project_id', '=', projectId)
      .where('type', '=', type)
      .where('state', '=', token)
      .compile(),
  ]);
  return digest.rows.length > 0 ? 'sent' : 'taken';
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
    db
      .selectFrom('alert_channels')
      .select(['id', 'kind', 'config'])
      .where('id', '=', d.channel_id)
      .where('project_id', '=', d.project_id)
      .executeTakeFirst(),
    d.alert_id === null
      ? Promise.resolve(undefined)
      : db
          .selectFrom('alert_outbox')
          .select(['payload', 'triggered_at'])
          .where('id', '=', d.alert_id)
          .executeTakeFirst(),
  ]);
  return {
    project,
    channel: channel && { id: Number(channel.id), kind: channel.kind, config: channel.config },
    alert: alert && {
      payload: alert.payload,
      triggered_at: alert.triggered_at === null ? null : Number(alert.triggered_at),
    },
  };
}

/** Only the lease holder may settle a delivery; false when its lease was lost meanwhile. */
function held(d: ClaimedDelivery, holder: string) {
  return (eb: any) =>
    eb.and([
      eb('id', '=', d.id),
      eb('claimed_by', '=', holder),
      eb('lease_until', '=', d.lease_until),
      eb('state', '=', 'pending'),
    ]);
}

export async function markDelivered(
  db: Db,
  d: ClaimedDelivery,
  holder: string,
  status: number | null,
  now: number,
): Promise<boolean> {
  const r = await db
    .updateTable('alert_deliveries')
    .set({ state: 'sent', sent_at: now, status, last_error: null, lease_until: null })
    .where(held(d, holder))
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

export async function scheduleRetry(
  db: Db,
  d: ClaimedDelivery,
  holder: string,
  status: number | null,
  error: string,
  nextAttemptAt: number,
): Promise<boolean> {
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
 * returns to what it was, unless another alert has claimed it since. One `Store.atomic`
 * unit whose first statement writes the alert row, so of two processes failing an
 * alert's last two deliveries at once the second waits and sees the first's outcome
 * (PostgreSQL's row lock; SQLite and D1 run one writer at a time).
 */
export async function markFailed(
  store: AtomicStore,
  d: ClaimedDelivery,
  holder: string,
  status: number | null,
  error: string,
): Promise<{ gaveBack: boolean }> {
  const db = store.db;
  const fail = db
    .updateTable('alert_deliveries')
    .set({ state: 'failed', status, last_error: error, lease_until: null })
    .where(held(d, holder))
    .returning('id')
    .compile();
  if (d.alert_id === null) {
    await store.atomic([fail]);
    return { gaveBack: false };
  }
  const alertId = d.alert_id;
  // This unit failed the delivery, none of the alert's is pending or sent, and the alert
  // still stands as sent.
  const lastHope = (eb: ExpressionBuilder<Database, 'alert_outbox' | 'alert_rules'>) =>
    eb.and([
      eb.exists(
        db
          .selectFrom('alert_deliveries as f')
          .select('f.id')
          .where('f.id', '=', d.id)
          .where('f.state', '=', 'failed')
          .where('f.claimed_by', '=', holder),
      ),
      eb.not(
        eb.exists(
          db
            .selectFrom('alert_deliveries as a')
            .select('a.id')
            .where('a.alert_id', '=', alertId)
            .where('a.state', 'in', ['pending', 'sent']),
        ),
      ),
      eb.exists(
        db
          .selectFrom('alert_outbox as s')
          .select('s.id')
          .where('s.id', '=', alertId)
          .where('s.state', '=', 'sent')
          .where('s.triggered_at', 'is not', null),
      ),
    ]);
  const results = await store.atomic([
    db
      .updateTable('alert_outbox')
      .set((eb) => ({ state: eb.ref('state') }))
      .where('id', '=', alertId)
      .compile(),
    fail,
    db
      .updateTable('alert_rules')
      .set((eb) => ({
        last_triggered: eb.selectFrom('alert_outbox as p').select('p.prev_triggered').where('p.id', '=', alertId),
      }))
      .where((eb) =>
        eb.and([
          eb.exists(
            eb
              .selectFrom('alert_outbox as o')
              .select('o.id')
              .where('o.id', '=', alertId)
              .whereRef('o.project_id', '=', 'alert_rules.project_id')
              .whereRef('o.type', '=', 'alert_rules.type')
              .whereRef('o.triggered_at', '=', 'alert_rules.last_triggered'),
          ),
          lastHope(eb as unknown as ExpressionBuilder<Database, 'alert_outbox' | 'alert_rules'>),
        ]),
      )
      .compile(),
    // The alerts an undelivered digest stood for wait for the next one.
    db
      .updateTable('alert_outbox')
      .set({ state: OUTBOX_HELD, digest_id: null })
      .where('digest_id', '=', alertId)
      .where('state', '=', 'digested')
      .where((eb) => lastHope(eb as unknown as ExpressionBuilder<Database, 'alert_outbox' | 'alert_rules'>))
      .compile(),
    db
      .updateTable('alert_outbox')
      .set({ state: 'undelivered' })
      .where('id', '=', alertId)
      .where((eb) => lastHope(eb as unknown as ExpressionBuilder<Database, 'alert_outbox' | 'alert_rules'>))
      .returning('id')
      .compile(),
  ]);
  return { gaveBack: results[4].rows.length > 0 };
}
