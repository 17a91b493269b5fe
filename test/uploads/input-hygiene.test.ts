// Input hygiene of the sentry-cli routes over the real HTTP server, on SQLite and
// PostgreSQL: a NUL or lone surrogate in a JSON body is a 400 like on the management
// routes (PostgreSQL refuses NUL in text, SQLite stores a release nobody can address),
// and no release or association is stored.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { HYGIENE_CASES, HYGIENE_ERROR, HYGIENE_MAPPING, HYGIENE_PROJECT } from './hygiene-cases.js';

describe.each(dialects)('sentry-cli JSON bodies on %s', (dialect) => {
  let t: TestServer;
  let uuid: string;

  beforeAll(async () => {
    t = await startTestServer(dialect);
    expect((await t.api('/api/projects', { method: 'POST', json: { slug: HYGIENE_PROJECT } })).status).toBe(201);
    const form = new FormData();
    form.set('kind', 'proguard');
    form.set('file', new Blob([HYGIENE_MAPPING]), 'mapping.txt');
    const upload = await t.api(`/api/projects/${HYGIENE_PROJECT}/symbols`, { method: 'POST', body: form });
    expect(upload.status).toBe(201);
    uuid = ((await upload.json()) as { symbols: { debug_id: string }[] }).symbols[0].debug_id;
  });
  afterAll(() => t?.close());

  it.each(HYGIENE_CASES)('$name is 400 and stores nothing', async ({ path, body }) => {
    const res = await t.api(path, { method: 'POST', json: body(uuid) });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toMatch(HYGIENE_ERROR);
    expect(await t.deps.store.db.selectFrom('cli_releases').select('version').execute()).toEqual([]);
    expect(await t.deps.store.db.selectFrom('proguard_releases').select('release').execute()).toEqual([]);
  });

  it('a clean body still works, and the larger uploader limit still applies', async () => {
    const ok = await t.api('/api/0/organizations/o/releases/', { method: 'POST', json: { version: 'clean@1', projects: [HYGIENE_PROJECT] } });
    expect(ok.status).toBe(201);
    const big = await t.api('/api/0/organizations/o/releases/', { method: 'POST', json: { version: 'big@1', projects: [HYGIENE_PROJECT], url: `https://example.com/${'x'.repeat(2 * 1024 * 1024)}` } });
    expect(big.status).not.toBe(413);
    const tooBig = await t.api('/api/0/organizations/o/releases/', { method: 'POST', json: { version: 'huge@1', projects: [HYGIENE_PROJECT], url: 'x'.repeat(9 * 1024 * 1024) } });
    expect(tooBig.status).toBe(413);
    await t.deps.store.db.deleteFrom('cli_releases').execute();
  });
});
