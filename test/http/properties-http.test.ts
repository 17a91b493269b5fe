// Property-based fuzzing of the management routes and ingest over the real HTTP
// server, on both databases (fast-check, fixed seed, bounded runs): whatever the
// method, path segments, query and body, no answer is a 5xx, and a refused request
// (4xx) changes nothing stored.
import http from 'node:http';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProjectRow } from '../../src/store/schema.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { errorEvent, makeProject, rowCounts } from '../ingest/helpers.js';
import { FUZZ_HTTP as RUNS } from '../helpers/fuzz-config.js';

function send(
  t: TestServer,
  method: string,
  target: string,
  body?: Uint8Array | string,
): Promise<{ status: number; text: string }> {
  const url = new URL(t.url);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, method, path: target, agent: false }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A path segment as a client could put it on the wire: raw-safe characters, percent-escapes (well-formed or not), dot segments. */
const segment = fc.oneof(
  fc.constantFrom(
    'fz',
    'nope',
    'issues',
    'events',
    'releases',
    'bulk',
    'rotate-key',
    'overview',
    '.',
    '..',
    '%2e%2e',
    '%2E',
    '%00',
    '%2f',
    '%2F..%2F',
    '%ff',
    '%',
    'a%20b',
    '%ed%a0%80',
    '0',
    '1',
    '9007199254740993',
  ),
  fc.string({
    unit: fc.constantFrom('a', 'z', '0', '-', '_', '.', '~', '@', '+', '%', '2', 'e', 'f', 'F'),
    maxLength: 12,
  }),
  fc.string({ unit: 'grapheme-ascii', maxLength: 10 }).map((s) => encodeURIComponent(s)),
  fc.string({ unit: 'grapheme', maxLength: 6 }).map((s) => encodeURIComponent(s.replace(/[\ud800-\udfff]/g, ''))),
);
const queryValue = fc.oneof(
  fc.constantFrom(
    '',
    '%00',
    '%ff',
    '-1',
    '0',
    '1',
    '91',
    '1e400',
    'NaN',
    'resolved',
    'unresolved',
    'ignored',
    '2026-11-25T00:00:00Z',
    '2026-02-31T00:00:00Z',
    'x'.repeat(600),
  ),
  fc.string({ unit: 'grapheme-ascii', maxLength: 12 }).map((s) => encodeURIComponent(s)),
);
const queryKey = fc.constantFrom(
  'q',
  'days',
  'from',
  'to',
  'limit',
  'offset',
  'status',
  'release',
  'environment',
  'level',
  'sort',
  'os_version',
  'device_model',
  'cursor',
  'x',
);
const query = fc
  .array(fc.tuple(queryKey, queryValue), { maxLength: 4 })
  .map((pairs) => (pairs.length ? '?' + pairs.map(([k, v]) => `${k}=${v}`).join('&') : ''));

const { tree: jsonish } = fc.letrec((tie) => ({
  tree: fc.oneof(
    { depthSize: 'small' },
    fc.string({ unit: fc.constantFrom('a', '\u0000', '\ud800', '"', 'é', '0'), maxLength: 8 }),
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('tree'), { maxLength: 4 }),
    fc.dictionary(
      fc.constantFrom(
        'slug',
        'name',
        'platform',
        'sample_rate',
        'sample_keep_first',
        'daily_quota',
        'status',
        'fingerprints',
        'x',
        '__proto__',
      ),
      tie('tree'),
      { maxKeys: 5 },
    ),
  ),
}));
const body = fc.oneof(
  fc.constant(undefined),
  jsonish.map((v) => JSON.stringify(v) ?? ''),
  fc.string({ maxLength: 40 }),
  fc.integer({ min: 0, max: 5000 }).map((n) => '['.repeat(n) + ']'.repeat(n)),
);

describe.each(dialects)('HTTP properties on %s', (dialect) => {
  let t: TestServer;
  let p: ProjectRow;

  /** Everything a refused request must leave alone. */
  async function snapshot() {
    const projects = await t.deps.store.db.selectFrom('projects').selectAll().orderBy('id').execute();
    const issues = await t.deps.store.db
      .selectFrom('issues')
      .select(['id', 'status', 'resolved_release'])
      .orderBy('id')
      .execute();
    return { projects, issues, rows: await rowCounts(t) };
  }

  beforeAll(async () => {
    t = await startTestServer(dialect, { env: { RATE_LIMIT: '0' } });
    p = await makeProject(t);
    await t.deps.store.db.updateTable('projects').set({ slug: 'fz', name: 'fz' }).where('id', '=', p.id).execute();
    const items = [0, 1, 2].map(
      (i) =>
        `{"type":"event"}\n${JSON.stringify(errorEvent({ timestamp: t.clock.now(), fn: `f${i}`, release: 'r@1' }))}`,
    );
    const res = await fetch(`${t.url}/api/${p.id}/envelope/?sentry_key=${p.dsn_key}`, {
      method: 'POST',
      body: `{}\n${items.join('\n')}`,
    });
    expect(res.status).toBe(200);
  });
  afterAll(() => t?.close());

  it('management routes: no 5xx, and a refused request changes nothing', async () => {
    const under = fc.oneof(fc.constant('/api/projects'), fc.constant('/api/projects/fz'), fc.constant(''));
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('GET', 'POST', 'PATCH', 'DELETE', 'PUT'),
        under,
        fc.array(segment, { maxLength: 4 }),
        query,
        body,
        async (method, base, segments, q, payload) => {
          // Deleting or renaming the fuzzed project is allowed; only refusals are checked for changes.
          const target = `${base}/${segments.join('/')}${q}`.replace(/^\/\//, '/');
          const before = await snapshot();
          const res = await send(t, method, target.startsWith('/') ? target : `/${target}`, payload);
          expect(res.status, `${method} ${target} -> ${res.text}`).toBeLessThan(500);
          if (res.status >= 400) expect(await snapshot(), `${method} ${target}`).toEqual(before);
        },
      ),
      RUNS,
    );
  }, 60_000);

  it('ingest: no 5xx, and a refused envelope stores nothing', async () => {
    const line = fc.oneof(
      fc.constantFrom(
        '{"type":"event"}',
        '{"type":"session"}',
        '{"type":"sessions"}',
        '{"type":"event","length":3}',
        '{"type":"attachment","length":99999}',
        '{}',
        '',
        '{"dsn":"http://%ff@h/1"}',
      ),
      jsonish.map((v) => JSON.stringify(v) ?? ''),
      fc.constant(JSON.stringify(errorEvent({ timestamp: Date.now() }))),
    );
    const auth = fc.constantFrom('query', 'wrong', 'none', 'two');
    await fc.assert(
      fc.asyncProperty(fc.array(line, { maxLength: 6 }), auth, async (lines, how) => {
        const key = how === 'wrong' ? '0'.repeat(32) : p.dsn_key;
        const q =
          how === 'none'
            ? ''
            : how === 'two'
              ? `?sentry_key=${key}&sentry_key=${'1'.repeat(32)}`
              : `?sentry_key=${key}`;
        const before = await snapshot();
        const res = await send(t, 'POST', `/api/${p.id}/envelope/${q}`, lines.join('\n'));
        expect(res.status, res.text).toBeLessThan(500);
        if (res.status !== 200) expect(await snapshot()).toEqual(before);
      }),
      RUNS,
    );
  }, 60_000);
});
