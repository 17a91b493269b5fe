// Retention also clears the tables that only grow otherwise: alert deliveries that were
// sent or failed, recorded alerts taken out of the outbox with nothing left to send, and
// the assemble records of uploads, once older than RETENTION_DAYS. A project's latest
// 100 deliveries (what `GET …/alerts/deliveries` lists) stay whatever their age, and so
// do pending deliveries and the alerts they belong to.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listDeliveries } from '../../src/alerts/store.js';
import { runRetention } from '../../src/store/retention.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { createProject } from '../read/support.js';

const DAY = 86_400_000;
const NOW = Date.UTC(2026, 10, 25, 12);
const OLD = NOW - 40 * DAY;
const YOUNG = NOW - 2 * DAY;

describe.each(dialects)('retention of alert and upload records on %s', (dialect) => {
  let t: TestServer;

  beforeAll(async () => {
    t = await startTestServer(dialect, { env: { RATE_LIMIT: '0' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('deletes sent and failed deliveries, finished alerts and assemble records older than RETENTION_DAYS, keeping the listed 100', async () => {
    const db = t.deps.store.db;
    const busy = await createProject(t);
    const quiet = await createProject(t);

    const outbox = async (projectId: number, state: string, createdAt: number) =>
      Number(
        (
          await db
            .insertInto('alert_outbox')
            .values({
              project_id: projectId,
              type: 'new_issue',
              issue_id: null,
              payload: '{}',
              state,
              created_at: createdAt,
              triggered_at: null,
              prev_triggered: null,
            })
            .returning('id')
            .executeTakeFirstOrThrow()
        ).id,
      );
    const oldSent = await outbox(busy.id, 'sent', OLD);
    const oldNoChannel = await outbox(busy.id, 'no_channel', OLD);
    const oldPending = await outbox(busy.id, 'pending', OLD);
    const oldWithPendingDelivery = await outbox(busy.id, 'sent', OLD);
    const youngCooldown = await outbox(busy.id, 'cooldown', YOUNG);

    const delivery = (projectId: number, alertId: number | null, state: string, createdAt: number) => ({
      project_id: projectId,
      alert_id: alertId,
      channel_id: 1,
      type: 'new_issue',
      state,
      attempts: 1,
      last_error: state === 'failed' ? 'HTTP 500' : null,
      status: state === 'sent' ? 200 : 500,
      created_at: createdAt,
      sent_at: state === 'sent' ? createdAt : null,
      next_attempt_at: createdAt,
      lease_until: null,
      claimed_by: null,
    });
    // 105 deliveries of one project: the oldest five are beyond the listed 100; the third of
    // them is still pending (its alert waits for it).
    const busyRows = [
      delivery(busy.id, oldSent, 'sent', OLD),
      delivery(busy.id, oldSent, 'failed', OLD),
      delivery(busy.id, oldWithPendingDelivery, 'pending', OLD),
      delivery(busy.id, null, 'sent', OLD),
      delivery(busy.id, null, 'failed', OLD),
      ...Array.from({ length: 50 }, () => delivery(busy.id, null, 'sent', OLD)),
      ...Array.from({ length: 50 }, () => delivery(busy.id, null, 'failed', YOUNG)),
    ];
    await db.insertInto('alert_deliveries').values(busyRows).execute();
    await db
      .insertInto('alert_deliveries')
      .values([1, 2, 3].map(() => delivery(quiet.id, null, 'sent', OLD)))
      .execute();

    const assembly = (checksum: string, state: string, updatedAt: number) => ({
      project_id: busy.id,
      kind: 'dif',
      checksum,
      state,
      detail: null,
      result: null,
      updated_at: updatedAt,
    });
    await db
      .insertInto('upload_assemblies')
      .values([
        assembly('a'.repeat(40), 'ok', OLD),
        assembly('b'.repeat(40), 'error', OLD),
        assembly('c'.repeat(40), 'ok', YOUNG),
      ])
      .execute();

    const listedBefore = await listDeliveries(db, busy.id);
    const quietBefore = await listDeliveries(db, quiet.id);
    expect(listedBefore).toHaveLength(100);

    const summary = await runRetention(t.deps.store, { now: NOW, retentionDays: 30, batchSize: 3 });
    expect(summary.ran).toBe(true);
    expect(summary.deleted).toMatchObject({ alert_deliveries: 4, alert_outbox: 2, upload_assemblies: 2 });

    expect(await listDeliveries(db, busy.id)).toEqual(listedBefore);
    expect(await listDeliveries(db, quiet.id)).toEqual(quietBefore);
    const busyLeft = await db
      .selectFrom('alert_deliveries')
      .select(['state', 'alert_id'])
      .where('project_id', '=', busy.id)
      .execute();
    expect(busyLeft).toHaveLength(101);
    expect(busyLeft.filter((d) => d.state === 'pending').map((d) => Number(d.alert_id))).toEqual([
      oldWithPendingDelivery,
    ]);

    const alertsLeft = (await db.selectFrom('alert_outbox').select('id').orderBy('id').execute()).map((r) =>
      Number(r.id),
    );
    expect(alertsLeft).toEqual([oldPending, oldWithPendingDelivery, youngCooldown]);
    expect(alertsLeft).not.toContain(oldSent);
    expect(alertsLeft).not.toContain(oldNoChannel);

    const assembliesLeft = await db.selectFrom('upload_assemblies').select('checksum').execute();
    expect(assembliesLeft.map((r) => r.checksum)).toEqual(['c'.repeat(40)]);

    // Nothing more to do on a second run.
    const again = await runRetention(t.deps.store, { now: NOW, retentionDays: 30 });
    expect(again.deleted).toMatchObject({ alert_deliveries: 0, alert_outbox: 0, upload_assemblies: 0 });
  });
});
