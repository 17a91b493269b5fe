// Alert writes on D1 from inside workerd: channel deletion (the channel and its removal
// from the rules limited to it), an alert's dispatch (outbox claim, cooldown, deliveries),
// a digest and a delivery failed for good each commit together (one `Store.atomic`, a D1
// `db.batch()`), where a Kysely transaction on D1 would run them one statement at a time.
import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  addDefaultRules,
  claimDeliveries,
  createChannel,
  deleteChannel,
  dispatchAlert,
  markDelivered,
  markFailed,
  recordAlert,
  sendDigest,
} from '../../../../src/alerts/store.js';
import type { Store } from '../../../../src/store/database.js';
import { openD1Store, type D1Binding } from '../../../../src/store/d1.js';
import { migrate } from '../../../../src/store/migrate.js';
import { createProject, PROJECT_DEFAULTS } from '../../../../src/store/projects.js';

const binding = (env as unknown as { DB: D1Binding }).DB;
let store: Store;

beforeAll(async () => {
  store = openD1Store(binding);
  await migrate(store);
});

/** A project with a channel and every rule limited to it. */
async function projectWithChannel(slug: string): Promise<{ projectId: number; channelId: number }> {
  const p = await createProject(store.db, { ...PROJECT_DEFAULTS, slug, name: slug }, 1_000, [addDefaultRules]);
  const channel = await createChannel(
    store.db,
    p.id,
    { kind: 'webhook', config: { url: 'https://example.com/hook' } } as never,
    1_000,
  );
  await store.db
    .insertInto('alert_rules')
    .values({
      project_id: p.id,
      type: 'new_issue',
      enabled: 1,
      cooldown_minutes: 0,
      last_triggered: null,
      min_level: null,
    })
    .onConflict((oc) => oc.doNothing())
    .execute();
  await store.db
    .updateTable('alert_rules')
    .set({ channels: JSON.stringify([Number(channel.id)]) })
    .where('project_id', '=', p.id)
    .execute();
  return { projectId: p.id, channelId: Number(channel.id) };
}

const channelsOf = async (projectId: number) =>
  (await store.db.selectFrom('alert_rules').select('channels').where('project_id', '=', projectId).execute()).map(
    (r) => r.channels,
  );

describe('deleting an alert channel on D1', () => {
  it('takes the channel out of the rules limited to it', async () => {
    const { projectId, channelId } = await projectWithChannel('alerts-delete');
    expect(await deleteChannel(store, projectId, channelId)).toBe(true);
    expect(new Set(await channelsOf(projectId))).toEqual(new Set(['[]']));
    expect(await deleteChannel(store, projectId, channelId)).toBe(false);
  });

  it('deletes nothing when the rules cannot be written: the channel and the rules commit together', async () => {
    const { projectId, channelId } = await projectWithChannel('alerts-atomic');
    // A database that refuses the rules' update: the channel must stay, not vanish from under the rules.
    const refusing: D1Binding = {
      prepare(query) {
        if (/^update "alert_rules"/i.test(query)) throw new Error('refused');
        return binding.prepare(query);
      },
      batch: (statements) => binding.batch(statements),
    };
    await expect(deleteChannel(openD1Store(refusing), projectId, channelId)).rejects.toThrow('refused');
    expect(await store.db.selectFrom('alert_channels').select('id').where('id', '=', channelId).execute()).toHaveLength(
      1,
    );
    expect(new Set(await channelsOf(projectId))).toEqual(new Set([JSON.stringify([channelId])]));
  });
});

/** A D1 binding that refuses to prepare the statements `refuse` matches (the batch then never runs). */
function refusing(refuse: RegExp): D1Binding {
  return {
    prepare(query) {
      if (refuse.test(query)) throw new Error('refused');
      return binding.prepare(query);
    },
    batch: (statements) => binding.batch(statements),
  };
}

const outboxStates = async (projectId: number) =>
  (
    await store.db
      .selectFrom('alert_outbox')
      .select(['id', 'state', 'digest_id'])
      .where('project_id', '=', projectId)
      .orderBy('id')
      .execute()
  ).map((r) => [r.state, r.digest_id === null ? null : Number(r.digest_id)]);
const lastTriggered = async (projectId: number) =>
  Number(
    (
      await store.db
        .selectFrom('alert_rules')
        .select('last_triggered')
        .where('project_id', '=', projectId)
        .where('type', '=', 'new_issue')
        .executeTakeFirstOrThrow()
    ).last_triggered ?? -1,
  );
