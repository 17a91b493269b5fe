// Crash-free users per release inside workerd: the Worker's own app takes session
// envelopes (the Node SDK's shape) into D1, and the releases list and release detail
// count distinct session `did`s from the sessions_release_users index, as on the server.
import { env } from 'cloudflare:workers';
import type { Hono } from 'hono';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildWorkerDeps, type WorkerEnv } from '../../../../src/editions/workers/deps.js';
import { withoutQueue } from './direct-path.js';
import { createApp } from '../../../../src/editions/app.js';
import type { Store } from '../../../../src/store/database.js';
import { migrate } from '../../../../src/store/migrate.js';
import { createProject, PROJECT_DEFAULTS } from '../../../../src/store/projects.js';

let app: Hono;
let store: Store;

beforeAll(async () => {
  const deps = buildWorkerDeps({ ...withoutQueue(env as unknown as WorkerEnv), RATE_LIMIT: '0', LOG_LEVEL: 'silent' });
  store = deps.store;
  app = createApp(deps);
  await migrate(store);
});

const hex32 = (i: number) => `d${i.toString(16).padStart(8, '0')}`.padEnd(32, '0');

function sessionItem(
  sid: string,
  did: string | null,
  started: string,
  status: string,
  init: boolean,
  release: string,
): string {
  const payload = {
    sid,
    ...(did !== null ? { did } : {}),
    init,
    started,
    timestamp: started,
    status,
    errors: status === 'ok' ? 0 : 1,
    attrs: { release, environment: 'production' },
  };
  return `{"type":"session"}\n${JSON.stringify(payload)}`;
}

describe('crash-free users in workerd', () => {
  it('counts distinct users and users with a crashed session per release', async () => {
    const now = Date.now();
    const p = await createProject(store.db, { ...PROJECT_DEFAULTS, slug: `users-${now}`, name: 'users' }, now);
    const started = new Date(now - 2 * 3_600_000).toISOString();
    // Two sessions of u1 (one crashes by a later update), one of u2, one without a did;
    // rel@2 has a session without a did only.
    const updates: [number, string | null, string, boolean, string][] = [
      [1, 'u1', 'exited', true, 'rel@1'],
      [2, 'u1', 'ok', true, 'rel@1'],
      [2, 'u1', 'crashed', false, 'rel@1'],
      [3, 'u2', 'exited', true, 'rel@1'],
      [4, null, 'crashed', true, 'rel@1'],
      [5, null, 'exited', true, 'rel@2'],
    ];
    for (const [i, did, status, init, release] of updates) {
      const body = `{"sent_at":"${new Date(now).toISOString()}"}\n${sessionItem(hex32(i), did, started, status, init, release)}\n`;
      const res = await app.fetch(
        new Request(`http://worker/api/${p.id}/envelope/?sentry_key=${p.dsn_key}`, { method: 'POST', body }),
      );
      expect(res.status).toBe(200);
    }
    const list = (await (
      await app.fetch(new Request(`http://worker/api/projects/${p.slug}/releases?days=1`))
    ).json()) as { releases: any[] };
    const by = new Map(list.releases.map((r) => [r.release, r]));
    expect(by.get('rel@1')).toMatchObject({
      sessions: { total: 4, crashed: 2 },
      users: { total: 2, crashed: 1 },
      crash_free_users_rate: 0.5,
    });
    expect(by.get('rel@2')).toMatchObject({
      sessions: { total: 1 },
      users: { total: 0, crashed: 0 },
      crash_free_users_rate: null,
    });
    const detail = (await (
      await app.fetch(new Request(`http://worker/api/projects/${p.slug}/releases/rel@1?days=1`))
    ).json()) as { release: any };
    expect(detail.release).toMatchObject({ users: { total: 2, crashed: 1 }, crash_free_users_rate: 0.5 });
  });
});
