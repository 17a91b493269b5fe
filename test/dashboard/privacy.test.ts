// The settings page's privacy and storage parts through the real server: the storage
// panel shows the project's usage, the privacy form saves scrub settings and a budget
// (checked through the JSON API), and a bad value is refused with the page and nothing saved.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProjectRow } from '../../src/store/schema.js';
import { dialects, type TestServer } from '../helpers/server.js';
import { API_KEY, Client, seedDemo, startDashboardServer } from './fixture.js';

describe.each(dialects)('dashboard privacy and storage on %s', (dialect) => {
  let t: TestServer;
  let demo: ProjectRow;

  beforeAll(async () => {
    t = await startDashboardServer(dialect);
    demo = await seedDemo(t);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('shows usage, saves the privacy form, refuses a negative budget', async () => {
    const c = new Client(t.url);
    await c.signIn(API_KEY);
    const page = await (await c.request(`/${demo.slug}/settings`)).text();
    expect(page).toContain('<h2 id="usage-h">Storage</h2>');
    const usage = await (await t.api(`/api/projects/${demo.slug}/usage`)).json();
    expect(page).toContain(`data-usage-bytes="${usage.bytes}"`);
    expect(usage.kinds.events.count).toBeGreaterThan(0);
    expect(page).toContain('name="scrub_defaults" value="1" checked');

    const csrf = await c.csrf(`/${demo.slug}/settings`);
    const saved = await c.post(`/${demo.slug}/privacy`, {
      _csrf: csrf,
      scrub_ip_addresses: '1',
      scrub_fields: 'ssn\npin',
      safe_fields: 'csrf_token',
      storage_budget_mb: '256',
    });
    expect(saved.status).toBe(303);
    const json = await (await t.api(`/api/projects/${demo.slug}`)).json();
    expect(json).toMatchObject({
      scrub_defaults: false,
      scrub_ip_addresses: true,
      scrub_fields: ['ssn', 'pin'],
      safe_fields: ['csrf_token'],
      storage_budget_mb: 256,
    });

    const bad = await c.post(`/${demo.slug}/privacy`, { _csrf: csrf, scrub_defaults: '1', storage_budget_mb: '-5' });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain('storage_budget_mb must be an integer &gt;= 0');
    expect((await (await t.api(`/api/projects/${demo.slug}`)).json()).storage_budget_mb).toBe(256);
  });
});
