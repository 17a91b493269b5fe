// Crash-spike check benchmark: the periodic check (src/alerts/spike.ts) over 1 000
// projects with a week of hourly data each, every project with an enabled rule and a
// webhook channel. Goal (issue #27): at most 1 s on SQLite.
//
//   npm run build && node bench/crash-spike.mjs [--postgres] [--projects 1000] [--runs 5]
//
// Two shapes of data: "typical" (a few crashes an hour, 20 projects spiking now) and
// "worst" (every project has 10+ crashes in the last hour, so the check reads every
// project's 25 hours, and none spikes). Prints the time of each run and the median.
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import { createBenchDatabase } from './lib/db.mjs';
import { migrate } from '../dist/store/database.js';
import { openStore } from '../dist/editions/node/open-store.js';
import { runCrashSpikeCheck } from '../dist/alerts/spike.js';

const HOUR = 3_600_000;
const { values } = parseArgs({
  options: {
    postgres: { type: 'boolean', default: false },
    projects: { type: 'string', default: '1000' },
    runs: { type: 'string', default: '5' },
  },
});
const PROJECTS = Number(values.projects);
const RUNS = Number(values.runs);
const RELEASES = ['1.0.0', '1.1.0'];

function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

async function insertChunked(db, table, rows, size = 500) {
  for (let i = 0; i < rows.length; i += size)
    await db
      .insertInto(table)
      .values(rows.slice(i, i + size))
      .execute();
}

async function seed(store, now, shape) {
  const db = store.db;
  const random = rng(shape === 'typical' ? 1 : 2);
  const current = Math.floor(now / HOUR) * HOUR;
  await db.transaction().execute(async (tx) => {
    const projects = Array.from({ length: PROJECTS }, (_, i) => ({
      slug: `p${i}`,
      name: `Project ${i}`,
      platform: 'other',
      dsn_key: `${i}`.padStart(32, '0'),
      sample_keep_first: 100,
      sample_rate: 1,
      daily_quota: 0,
      created_at: now,
    }));
    await insertChunked(tx, 'projects', projects);
    const ids = (await tx.selectFrom('projects').select('id').orderBy('id').execute()).map((r) => Number(r.id));
    const rules = [];
    for (const id of ids)
      for (const type of ['new_issue', 'regression', 'crash_spike'])
        rules.push({ project_id: id, type, enabled: 1, cooldown_minutes: 60, last_triggered: null });
    await insertChunked(tx, 'alert_rules', rules);
    await insertChunked(
      tx,
      'alert_channels',
      ids.map((id) => ({
        project_id: id,
        kind: 'webhook',
        config: JSON.stringify({ url: 'http://93.184.216.34/hook' }),
        created_at: now,
      })),
    );
    const hourly = [];
    ids.forEach((id, n) => {
      for (let h = 0; h < 24 * 7; h++) {
        const bucket = current - h * HOUR;
        for (const release of RELEASES) {
          let crashes;
          if (shape === 'worst') crashes = 10 + Math.floor(random() * 5);
          else crashes = Math.floor(random() * 3);
          if (shape === 'typical' && n < 20 && h <= 1) crashes = 15;
          const events = crashes * 4 + Math.floor(random() * 20);
          hourly.push({
            project_id: id,
            bucket,
            release,
            events,
            crashes,
            errors: events - crashes,
            fatal: crashes,
            error: events - crashes,
            warning: 0,
            info: 0,
            debug: 0,
          });
        }
      }
    });
    await insertChunked(tx, 'project_hourly', hourly, 2000);
  });
  return PROJECTS * 24 * 7 * RELEASES.length;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

for (const shape of ['typical', 'worst']) {
  const database = await createBenchDatabase(values.postgres ? 'postgres' : 'sqlite');
  const store = await openStore(database.url);
  try {
    await migrate(store);
    const now = Date.now();
    const t0 = performance.now();
    const rows = await seed(store, now, shape);
    const seeded = performance.now() - t0;
    if (store.dialect === 'postgres') await sql`analyze`.execute(store.db);
    const times = [];
    let last;
    for (let i = 0; i < RUNS; i++) {
      // Recorded alerts stay pending (no dispatcher): each run sees the same rules.
      const start = performance.now();
      last = await runCrashSpikeCheck(store, now + i);
      times.push(performance.now() - start);
    }
    console.log(
      `${database.kind} ${shape}: ${PROJECTS} projects, ${rows} project_hourly rows (seeded in ${(seeded / 1000).toFixed(1)} s); ` +
        `${last.candidates} candidates, ${last.spikes.length} spikes; check ms: ${times.map((t) => t.toFixed(1)).join(', ')} (median ${median(times).toFixed(1)})`,
    );
  } finally {
    await store.close();
    await database.drop();
  }
}
