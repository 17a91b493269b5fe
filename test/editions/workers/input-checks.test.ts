// The input checks of issue 38 on the serverless edition (the Worker bundled as
// deployed, Miniflare, local D1): NUL and lone surrogates in sentry-cli JSON bodies are
// 400; a source map with a very long `file` is stored and found; import refuses lines
// the API would refuse and counts `__proto__`/`constructor` types; X-Forwarded-Host and
// -Proto count only from a peer (CF-Connecting-IP) in TRUSTED_PROXIES; the dashboard's
// sign-in throttle answers 429 after 10 failures.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HYGIENE_CASES, HYGIENE_ERROR, HYGIENE_MAPPING, HYGIENE_PROJECT } from '../../uploads/hygiene-cases.js';
import { Client } from '../../dashboard/fixture.js';
import { startTestWorker, type TestWorker } from './harness.js';

const KEY = 'worker-input-key-0123456789abcdef';
const PROXY = '203.0.113.5';

describe('input checks on the Worker', () => {
  let w: TestWorker;
  let uuid: string;

  beforeAll(async () => {
    w = await startTestWorker({ API_KEYS: KEY, TRUSTED_PROXIES: PROXY, RATE_LIMIT: '0' });
    expect((await w.api('/api/projects', { method: 'POST', json: { slug: HYGIENE_PROJECT } })).status).toBe(201);
    const form = new FormData();
    form.set('kind', 'proguard');
    form.set('file', new Blob([HYGIENE_MAPPING]), 'mapping.txt');
    const upload = await w.api(`/api/projects/${HYGIENE_PROJECT}/symbols`, { method: 'POST', body: form });
    expect(upload.status, await upload.clone().text()).toBe(201);
    uuid = ((await upload.json()) as { symbols: { debug_id: string }[] }).symbols[0].debug_id;
  }, 120_000);
  afterAll(async () => {
    await w?.close();
  });

  it.each(HYGIENE_CASES)('sentry-cli: $name is 400 and stores nothing', async ({ path, body }) => {
    const res = await w.api(path, { method: 'POST', json: body(uuid) });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toMatch(HYGIENE_ERROR);
    const d1 = await w.d1();
    expect((await d1.prepare('select version from cli_releases').all()).results).toEqual([]);
    expect((await d1.prepare('select release from proguard_releases').all()).results).toEqual([]);
  });

  it('stores a source map with a very long file name and symbolicates with it', async () => {
    const long = Array.from({ length: 40 }, (_, i) => createHash('sha512').update(String(i)).digest('base64url')).join(
      '',
    );
    const url = `https://cdn.example.com/${long}.min.js`;
    const form = new FormData();
    form.set('kind', 'sourcemap');
    form.set('release', 'web@1');
    form.set(
      'file',
      new Blob([JSON.stringify({ version: 3, file: url, sources: ['src/long.ts'], names: [], mappings: 'AAAA' })]),
      'long.js.map',
    );
    const upload = await w.api(`/api/projects/${HYGIENE_PROJECT}/symbols`, { method: 'POST', body: form });
    expect(upload.status, await upload.clone().text()).toBe(201);
    const project = (await (await w.api(`/api/projects/${HYGIENE_PROJECT}`)).json()) as { dsn: string };
    const dsn = new URL(project.dsn);
    const eventId = 'c'.repeat(32);
    const event = {
      event_id: eventId,
      platform: 'javascript',
      release: 'web@1',
      exception: {
        values: [
          {
            type: 'Error',
            value: 'x',
            stacktrace: { frames: [{ abs_path: url, filename: url, function: 'a', lineno: 1, colno: 1 }] },
          },
        ],
      },
    };
    const sent = await fetch(`${w.url}/api${dsn.pathname}/store/?sentry_key=${dsn.username}`, {
      method: 'POST',
      body: JSON.stringify(event),
      headers: { 'content-type': 'application/json' },
    });
    expect(sent.status, await sent.clone().text()).toBe(200);
    const detail = (await (await w.api(`/api/projects/${HYGIENE_PROJECT}/events/${eventId}`)).json()) as {
      symbolicated: boolean;
      exceptions: { symbolicated_frames: { filename: string }[] }[];
    };
    expect(detail.symbolicated).toBe(true);
    expect(detail.exceptions.at(-1)!.symbolicated_frames[0].filename).toBe('src/long.ts');
  });

  it('import refuses lines the API would refuse, by number, and counts __proto__ and constructor types', async () => {
    const created = new Date(Date.UTC(2026, 0, 1)).toISOString();
    const lines = [
      { type: 'meta', format: 1, exported_at: created, source: {} },
      {
        type: 'project',
        slug: 'moved',
        id: 40,
        dsn_key: 'd'.repeat(32),
        name: 'Moved',
        platform: 'web',
        sample_keep_first: 0,
        sample_rate: 1,
        daily_quota: 0,
        created_at: created,
      },
      {
        type: 'alert_rule',
        project: 'moved',
        alert: 'bogus',
        enabled: true,
        cooldown_minutes: 5,
        last_triggered: null,
      },
      {
        type: 'alert_rule',
        project: 'moved',
        alert: 'regression',
        enabled: true,
        cooldown_minutes: -5,
        last_triggered: null,
      },
      {
        type: 'alert_channel',
        project: 'moved',
        kind: 'smtp',
        config: { url: 'http://example.com/' },
        created_at: created,
      },
      { type: '__proto__' },
      { type: 'constructor' },
      {
        type: 'alert_rule',
        project: 'moved',
        alert: 'new_issue',
        enabled: false,
        cooldown_minutes: 30,
        last_triggered: null,
      },
    ];
    const res = await w.api('/api/import', {
      method: 'POST',
      body: lines.map((l) => JSON.stringify(l)).join('\n') + '\n',
      headers: { 'content-type': 'application/x-ndjson' },
    });
    expect(res.status, await res.clone().text()).toBe(200);
    const summary = (await res.json()) as {
      problems: { line: number; message: string }[];
      unknown: Record<string, number>;
      types: Record<string, { added: number }>;
    };
    expect(summary.problems.map((p) => [p.line, p.message.split(':')[0]])).toEqual([
      [3, 'alert_rule'],
      [4, 'alert_rule'],
      [5, 'alert_channel'],
    ]);
    expect(Object.entries(summary.unknown)).toEqual([
      ['__proto__', 1],
      ['constructor', 1],
    ]);
    const d1 = await w.d1();
    const rules = await d1
      .prepare(
        "select r.type, r.cooldown_minutes from alert_rules r join projects p on p.id = r.project_id where p.slug = 'moved' order by r.type",
      )
      .all();
    expect(rules.results.filter((r) => r.type !== 'crash_spike' && r.type !== 'regression')).toEqual([
      { type: 'new_issue', cooldown_minutes: 30 },
    ]);
    expect(rules.results.some((r) => r.type === 'bogus' || r.cooldown_minutes === -5)).toBe(false);
    expect(
      (
        await d1
          .prepare(
            "select count(*) as n from alert_channels c join projects p on p.id = c.project_id where p.slug = 'moved'",
          )
          .first()
      )?.n,
    ).toBe(0);
  });

  it('believes X-Forwarded-Host and -Proto only from a trusted proxy', async () => {
    const forged = { 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' };
    const direct = (await (
      await w.api(`/api/projects/${HYGIENE_PROJECT}`, { headers: { ...forged, 'cf-connecting-ip': '198.51.100.7' } })
    ).json()) as { dsn: string };
    expect(new URL(direct.dsn).host).toBe(new URL(w.url).host);
    const proxied = (await (
      await w.api(`/api/projects/${HYGIENE_PROJECT}`, { headers: { ...forged, 'cf-connecting-ip': PROXY } })
    ).json()) as { dsn: string };
    expect(new URL(proxied.dsn).host).toBe('evil.example');
    const evilOrigin = { ...forged, origin: 'https://evil.example', 'cf-connecting-ip': '198.51.100.7' };
    expect((await new Client(w.url).post('/login', { key: KEY, next: '/' }, evilOrigin)).status).toBe(403);
    // A request with a body arrives whole once its forwarding headers are removed.
    const created = await w.api('/api/projects', {
      method: 'POST',
      json: { slug: 'fwd', name: 'Forwarded' },
      headers: { ...forged, 'cf-connecting-ip': '198.51.100.7' },
    });
    expect(created.status).toBe(201);
    const body = (await created.json()) as { name: string; dsn: string };
    expect(body.name).toBe('Forwarded');
    expect(new URL(body.dsn).host).toBe(new URL(w.url).host);
  });

  it('throttles dashboard sign-in after 10 failures', async () => {
    const from = { 'cf-connecting-ip': '198.51.100.8' };
    for (let i = 0; i < 10; i++)
      expect((await new Client(w.url).post('/login', { key: `wrong-${i}`, next: '/' }, from)).status).toBe(401);
    const refused = await new Client(w.url).post('/login', { key: KEY, next: '/' }, from);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(14 * 60);
  });
});
