// Cron monitors inside the Workers runtime on D1: an envelope check-in whose crontab is
// in a time zone (cron-parser and Intl in workerd), the legacy cron route, the
// every-minute cron recording the miss and its alert, and two checks at once (two
// isolates) recording one miss: every monitor write is one D1 batch whose statements
// take effect only for the writer whose version matched.
import { env } from 'cloudflare:workers';
import type { Hono } from 'hono';
import { beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../src/clock.js';
import type { AppDeps } from '../../../../src/context.js';
import { RESYMBOLICATE_CRON, runCron } from '../../../../src/editions/workers/crons.js';
import { buildWorkerDeps, type WorkerEnv } from '../../../../src/editions/workers/deps.js';
import { withoutQueue } from './direct-path.js';
import { createApp } from '../../../../src/editions/app.js';
import { runMonitorCheck } from '../../../../src/monitors/store.js';
import { migrate } from '../../../../src/store/migrate.js';
import { createProject, PROJECT_DEFAULTS } from '../../../../src/store/projects.js';

const T0 = Date.parse('2030-06-03T09:59:30Z');
let deps: AppDeps;
let app: Hono;
const clock = new ManualClock(T0);

beforeAll(async () => {
  deps = {
    ...buildWorkerDeps({ ...withoutQueue(env as unknown as WorkerEnv), RATE_LIMIT: '0', LOG_LEVEL: 'silent' }),
    clock,
  };
  app = createApp(deps);
  await migrate(deps.store);
});

let n = 0;
async function project() {
  n += 1;
  return createProject(deps.store.db, { ...PROJECT_DEFAULTS, slug: `mon${n}-${Date.now()}`, name: `mon${n}` }, T0);
}

async function checkIn(p: { id: number; dsn_key: string }, payload: object): Promise<number> {
  const body = `{}\n{"type":"check_in"}\n${JSON.stringify(payload)}\n`;
  const res = await app.fetch(
    new Request(`http://worker/api/${p.id}/envelope/?sentry_key=${p.dsn_key}`, { method: 'POST', body }),
  );
  await res.arrayBuffer();
  return res.status;
}

const monitors = (projectId: number) =>
  deps.store.db.selectFrom('monitors').selectAll().where('project_id', '=', projectId).execute();
const checkins = (projectId: number) =>
  deps.store.db.selectFrom('monitor_checkins').selectAll().where('project_id', '=', projectId).orderBy('id').execute();

describe('cron monitors on D1', () => {
  it('a check-in in a time zone, the legacy route, then the minutely cron records the miss and its alert', async () => {
    clock.set(T0);
    const p = await project();
    const config = {
      schedule: { type: 'crontab', value: '0 12 * * *' },
      timezone: 'Europe/Vienna',
      checkin_margin: 10,
    };
    expect(
      await checkIn(p, {
        check_in_id: crypto.randomUUID(),
        monitor_slug: 'noon',
        status: 'ok',
        monitor_config: config,
      }),
    ).toBe(200);
    // 12:00 in Vienna in June is 10:00 UTC.
    expect((await monitors(p.id))[0]).toMatchObject({
      slug: 'noon',
      next_expected_at: Date.parse('2030-06-03T10:00:00Z'),
      deadline_at: Date.parse('2030-06-03T10:10:00Z'),
    });
    const legacy = await app.fetch(new Request(`http://worker/api/${p.id}/cron/noon/${p.dsn_key}/?status=in_progress`));
    expect(legacy.status).toBe(202);
    const wrong = await app.fetch(new Request(`http://worker/api/${p.id}/cron/noon/${'0'.repeat(32)}/?status=ok`));
    expect(wrong.status).toBe(401);

    clock.set(Date.parse('2030-06-03T10:10:00Z'));
    await runCron(RESYMBOLICATE_CRON, deps);
    expect((await checkins(p.id)).map((c) => c.status)).toEqual(['ok', 'in_progress', 'missed']);
    const outbox = await deps.store.db
      .selectFrom('alert_outbox')
      .select(['type', 'payload', 'state'])
      .where('project_id', '=', p.id)
      .execute();
    // No channel: the cron's pass took the alert and set it aside.
    expect(outbox.map((o) => [o.type, JSON.parse(o.payload).reason, o.state])).toEqual([
      ['monitor', 'missed', 'no_channel'],
    ]);
  });

  it('two checks at once record each miss once', async () => {
    clock.set(T0);
    const p = await project();
    for (let i = 0; i < 5; i++) {
      expect(
        await checkIn(p, {
          check_in_id: crypto.randomUUID(),
          monitor_slug: `job-${i}`,
          status: 'ok',
          monitor_config: { schedule: { type: 'interval', value: 1, unit: 'hour' } },
        }),
      ).toBe(200);
    }
    const at = T0 + 2 * 3_600_000;
    const [a, b] = await Promise.all([runMonitorCheck(deps.store, at), runMonitorCheck(deps.store, at)]);
    expect(a.missed + b.missed).toBe(5);
    expect((await checkins(p.id)).filter((c) => c.status === 'missed')).toHaveLength(5);
    const alerts = await deps.store.db
      .selectFrom('alert_outbox')
      .select('id')
      .where('project_id', '=', p.id)
      .where('type', '=', 'monitor')
      .execute();
    expect(alerts).toHaveLength(5);
  });
});
