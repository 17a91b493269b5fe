// Triage inside workerd on D1 (docs/api.md "Issue activity", "Snoozing"): a snooze by
// event count ends in the ingest batch that reaches the count, a time snooze through the
// periodic job's statements, and the activity lists both with the person's changes
// and a comment, through the Worker's own app.
import { env } from 'cloudflare:workers';
import type { Hono } from 'hono';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildWorkerDeps, type WorkerEnv } from '../../../../src/editions/workers/deps.js';
import { createApp } from '../../../../src/editions/app.js';
import type { Store } from '../../../../src/store/database.js';
import { migrate } from '../../../../src/store/migrate.js';
import { createProject, PROJECT_DEFAULTS } from '../../../../src/store/projects.js';
import { endTimeSnoozes } from '../../../../src/triage/snooze.js';
import nodeEvent from '../../../fixtures/sdk-captures/node-event.envelope?raw';
import { withoutQueue } from './direct-path.js';

const FIXTURE_EVENT_ID = '53581e2b976e4b7c89e8cf789073fd8e';

let app: Hono;
let store: Store;

beforeAll(async () => {
  const deps = buildWorkerDeps({
    ...withoutQueue(env as unknown as WorkerEnv),
    RATE_LIMIT: '0',
    LOG_LEVEL: 'silent',
    API_KEYS: '',
  });
  store = deps.store;
  app = createApp(deps);
  await migrate(store);
});

let n = 0;
async function project() {
  n += 1;
  return createProject(store.db, { ...PROJECT_DEFAULTS, slug: `triage${n}-${Date.now()}`, name: `t${n}` }, Date.now());
}
type Project = Awaited<ReturnType<typeof project>>;

const hex32 = (i: number, tag: string) => `${tag}${i.toString(16).padStart(8, '0')}`.padEnd(32, '0');

async function send(p: Project, i: number, tag: string): Promise<void> {
  const res = await app.fetch(
    new Request(`http://worker/api/${p.id}/envelope/?sentry_key=${p.dsn_key}`, {
      method: 'POST',
      body: nodeEvent.replaceAll(FIXTURE_EVENT_ID, hex32(i, tag)),
    }),
  );
  expect(res.status).toBe(200);
}

async function api(path: string, method = 'GET', body?: unknown): Promise<{ status: number; body: any }> {
  const res = await app.fetch(
    new Request(`http://worker${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
  );
  return { status: res.status, body: res.status === 204 ? null : await res.json() };
}

describe('triage on D1 inside workerd', () => {
  it('ends a snooze by count in the ingest batch that reaches it, and lists the activity', async () => {
    const p = await project();
    await send(p, 0, 'b');
    const [issue] = await store.db.selectFrom('issues').selectAll().where('project_id', '=', p.id).execute();
    const url = `/api/projects/${p.slug}/issues/${issue.fingerprint}`;
    expect((await api(url, 'PATCH', { status: 'ignored', ignore_count: 3 })).body).toMatchObject({
      status: 'ignored',
      ignore_count: 3,
    });
    expect((await api(`${url}/comments`, 'POST', { text: 'snoozed <until> it gets worse' })).status).toBe(201);
    await send(p, 1, 'b');
    await send(p, 2, 'b');
    expect((await api(url)).body).toMatchObject({ status: 'ignored', event_count: 3 });
    await send(p, 3, 'b');
    expect((await api(url)).body).toMatchObject({ status: 'unresolved', event_count: 4, ignore_count: null });
    await send(p, 4, 'b');
    const { activity } = (await api(`${url}/activity`)).body;
    expect(activity.map((a: any) => [a.type, a.actor, a.data])).toEqual([
      ['first_seen', null, { release: 'app@1.0.0' }],
      ['status', 'system', { from: 'unresolved', to: 'ignored', ignore_count: 3 }],
      ['comment', 'system', { text: 'snoozed <until> it gets worse' }],
      ['status', null, { from: 'ignored', to: 'unresolved', reason: 'snooze_ended' }],
    ]);
  });

  it('ends a time snooze through the periodic job once the time has come', async () => {
    const p = await project();
    await send(p, 0, 'c');
    const [issue] = await store.db.selectFrom('issues').selectAll().where('project_id', '=', p.id).execute();
    const url = `/api/projects/${p.slug}/issues/${issue.fingerprint}`;
    const until = Date.now() + 3_600_000;
    expect((await api(url, 'PATCH', { status: 'ignored', ignore_until: new Date(until).toISOString() })).status).toBe(
      200,
    );
    await endTimeSnoozes(store, until - 1);
    expect((await api(url)).body.status).toBe('ignored');
    expect(await endTimeSnoozes(store, until)).toBeGreaterThanOrEqual(1);
    expect((await api(url)).body.status).toBe('unresolved');
    const { activity } = (await api(`${url}/activity`)).body;
    expect(activity.at(-1)).toMatchObject({
      type: 'status',
      actor: null,
      created_at: new Date(until).toISOString(),
      data: { reason: 'snooze_ended' },
    });
  });
});
