// Multiplies a project's ingested events in SQL (bench/dashboard.mjs --amplify K): every
// stored event gets K-1 copies spread over the same six days (new event ids, the same
// issue, payload, user and tags), then the aggregates the pages read are counted again
// from the events: issue_hourly, issue_environment_hourly, project_hourly, daily_usage and
// the issues' counters and first/last seen. For building a large dataset on a machine too
// loaded to ingest it in reasonable time; the copies share their payload chunks, so the
// database is smaller than an ingested one. Run with the server stopped.
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { EVENT_COLUMNS } from '../../dist/store/ingest-rows.js';

// Every column ingest writes to an event except the three each copy gets anew.
const FRESH = ['event_id', 'timestamp', 'received_at'];
const COPIED = EVENT_COLUMNS.map(([name]) => name).filter((name) => !FRESH.includes(name));
const HOUR = 3_600_000;
const DAY = 86_400_000;

function statements(d, { projectId, k, spanMs, now, maxId }) {
  const first = now - spanMs;
  const step = Math.floor(spanMs / k);
  const cols = COPIED.join(', ');
  const ecols = COPIED.map((c) => `e.${c}`).join(', ');
  const series =
    d === 'pg'
      ? `generate_series(1, ${k - 1}) as s(n)`
      : `(with recursive s(n) as (select 1 union all select n + 1 from s where n < ${k - 1}) select n from s) as s`;
  const newId = d === 'pg' ? `md5(e.id::text || ':' || s.n::text)` : `lower(hex(randomblob(16)))`;
  const ts = `(${first} + (((e.timestamp - ${first} - s.n * ${step}) % ${spanMs}) + ${spanMs}) % ${spanMs})`;
  const issues = `(select id from issues where project_id = ${projectId})`;
  const tagsEach = d === 'pg' ? `jsonb_each_text(e.tags::jsonb) as t(key, value)` : `json_each(e.tags) as t`;
  const mod = (a, b) => `(${a} - ${a} % ${b})`;
  return [
    `insert into events (event_id, timestamp, received_at, ${cols})
       select ${newId}, ${ts}, ${ts}, ${ecols} from events e, ${series}
       where e.project_id = ${projectId} and e.id <= ${maxId} order by 2`,
    `insert into event_tags (project_id, event_id, key, value)
       select e.project_id, e.id, t.key, t.value from events e, ${tagsEach} where e.project_id = ${projectId} and e.id > ${maxId}`,
    `delete from issue_hourly where issue_id in ${issues}`,
    `insert into issue_hourly (issue_id, bucket, events)
       select issue_id, ${mod('timestamp', HOUR)}, count(*) from events where project_id = ${projectId} group by 1, 2`,
    `delete from issue_environment_hourly where issue_id in ${issues}`,
    `insert into issue_environment_hourly (issue_id, environment, bucket, events)
       select issue_id, environment, ${mod('timestamp', HOUR)}, count(*) from events where project_id = ${projectId} group by 1, 2, 3`,
    `delete from project_hourly where project_id = ${projectId}`,
    `insert into project_hourly (project_id, bucket, release, events, crashes, errors, fatal, error, warning, info, debug)
       select project_id, ${mod('timestamp', HOUR)}, release, count(*), sum(is_crash),
         sum(case when is_crash = 0 and level = 'error' then 1 else 0 end),
         ${['fatal', 'error', 'warning', 'info', 'debug'].map((l) => `sum(case when level = '${l}' then 1 else 0 end)`).join(', ')}
       from events where project_id = ${projectId} group by 1, 2, 3`,
    `delete from daily_usage where project_id = ${projectId}`,
    `insert into daily_usage (project_id, day, events) select project_id, ${mod('received_at', DAY)}, count(*) from events where project_id = ${projectId} group by 1, 2`,
    `update issues set
       event_count = (select count(*) from events e where e.issue_id = issues.id),
       stored_count = (select count(*) from events e where e.issue_id = issues.id),
       first_seen = (select min(timestamp) from events e where e.issue_id = issues.id),
       last_seen = (select max(timestamp) from events e where e.issue_id = issues.id),
       first_seen_id = (select id from events e where e.issue_id = issues.id order by timestamp, id limit 1),
       last_seen_id = (select id from events e where e.issue_id = issues.id order by timestamp desc, id desc limit 1)
     where project_id = ${projectId}`,
  ];
}

/** Copies project `projectId`'s events so there are `k` times as many; returns the events now stored. */
export async function amplify(url, { projectId, k, spanMs, now = Date.now(), log = () => {} }) {
  if (url.startsWith('sqlite:')) {
    const db = new BetterSqlite3(url.slice('sqlite:'.length));
    try {
      db.pragma('journal_mode = wal');
      const maxId = Number(db.prepare('select max(id) as m from events where project_id = ?').get(projectId).m);
      db.transaction(() => {
        for (const s of statements('sqlite', { projectId, k, spanMs, now, maxId })) {
          const t = performance.now();
          db.exec(s);
          log(`  ${s.trim().split('\n')[0].slice(0, 60)}: ${Math.round(performance.now() - t)} ms`);
        }
      })();
      db.exec('analyze');
      return Number(db.prepare('select count(*) as n from events where project_id = ?').get(projectId).n);
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const maxId = Number(
      (await client.query('select max(id) as m from events where project_id = $1', [projectId])).rows[0].m,
    );
    await client.query('begin');
    for (const s of statements('pg', { projectId, k, spanMs, now, maxId })) {
      const t = performance.now();
      await client.query(s);
      log(`  ${s.trim().split('\n')[0].slice(0, 60)}: ${Math.round(performance.now() - t)} ms`);
    }
    await client.query('commit');
    await client.query('vacuum analyze');
    return Number(
      (await client.query('select count(*) as n from events where project_id = $1', [projectId])).rows[0].n,
    );
  } finally {
    await client.end();
  }
}
