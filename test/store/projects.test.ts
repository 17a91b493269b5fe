// Projects API through the real HTTP app on each database: create, list, get,
// patch, delete (with everything under the project), rotate-key, validation,
// DSN construction.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { iso } from '../../src/clock.js';
import { findProjectByDsnKey, findProjectBySlug, RESERVED_SLUGS } from '../../src/store/projects.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { countRowsByProject, orphanIssueRows, seedProjectData } from '../helpers/seed-rows.js';

const HEX32 = /^[0-9a-f]{32}$/;

function dsnKey(dsn: string): string {
  return new URL(dsn).username;
}

describe.each(dialects)('projects API on %s', (dialect) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(dialect);
  });
  afterAll(async () => {
    await t?.close();
  });

  async function create(body: unknown) {
    return t.api('/api/projects', { method: 'POST', json: body });
  }

  it('lists no projects on a new database', async () => {
    const res = await t.api('/api/projects');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual([]);
  });

  it('creates a project with defaults and a DSN from the request host', async () => {
    const res = await create({ slug: 'shop-app' });
    expect(res.status).toBe(201);
    expect(res.headers.get('location')).toBe('/api/projects/shop-app');
    const p = await res.json();
    expect(p).toEqual({
      id: expect.any(Number),
      slug: 'shop-app',
      name: 'shop-app',
      platform: 'other',
      sample_keep_first: 100,
      sample_rate: 1,
      daily_quota: 0,
      scrub_defaults: true,
      scrub_ip_addresses: false,
      scrub_fields: [],
      safe_fields: [],
      storage_budget_mb: 0,
      created_at: iso(t.clock.now()),
      dsn: expect.any(String),
    });
    expect(p.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const host = new URL(t.url).host;
    const key = dsnKey(p.dsn);
    expect(key).toMatch(HEX32);
    expect(p.dsn).toBe(`http://${key}@${host}/${p.id}`);
  });

  it('creates a project with every field given', async () => {
    const res = await create({
      slug: 'ios.app_2',
      name: 'iOS App',
      platform: 'ios',
      sample_keep_first: 5,
      sample_rate: 0.25,
      daily_quota: 1000,
    });
    expect(res.status).toBe(201);
    const p = await res.json();
    expect(p).toMatchObject({
      slug: 'ios.app_2',
      name: 'iOS App',
      platform: 'ios',
      sample_keep_first: 5,
      sample_rate: 0.25,
      daily_quota: 1000,
    });
    const get = await t.api('/api/projects/ios.app_2');
    expect(get.status).toBe(200);
    expect(await get.json()).toEqual(p);
  });

  it('accepts every platform of the spec', async () => {
    for (const platform of ['ios', 'android', 'flutter', 'react-native', 'web', 'backend', 'other']) {
      const res = await create({ slug: `plat-${platform}`, platform });
      expect(res.status, platform).toBe(201);
      expect((await res.json()).platform).toBe(platform);
    }
  });

  it('gives every project its own random DSN key', async () => {
    const a = await (await create({ slug: 'key-a' })).json();
    const b = await (await create({ slug: 'key-b' })).json();
    expect(dsnKey(a.dsn)).not.toBe(dsnKey(b.dsn));
    expect((await findProjectByDsnKey(t.deps.store.db, dsnKey(a.dsn)))?.slug).toBe('key-a');
  });

  it('refuses an existing slug with 409 and keeps the first project', async () => {
    const first = await (await create({ slug: 'dupe', name: 'First' })).json();
    const res = await create({ slug: 'dupe', name: 'Second' });
    expect(res.status).toBe(409);
    expect(await res.json()).toEqual({ error: 'a project with slug "dupe" already exists' });
    expect(await (await t.api('/api/projects/dupe')).json()).toEqual(first);
  });

  it('lists projects oldest first', async () => {
    const res = await t.api('/api/projects');
    expect(res.status).toBe(200);
    const list = await res.json();
    expect(Array.isArray(list)).toBe(true);
    const slugs = list.map((p: { slug: string }) => p.slug);
    expect(slugs.slice(0, 3)).toEqual(['shop-app', 'ios.app_2', 'plat-ios']);
    const ids = list.map((p: { id: number }) => p.id);
    expect([...ids].sort((x, y) => x - y)).toEqual(ids);
    expect(list.find((p: { slug: string }) => p.slug === 'ios.app_2')).toEqual(
      await (await t.api('/api/projects/ios.app_2')).json(),
    );
  });

  const slug64 = 'a'.repeat(64);
  it('accepts a 64-character slug and a 1-character slug', async () => {
    expect((await create({ slug: slug64 })).status).toBe(201);
    expect((await create({ slug: 'x' })).status).toBe(201);
    expect((await create({ slug: '0abc' })).status).toBe(201);
  });

  const invalidCreates: [string, unknown, string][] = [
    ['missing slug', { name: 'x' }, 'slug is required'],
    ['slug not a string', { slug: 42 }, 'slug is required'],
    ['slug null', { slug: null }, 'slug is required'],
    ['empty slug', { slug: '' }, 'slug must be 1 to 64 characters'],
    ['uppercase slug', { slug: 'MyApp' }, 'slug must be 1 to 64 characters'],
    ['slug starting with a dash', { slug: '-app' }, 'slug must be 1 to 64 characters'],
    ['slug starting with a dot', { slug: '.app' }, 'slug must be 1 to 64 characters'],
    ['slug with a slash', { slug: 'a/b' }, 'slug must be 1 to 64 characters'],
    ['slug with a space', { slug: 'a b' }, 'slug must be 1 to 64 characters'],
    ['65-character slug', { slug: 'a'.repeat(65) }, 'slug must be 1 to 64 characters'],
    ['all-digit slug', { slug: '123' }, 'slug must not be all digits'],
    ['name empty', { slug: 'n1', name: '' }, 'name must be a non-empty string of at most 200 characters'],
    ['name blank', { slug: 'n1', name: '   ' }, 'name must be a non-empty string'],
    ['name not a string', { slug: 'n1', name: 5 }, 'name must be a non-empty string'],
    [
      'name too long',
      { slug: 'n1', name: 'n'.repeat(201) },
      'name must be a non-empty string of at most 200 characters',
    ],
    [
      'unknown platform',
      { slug: 'n1', platform: 'windows' },
      'platform must be one of ios, android, flutter, react-native, web, backend, other',
    ],
    ['platform in capitals', { slug: 'n1', platform: 'IOS' }, 'platform must be one of'],
    ['negative sample_keep_first', { slug: 'n1', sample_keep_first: -1 }, 'sample_keep_first must be an integer >= 0'],
    [
      'fractional sample_keep_first',
      { slug: 'n1', sample_keep_first: 1.5 },
      'sample_keep_first must be an integer >= 0',
    ],
    [
      'sample_keep_first as a string',
      { slug: 'n1', sample_keep_first: '5' },
      'sample_keep_first must be an integer >= 0',
    ],
    ['sample_rate above 1', { slug: 'n1', sample_rate: 1.5 }, 'sample_rate must be between 0 and 1'],
    ['sample_rate below 0', { slug: 'n1', sample_rate: -0.1 }, 'sample_rate must be between 0 and 1'],
    ['sample_rate as a string', { slug: 'n1', sample_rate: '0.5' }, 'sample_rate must be between 0 and 1'],
    [
      'negative daily_quota',
      { slug: 'n1', daily_quota: -1 },
      'daily_quota must be an integer >= 0 (0 means unlimited)',
    ],
    ['fractional daily_quota', { slug: 'n1', daily_quota: 2.5 }, 'daily_quota must be an integer >= 0'],
    [
      'unknown field',
      { slug: 'n1', colour: 'red' },
      'unknown field "colour"; allowed fields are slug, name, platform, sample_keep_first, sample_rate, daily_quota',
    ],
    ['read-only field', { slug: 'n1', dsn: 'x' }, 'unknown field "dsn"'],
    ['body is an array', [{ slug: 'n1' }], 'request body must be a JSON object'],
    ['body is a string', 'n1', 'request body must be a JSON object'],
    ['body is null', null, 'request body must be a JSON object'],
  ];

  it.each(invalidCreates)('refuses a create with %s (400, nothing stored)', async (_what, body, message) => {
    const before = await (await t.api('/api/projects')).json();
    const res = await create(body);
    expect(res.status).toBe(400);
    const err = await res.json();
    expect(Object.keys(err)).toEqual(['error']);
    expect(err.error).toContain(message);
    expect(await (await t.api('/api/projects')).json()).toEqual(before);
  });

  it('reports every invalid field at once', async () => {
    const res = await create({ slug: 'n2', sample_rate: 2, daily_quota: -5 });
    expect(res.status).toBe(400);
    const { error } = await res.json();
    expect(error).toContain('sample_rate must be between 0 and 1');
    expect(error).toContain('daily_quota must be an integer >= 0');
  });

  it.each(RESERVED_SLUGS.map((s) => [s]))('refuses the reserved slug %s', async (slug) => {
    const res = await create({ slug });
    expect(res.status).toBe(400);
    expect((await res.json()).error).toContain(`slug "${slug}" is reserved`);
  });

  it('refuses malformed JSON and an empty body with 400', async () => {
    const bad = await t.api('/api/projects', {
      method: 'POST',
      body: '{"slug": "oops",',
      headers: { 'content-type': 'application/json' },
    });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ error: 'request body is not valid JSON' });
    const empty = await t.api('/api/projects', { method: 'POST' });
    expect(empty.status).toBe(400);
    expect(await empty.json()).toEqual({ error: 'request body must be a JSON object' });
    expect(await findProjectBySlug(t.deps.store.db, 'oops')).toBeUndefined();
  });

  it('accepts a JSON body sent without a JSON content type', async () => {
    const res = await t.api('/api/projects', {
      method: 'POST',
      body: JSON.stringify({ slug: 'form-typed' }),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(res.status).toBe(201);
  });

  it('gets a project by slug and answers 404 for an unknown one', async () => {
    const res = await t.api('/api/projects/shop-app');
    expect(res.status).toBe(200);
    expect((await res.json()).slug).toBe('shop-app');
    const missing = await t.api('/api/projects/nope');
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ error: 'project "nope" not found' });
  });

  it('patches each field and keeps the rest', async () => {
    const before = await (await create({ slug: 'patchme', name: 'Before', platform: 'web' })).json();
    const steps: [Record<string, unknown>, Record<string, unknown>][] = [
      [{ name: '  After  ' }, { name: 'After' }],
      [{ platform: 'android' }, { platform: 'android' }],
      [{ sample_keep_first: 0 }, { sample_keep_first: 0 }],
      [{ sample_rate: 0 }, { sample_rate: 0 }],
      [{ sample_rate: 0.5 }, { sample_rate: 0.5 }],
      [{ daily_quota: 250 }, { daily_quota: 250 }],
      [
        { name: 'Both', daily_quota: 0 },
        { name: 'Both', daily_quota: 0 },
      ],
      [
        { scrub_defaults: false, scrub_ip_addresses: true },
        { scrub_defaults: false, scrub_ip_addresses: true },
      ],
      [
        { scrub_fields: ['ssn', ' pin ', 'ssn'], safe_fields: ['csrf_token'] },
        { scrub_fields: ['ssn', 'pin'], safe_fields: ['csrf_token'] },
      ],
      [{ scrub_fields: [] }, { scrub_fields: [] }],
      [{ storage_budget_mb: 512 }, { storage_budget_mb: 512 }],
    ];
    let expected = { ...before };
    for (const [patch, change] of steps) {
      const res = await t.api('/api/projects/patchme', { method: 'PATCH', json: patch });
      expect(res.status, JSON.stringify(patch)).toBe(200);
      expected = { ...expected, ...change };
      expect(await res.json()).toEqual(expected);
      expect(await (await t.api('/api/projects/patchme')).json()).toEqual(expected);
    }
    const empty = await t.api('/api/projects/patchme', { method: 'PATCH', json: {} });
    expect(empty.status).toBe(200);
    expect(await empty.json()).toEqual(expected);
  });

  const invalidPatches: [string, unknown, string][] = [
    ['empty name', { name: '' }, 'name must be a non-empty string'],
    ['null name', { name: null }, 'name must be a non-empty string'],
    ['unknown platform', { platform: 'symbian' }, 'platform must be one of'],
    ['negative sample_keep_first', { sample_keep_first: -3 }, 'sample_keep_first must be an integer >= 0'],
    ['sample_rate above 1', { sample_rate: 1.01 }, 'sample_rate must be between 0 and 1'],
    ['sample_rate null', { sample_rate: null }, 'sample_rate must be between 0 and 1'],
    ['negative daily_quota', { daily_quota: -1 }, 'daily_quota must be an integer >= 0'],
    [
      'slug (cannot be changed)',
      { slug: 'renamed' },
      'unknown field "slug"; allowed fields are name, platform, sample_keep_first, sample_rate, daily_quota, scrub_defaults',
    ],
    ['scrub_defaults not a boolean', { scrub_defaults: 'yes' }, 'scrub_defaults must be true or false'],
    ['scrub_fields not a list', { scrub_fields: 'password' }, 'scrub_fields must be a list of at most 200'],
    ['scrub_fields with a number', { scrub_fields: ['ok', 7] }, 'scrub_fields must be a list'],
    ['scrub_fields with an empty string', { scrub_fields: [' '] }, 'scrub_fields must be a list'],
    [
      'safe_fields with 201 entries',
      { safe_fields: Array.from({ length: 201 }, (_, i) => `f${i}`) },
      'safe_fields must be a list of at most 200',
    ],
    ['negative storage_budget_mb', { storage_budget_mb: -1 }, 'storage_budget_mb must be an integer >= 0'],
    ['fractional storage_budget_mb', { storage_budget_mb: 1.5 }, 'storage_budget_mb must be an integer >= 0'],
    ['a valid field beside an invalid one', { name: 'Fine', sample_rate: 3 }, 'sample_rate must be between 0 and 1'],
    ['an array body', [], 'request body must be a JSON object'],
  ];

  it.each(invalidPatches)('refuses a patch with %s (400, project unchanged)', async (_what, body, message) => {
    await create({ slug: 'stable' });
    const before = await (await t.api('/api/projects/stable')).json();
    const res = await t.api('/api/projects/stable', { method: 'PATCH', json: body });
    expect(res.status).toBe(400);
    expect((await res.json()).error).toContain(message);
    expect(await (await t.api('/api/projects/stable')).json()).toEqual(before);
  });

  it('refuses a patch with malformed JSON', async () => {
    const res = await t.api('/api/projects/shop-app', { method: 'PATCH', body: 'name=x' });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: 'request body is not valid JSON' });
  });

  it('answers 404 when patching, deleting or rotating an unknown project', async () => {
    for (const [method, path] of [
      ['PATCH', '/api/projects/ghost'],
      ['DELETE', '/api/projects/ghost'],
      ['POST', '/api/projects/ghost/rotate-key'],
    ]) {
      const res = await t.api(path, { method, json: method === 'PATCH' ? { name: 'x' } : undefined });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(await res.json()).toEqual({ error: 'project "ghost" not found' });
    }
  });

  it('rotates the DSN key: new key at once, old key no longer finds the project', async () => {
    const before = await (await create({ slug: 'rotating' })).json();
    const oldKey = dsnKey(before.dsn);
    const res = await t.api('/api/projects/rotating/rotate-key', { method: 'POST' });
    expect(res.status).toBe(200);
    const after = await res.json();
    const newKey = dsnKey(after.dsn);
    expect(newKey).toMatch(HEX32);
    expect(newKey).not.toBe(oldKey);
    expect({ ...after, dsn: undefined }).toEqual({ ...before, dsn: undefined });
    expect(await findProjectByDsnKey(t.deps.store.db, oldKey)).toBeUndefined();
    expect((await findProjectByDsnKey(t.deps.store.db, newKey))?.slug).toBe('rotating');
    expect(await (await t.api('/api/projects/rotating')).json()).toEqual(after);
  });

  it('deletes a project and everything under it, leaving other projects alone', async () => {
    const doomed = await (await create({ slug: 'doomed' })).json();
    const kept = await (await create({ slug: 'kept' })).json();
    await seedProjectData(t.deps.store.db, doomed.id, t.clock.now());
    await seedProjectData(t.deps.store.db, kept.id, t.clock.now());
    const beforeDoomed = await countRowsByProject(t.deps.store.db, doomed.id);
    for (const [table, n] of Object.entries(beforeDoomed)) expect(n, table).toBeGreaterThan(0);
    const beforeKept = await countRowsByProject(t.deps.store.db, kept.id);

    const res = await t.api('/api/projects/doomed', { method: 'DELETE' });
    expect(res.status).toBe(204);
    expect(await res.text()).toBe('');

    for (const [table, n] of Object.entries(await countRowsByProject(t.deps.store.db, doomed.id)))
      expect(n, table).toBe(0);
    for (const [table, n] of Object.entries(await orphanIssueRows(t.deps.store.db)))
      expect(n, `orphans in ${table}`).toBe(0);
    expect(await countRowsByProject(t.deps.store.db, kept.id)).toEqual(beforeKept);
    expect((await t.api('/api/projects/doomed')).status).toBe(404);
    expect((await t.api('/api/projects/doomed', { method: 'DELETE' })).status).toBe(404);
    expect((await t.api('/api/projects/kept')).status).toBe(200);
    // The slug is free again.
    expect((await create({ slug: 'doomed' })).status).toBe(201);
  });
});

