// The dashboard in the serverless edition: the Worker bundled as a deploy would
// bundle it, in workerd with a local D1. Sign-in, the pages of a project, and a
// CSRF-checked action answer as on Node.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestWorker, type TestWorker } from '../editions/workers/harness.js';
import { Client } from './fixture.js';

const KEY = 'worker-dashboard-key';

describe('the dashboard on Workers + D1', () => {
  let w: TestWorker;
  beforeAll(async () => {
    w = await startTestWorker({ API_KEYS: KEY, RATE_LIMIT: '0' });
    expect(
      (await w.api('/api/projects', { method: 'POST', json: { slug: 'edge', name: 'Edge <app>', platform: 'web' } }))
        .status,
    ).toBe(201);
  });
  afterAll(async () => {
    await w?.close();
  });

  it('signs in, shows the project pages and rotates the key with the session’s CSRF token', async () => {
    const c = new Client(w.url);
    expect((await c.request('/edge/issues')).status).toBe(303);
    expect((await c.signIn('wrong')).status).toBe(401);
    expect((await c.signIn(KEY)).status).toBe(303);
    const home = await c.request('/');
    expect(home.status).toBe(200);
    expect(await home.text()).toContain('Edge &lt;app&gt;');
    for (const path of [
      '/edge',
      '/edge/issues',
      '/edge/events',
      '/edge/releases',
      '/edge/alerts',
      '/edge/monitors',
      '/edge/symbols',
      '/edge/settings',
    ]) {
      expect((await c.request(path)).status, path).toBe(200);
    }
    const before = (await (await w.api('/api/projects/edge')).json()).dsn;
    expect((await c.post('/edge/rotate-key', {})).status).toBe(403);
    expect((await c.post('/edge/rotate-key', { _csrf: await c.csrf('/edge/settings') })).status).toBe(303);
    expect((await (await w.api('/api/projects/edge')).json()).dsn).not.toBe(before);
    expect((await c.request('/static/dashboard.css')).headers.get('content-type')).toContain('text/css');
  });
});
