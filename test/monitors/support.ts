// Test support for cron monitors: check-ins sent the ways clients send them (envelope
// items, the legacy cron route) and reads of what was stored.
import type { TestServer } from '../helpers/server.js';
import type { ProjectRow } from '../../src/store/schema.js';
import { envelope, post } from '../ingest/helpers.js';

export const HOURLY = { schedule: { type: 'crontab', value: '0 * * * *' }, checkin_margin: 5, max_runtime: 10 };

/** Posts one envelope of check_in items; returns the answer's status. */
export async function sendCheckIns(
  t: TestServer,
  project: ProjectRow,
  checkIns: object[],
  key?: string,
): Promise<number> {
  const res = await post(
    t,
    project,
    envelope(
      {},
      checkIns.map((payload) => ({ type: 'check_in', payload })),
    ),
    { key },
  );
  await res.arrayBuffer();
  return res.status;
}

export function legacyUrl(
  t: TestServer,
  project: ProjectRow,
  slug: string,
  query: Record<string, string> = {},
  key = project.dsn_key,
): string {
  const q = new URLSearchParams(query).toString();
  return `${t.url}/api/${project.id}/cron/${slug}/${key}/${q ? `?${q}` : ''}`;
}

export async function monitorRows(t: TestServer, project: ProjectRow) {
  return t.deps.store.db
    .selectFrom('monitors')
    .selectAll()
    .where('project_id', '=', project.id)
    .orderBy('slug')
    .execute();
}

export async function checkinRows(t: TestServer, project: ProjectRow) {
  return t.deps.store.db
    .selectFrom('monitor_checkins')
    .selectAll()
    .where('project_id', '=', project.id)
    .orderBy('id')
    .execute();
}

export async function monitorAlerts(t: TestServer, project: ProjectRow) {
  const rows = await t.deps.store.db
    .selectFrom('alert_outbox')
    .select(['payload'])
    .where('project_id', '=', project.id)
    .where('type', '=', 'monitor')
    .orderBy('id')
    .execute();
  return rows.map((r) => JSON.parse(r.payload));
}
