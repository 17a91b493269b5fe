// A release's page lists the 25 busiest issues it introduced and the 25 busiest last
// seen in it, and links to the full lists; it asks the database for those (and one
// more, to know there are more), while the JSON route still answers up to 500.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedIssues } from '../read/seed.js';
import { createProject, type TestProject } from '../read/support.js';
import { dialects, type TestServer } from '../helpers/server.js';
import { API_KEY, Client, startDashboardServer } from './fixture.js';

describe.each(dialects)('release page on %s', (dialect) => {
  let t: TestServer;
  let p: TestProject;
  const now = Date.now();

  beforeAll(async () => {
    t = await startDashboardServer(dialect);
    p = await createProject(t);
    const db = t.deps.store.db;
    await seedIssues(db, p.id, 40, now - 60_000, { step: 1000 });
    await db
      .updateTable('issues')
      .set({ first_release: 'r1', last_release: 'r1' })
      .where('project_id', '=', p.id)
      .execute();
    await db
      .insertInto('releases')
      .values({
        project_id: p.id,
        release: 'r1',
        platforms: '',
        first_seen: now - 3_600_000,
        last_seen: now - 60_000,
      } as never)
      .execute();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('shows 25 issues per list with a link to all of them; the JSON route lists all 40', async () => {
    const browser = new Client(t.url);
    await browser.signIn(API_KEY);
    const res = await browser.request(`/${p.slug}/releases/r1`);
    expect(res.status).toBe(200);
    const page = await res.text();
    const tables = [...page.matchAll(/<tbody>([\s\S]*?)<\/tbody>/g)].map((m) => (m[1].match(/<tr>/g) ?? []).length);
    expect(tables.slice(-2)).toEqual([25, 25]);
    expect(page).toContain('All issues →');
    expect(page).toContain('All issues last seen in this release →');
    const json = await (await t.api(`/api/projects/${p.slug}/releases/r1`)).json();
    expect(json.issues_introduced).toHaveLength(40);
    expect(json.issues_present).toHaveLength(40);
  });
});
