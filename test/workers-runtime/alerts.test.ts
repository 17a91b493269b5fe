// Alert channel deletion on D1 from inside workerd: the channel and its removal from the
// rules limited to it commit together (one `Store.atomic`, a D1 `db.batch()`), where a
// Kysely transaction on D1 would run them one statement at a time.
import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import { addDefaultRules, createChannel, deleteChannel } from '../../src/alerts/store.js';
import type { Store } from '../../src/store/database.js';
import { openD1Store, type D1Binding } from '../../src/store/d1.js';
import { migrate } from '../../src/store/migrate.js';
import { createProject, PROJECT_DEFAULTS } from '../../src/store/projects.js';

const binding = (env as unknown as { DB: D1Binding }).DB;
let store: Store;

beforeAll(async () => {
  store = openD1Store(binding);
  await migrate(store);
});

/** A project with a channel and every rule limited to it. */
async function projectWithChannel(slug: string): Promise<{ projectId: number; channelId: number }> {
  const p = await createProject(store.db, { ...PROJECT_DEFAULTS, slug, name: slug }, 1_000, [addDefaultRules]);
  const channel = await createChannel(store.db, p.id, { kind: 'webhook', config: { url: 'https://example.com/hook' } } as never, 1_000);
  await store.db.insertInto('alert_rules').values({ project_id: p.id, type: 'new_issue', enabled: 1, cooldown_minutes: 0, last_triggered: null, min_level: null }).onConflict((oc) => oc.doNothing()).execute();
  await store.db.updateTable('alert_rules').set({ channels: JSON.stringify([Number(channel.id)]) }).where('project_id', '=', p.id).execute();
  return { projectId: p.id, channelId: Number(channel.id) };
}

const channelsOf = async (projectId: number) => (await store.db.selectFrom('alert_rules').select('channels').where('project_id', '=', projectId).execute()).map((r) => r.channels);

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
    expect(await store.db.selectFrom('alert_channels').select('id').where('id', '=', channelId).execute()).toHaveLength(1);
    expect(new Set(await channelsOf(projectId))).toEqual(new Set([JSON.stringify([channelId])]));
  });
});
