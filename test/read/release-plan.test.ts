// Release detail counts the release's new issues of the window through
// issues_project_first_release_seen (migration 015): the issues of that release first
// seen in the window, not every issue of the project first seen in it.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { releaseDetail } from '../../src/read/releases.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { recordingDb, type RecordingDb } from './plan.js';
import { seedIssues } from './seed.js';
import { DAY, NOW, createProject, type TestProject } from './support.js';

describe.each(dialects)('release detail by first_release and first_seen on %s', (dialect) => {
  let t: TestServer;
  let rec: RecordingDb;
  let p: TestProject;

  beforeAll(async () => {
    t = await startTestServer(dialect, { clock: new ManualClock(NOW), env: { RATE_LIMIT: '0' } });
    p = await createProject(t);
    const db = t.deps.store.db;
    // 4 000 issues first seen in the last day, 30 of them of release "rare".
    await seedIssues(db, p.id, 4000, NOW - 60_000, { step: 20_000 });
    await db.updateTable('issues').set({ first_release: 'common' }).where('project_id', '=', p.id).execute();
    const rare = await db
      .selectFrom('issues')
      .select('id')
      .where('project_id', '=', p.id)
      .orderBy('id')
      .limit(30)
      .execute();
    await db
      .updateTable('issues')
      .set({ first_release: 'rare' })
      .where(
        'id',
        'in',
        rare.map((r) => r.id),
      )
      .execute();
    await db
      .insertInto('releases')
      .values({
        project_id: p.id,
        release: 'rare',
        platforms: '',
        first_seen: NOW - DAY,
        last_seen: NOW - 60_000,
      } as never)
      .execute();
    if (dialect === 'postgres') await sql`analyze issues`.execute(db);
    rec = recordingDb(t);
  }, 60_000);

  afterAll(async () => {
    await rec?.close();
    await t?.close();
  });

  it('reads only the release’s issues to count its new issues of the window', async () => {
    const { result, queries } = await rec.record((db) => releaseDetail(db, p.id, 'rare', {}, NOW));
    expect(result.release.new_issues).toBe(30);
    const count = queries.find((q) => /count\(\*\)/i.test(q.sql) && q.sql.includes('"first_seen" >='))!;
    expect(count).toBeDefined();
    if (dialect === 'postgres') {
      expect(await rec.rowsRead(count, 'issues')).toBeLessThanOrEqual(40);
    } else {
      expect(rec.sqlitePlan(count).join('\n')).toMatch(/USING COVERING INDEX issues_project_first_release_seen/);
    }
  });
});