describe.each(dialects)('DSN construction on %s', (dialect) => {
  it('uses PUBLIC_URL, keeping its path prefix and port', async () => {
    const t = await startTestServer(dialect, { env: { PUBLIC_URL: 'https://errors.example.com:8443/faultline/' } });
    try {
      const p = await (await t.api('/api/projects', { method: 'POST', json: { slug: 'app' } })).json();
      expect(p.dsn).toBe(`https://${dsnKey(p.dsn)}@errors.example.com:8443/faultline/${p.id}`);
      // The request's own host and forwarding headers do not matter once PUBLIC_URL is set.
      const viaProxy = await t.api('/api/projects/app', {
        headers: { 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'http' },
      });
      expect((await viaProxy.json()).dsn).toBe(p.dsn);
    } finally {
      await t.close();
    }
  });

  it('uses PUBLIC_URL without a prefix', async () => {
    const t = await startTestServer(dialect, { env: { PUBLIC_URL: 'https://errors.example.com' } });
    try {
      const p = await (await t.api('/api/projects', { method: 'POST', json: { slug: 'app' } })).json();
      expect(p.dsn).toBe(`https://${dsnKey(p.dsn)}@errors.example.com/${p.id}`);
    } finally {
      await t.close();
    }
  });

  it('without PUBLIC_URL follows X-Forwarded-Proto and X-Forwarded-Host from a proxy', async () => {
    const t = await startTestServer(dialect);
    try {
      await t.api('/api/projects', { method: 'POST', json: { slug: 'app' } });
      const res = await t.api('/api/projects/app', {
        headers: { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'crash.example.org, inner.local' },
      });
      const p = await res.json();
      expect(p.dsn).toBe(`https://${dsnKey(p.dsn)}@crash.example.org/${p.id}`);
      const list = await (await t.api('/api/projects', { headers: { 'x-forwarded-host': 'bad host/..' } })).json();
      expect(list[0].dsn).toBe(`http://${dsnKey(p.dsn)}@${new URL(t.url).host}/${p.id}`);
    } finally {
      await t.close();
    }
  });
});
