// Cron monitor check benchmark: the minutely check (runMonitorCheck, src/monitors/store.ts)
// over 10 000 monitors in 100 projects, with crontabs in several time zones and
// intervals. Goal (issue #43): at most 1 s on SQLite.
//
//   npm run build && node bench/monitors.mjs [--postgres] [--monitors 10000] [--runs 5]
//
// Three shapes: "none due" (the usual minute: the check reads the index and finds
// nothing), "typical" (1 % missed and 50 runs timed out), "worst" (every monitor missed
// at once: each gets its next time computed, a missed check-in and an alert). Before each
// run the due monitors are made due again (not timed). Prints each run and the median.
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import { createBenchDatabase } from './lib/db.mjs';
import { migrate } from '../dist/store/database.js';
import { openStore } from '../dist/editions/node/open-store.js';
import { runMonitorCheck } from '../dist/monitors/store.js';

const MIN = 60_000;
const { values } = parseArgs({
  options: {
    postgres: { type: 'boolean', default: false },
    monitors: { type: 'string', default: '10000' },
    runs: { type: 'string', default: '5' },
  },
});
const MONITORS = Number(values.monitors);
const RUNS = Number(values.runs);
const PROJECTS = 100;
const SCHEDULES = [
  ['crontab', '*/5 * * * *', null, 'UTC'],
  ['crontab', '0 * * * *', null, 'Europe/Vienna'],
  ['crontab', '0 3 * * *', null, 'America/New_York'],
  ['crontab', '30 2 * * 1-5', null, 'Asia/Tokyo'],
  ['interval', '10', 'minute', 'UTC'],
  ['interval', '1', 'day', 'UTC'],
];

async function insertChunked(db, table, rows, size = 500) {
  for (let i = 0; i < rows.length; i += size)
    await db
      .insertInto(table)
      .values(rows.slice(i, i + size))
      .execute();
}

async function seed(store, now) {
  const db = store.db;
  await db.transaction().execute(async (tx) => {
    await insertChunked(
      tx,
      'projects',
      Array.from({ length: PROJECTS }, (_, i) => ({
        slug: `p${i}`,
        name: `Project ${i}`,
        platform: 'other',
        dsn_key: `${i}`.padStart(32, '0'),
        sample_keep_first: 100,
        sample_rate: 1,
        daily_quota: 0,
        created_at: now,
      })),
    );
    const ids = (await tx.selectFrom('projects').select('id').orderBy('id').execute()).map((r) => Number(r.id));
    const monitors = Array.from({ length: MONITORS }, (_, i) => {
      const [type, schedule, unit, timezone] = SCHEDULES[i % SCHEDULES.length];
      return {
        project_id: ids[i % PROJECTS],
        slug: `job-${i}`,
        schedule_type: type,
        schedule,
        schedule_unit: unit,
        timezone,
        checkin_margin: 5,
        max_runtime: 30,
        failure_issue_threshold: 1,
        recovery_threshold: 1,
        enabled: 1,
        health: 'ok',
        failures: 0,
        successes: 0,
        last_status: 'ok',
        last_checkin_at: now - 10 * MIN,
        next_expected_at: now + 60 * MIN,
        deadline_at: now + 65 * MIN,
        version: 1,
        claim: null,
        created_at: now - 86_400_000,
        updated_at: now - 10 * MIN,
      };
    });
    await insertChunked(tx, 'monitors', monitors);
  });
}

/** Makes the first `due` monitors missed at `now` and `timedOut` runs past max_runtime; the rest not due. */
async function arrange(store, now, due, timedOut) {
  const db = store.db;
  await db
    .updateTable('monitors')
    .set({ health: 'ok', failures: 0, next_expected_at: now + 60 * MIN, deadline_at: now + 65 * MIN })
    .execute();
  await db.deleteFrom('monitor_checkins').execute();
  await db.deleteFrom('alert_outbox').execute();
  if (due > 0) {
    await db
      .updateTable('monitors')
      .set({ next_expected_at: now - 10 * MIN, deadline_at: now - 5 * MIN })
      .where('id', 'in', db.selectFrom('monitors').select('id').orderBy('id').limit(due))
      .execute();
  }
  if (timedOut > 0) {
    const open = await db
      .selectFrom('monitors')
      .select(['id', 'project_id'])
      .orderBy('id', 'desc')
      .limit(timedOut)
      .execute();
    await insertChunked(
      db,
      'monitor_checkins',
      open.map((m, i) => ({
        project_id: m.project_id,
        monitor_id: m.id,
        check_in_id: `${i}`.padStart(32, 'a'),
        status: 'in_progress',
        environment: null,
        release: null,
        duration_ms: null,
        created_at: now - 40 * MIN,
        updated_at: now - 40 * MIN,
        timeout_at: now - 10 * MIN,
      })),
    );
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const database = await createBenchDatabase(values.postgres ? 'postgres' : 'sqlite');
const store = await openStore(database.url);
try {
  await migrate(store);
  const now = Date.parse('2030-06-03T10:00:00Z');
  await seed(store, now);
  if (store.dialect === 'postgres') await sql`analyze`.execute(store.db);
  for (const [shape, due, timedOut] of [
    ['none due', 0, 0],
    ['typical', Math.round(MONITORS / 100), 50],
    ['worst', MONITORS, 0],
  ]) {
    const times = [];
    const cpu = [];
    let last;
    for (let i = 0; i < RUNS; i++) {
      await arrange(store, now, due, timedOut);
      const start = performance.now();
      const startCpu = process.cpuUsage();
      last = await runMonitorCheck(store, now);
      const used = process.cpuUsage(startCpu);
      times.push(performance.now() - start);
      cpu.push((used.user + used.system) / 1000);
    }
    // On a shared machine the CPU time this process spent is the steadier figure (SQLite
    // runs in the process; PostgreSQL's own CPU is not in it).
    console.log(
      `${database.kind} ${shape}: ${MONITORS} monitors; ${last.missed} missed, ${last.timed_out} timed out, ${last.incidents} alerts; ` +
        `check ms: ${times.map((t) => t.toFixed(1)).join(', ')} (median ${median(times).toFixed(1)}; CPU ms median ${median(cpu).toFixed(1)})`,
    );
  }
} finally {
  await store.close();
  await database.drop();
}
