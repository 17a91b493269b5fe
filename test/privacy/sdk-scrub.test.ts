// Scrubbing end to end: the real @sentry/node SDK (sendDefaultPii, so it sends request
// headers, cookies and the query string) reports an error holding secrets in headers,
// cookies, the query, extra data and the message; nothing secret reaches any stored
// column, the raw payload or the API, and the event detail says what was filtered. A
// second project with scrubbing turned off shows the same secrets do arrive.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storedPayload } from '../../src/editions/node/payloads.js';
import type { ProjectRow } from '../../src/store/schema.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { dsnOf, eventsOf, issuesOf, makeProject } from '../ingest/helpers.js';

const CLIENT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'ingest', 'clients', 'node-sdk.mjs');

function runClient(scenario: string, dsn: string): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLIENT, scenario],
      { env: { ...process.env, FAULTLINE_DSN: dsn }, timeout: 30_000 },
      (err, _stdout, stderr) => {
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stderr });
      },
    );
  });
}

const SECRETS = [
  'hunter2-extra',
  'sk_live_extra',
  'header-secret-token',
  'cookie-secret',
  'query-secret',
  'apikey-secret',
  'form-secret',
  '4111 1111 1111 1111',
];

describe.each(dialects)('@sentry/node sending secrets, on %s', (dialect) => {
  let t: TestServer;
  let scrubbed: ProjectRow;
  let open: ProjectRow;

  beforeAll(async () => {
    t = await startTestServer(dialect, { clock: { now: () => Date.now() } });
    scrubbed = await makeProject(t);
    open = await makeProject(t);
    const off = await t.api(`/api/projects/${open.slug}`, { method: 'PATCH', json: { scrub_defaults: false } });
    expect(off.status).toBe(200);
    expect((await off.json()).scrub_defaults).toBe(false);
    const runs = await Promise.all([runClient('secrets', dsnOf(t, scrubbed)), runClient('secrets', dsnOf(t, open))]);
    for (const r of runs) expect(r.code, r.stderr).toBe(0);
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  async function everythingStored(project: ProjectRow): Promise<string> {
    const [event] = await eventsOf(t, project);
    const issues = await issuesOf(t, project);
    const raw = (await storedPayload(t.deps.store.db, event)).toString('utf8');
    const detail = await (await t.api(`/api/projects/${project.slug}/events/${event.id}`)).text();
    const tags = await t.deps.store.db
      .selectFrom('event_tags')
      .selectAll()
      .where('project_id', '=', project.id)
      .execute();
    return JSON.stringify({ event: { ...event, detail: null, raw: null }, issues, tags }) + raw + detail;
  }

  it('nothing secret is stored or served; the detail counts what was filtered', async () => {
    const events = await eventsOf(t, scrubbed);
    expect(events).toHaveLength(1);
    const all = await everythingStored(scrubbed);
    for (const secret of SECRETS) expect(all).not.toContain(secret);
    const [issue] = await issuesOf(t, scrubbed);
    expect(issue.title).toBe('Error: charge failed for card [Filtered]');
    const detail = await (await t.api(`/api/projects/${scrubbed.slug}/events/${events[0].id}`)).json();
    expect(detail.scrubbed.total).toBeGreaterThanOrEqual(9);
    expect(detail.scrubbed.rules.creditcard).toBeGreaterThanOrEqual(1);
    expect(detail.scrubbed.paths).toEqual(
      expect.arrayContaining([
        'extra.db_password',
        'extra.config.stripe_api_key',
        'request.headers.Authorization',
        'request.query_string.token',
        'request.data.password',
      ]),
    );
    expect(detail.request.headers).toEqual({
      Authorization: '[Filtered]',
      Cookie: '[Filtered]',
      'X-Api-Key': '[Filtered]',
      Accept: 'text/html',
    });
    expect(detail.request.data).toBe('user=bob&password=[Filtered]');
    expect(detail.extra.db_password).toBe('[Filtered]');
    expect(detail.extra.config.region).toBe('eu');
    // The user is kept: ids are not secrets, and the address stays unless asked.
    expect(events[0].user_id).toBe('secret-user');
    expect(events[0].user_ip).toBe('127.0.0.1');
  });

  it('with scrubbing off the same SDK run stores the secrets (the test above can fail)', async () => {
    const all = await everythingStored(open);
    for (const secret of SECRETS) expect(all).toContain(secret);
  });
});