const deliveries = async (projectId: number) =>
  (
    await store.db
      .selectFrom('alert_deliveries')
      .select(['alert_id', 'state'])
      .where('project_id', '=', projectId)
      .orderBy('id')
      .execute()
  ).map((r) => [Number(r.alert_id), r.state]);
const pendingIds = async (projectId: number) =>
  (
    await store.db.selectFrom('alert_outbox').select('id').where('project_id', '=', projectId).orderBy('id').execute()
  ).map((r) => Number(r.id));

describe('dispatching alerts on D1', () => {
  it('claims the outbox row, the cooldown and the deliveries in one batch, or none of them', async () => {
    const { projectId } = await projectWithChannel('alerts-dispatch');
    await store.db
      .updateTable('alert_rules')
      .set({ cooldown_minutes: 60 })
      .where('project_id', '=', projectId)
      .execute();
    await recordAlert(store.db, projectId, 'new_issue', { title: 'a' }, 5_000);
    const [id] = await pendingIds(projectId);
    // The deliveries' insert cannot be prepared: nothing of the dispatch may land (on a
    // statement-by-statement transaction the outbox row would stay `claimed`).
    await expect(
      dispatchAlert(openD1Store(refusing(/^insert into "alert_deliveries"/i)), id, 10_000, 10_000),
    ).rejects.toThrow('refused');
    expect(await outboxStates(projectId)).toEqual([['pending', null]]);
    expect(await lastTriggered(projectId)).toBe(-1);
    expect(await deliveries(projectId)).toEqual([]);

    expect(await dispatchAlert(store, id, 10_000, 10_000)).toBe('sent');
    expect(await dispatchAlert(store, id, 10_000, 10_000)).toBe('taken');
    expect(await outboxStates(projectId)).toEqual([['sent', null]]);
    expect(await lastTriggered(projectId)).toBe(10_000);
    expect(await deliveries(projectId)).toEqual([[id, 'pending']]);

    // Within the cooldown the next alert is held; once it is over, the digest takes it.
    await recordAlert(store.db, projectId, 'new_issue', { title: 'b' }, 11_000);
    await recordAlert(store.db, projectId, 'new_issue', { title: 'c' }, 12_000);
    const [, b, c] = await pendingIds(projectId);
    expect(await dispatchAlert(store, b, 11_000, 11_000)).toBe('held');
    expect(await dispatchAlert(store, c, 12_000, 12_000)).toBe('held');
    const after = 10_000 + 60 * 60_000;
    await expect(
      sendDigest(openD1Store(refusing(/^insert into "alert_deliveries"/i)), projectId, 'new_issue', after, after),
    ).rejects.toThrow('refused');
    expect(await outboxStates(projectId)).toEqual([
      ['sent', null],
      ['held', null],
      ['held', null],
    ]);
    expect(await lastTriggered(projectId)).toBe(10_000);
    expect(await sendDigest(store, projectId, 'new_issue', after, after)).toBe('sent');
    const digestId = (await pendingIds(projectId))[3];
    expect(await outboxStates(projectId)).toEqual([
      ['sent', null],
      ['digested', digestId],
      ['digested', digestId],
      ['sent', null],
    ]);
    expect(await lastTriggered(projectId)).toBe(after);
    expect(await sendDigest(store, projectId, 'new_issue', after, after)).toBe('taken');

    // The digest's only delivery fails for good: the cooldown goes back to the single
    // alert's, the digest is undelivered and its alerts wait for the next one.
    const [first] = await claimDeliveries(store, 'w', after, after + 1_000, 10, []);
    expect(first.alert_id).toBe(id);
    expect(await markDelivered(store.db, first, 'w', 200, after)).toBe(true);
    const claimed = await claimDeliveries(store, 'w', after, after + 1_000, 10, []);
    expect(claimed.map((d) => d.alert_id)).toEqual([digestId]);
    expect(await markFailed(store, claimed[0], 'w', 500, 'boom')).toEqual({ gaveBack: true });
    expect(await outboxStates(projectId)).toEqual([
      ['sent', null],
      ['held', null],
      ['held', null],
      ['undelivered', null],
    ]);
    expect(await lastTriggered(projectId)).toBe(10_000);
  });
});
