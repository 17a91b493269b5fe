// Input hygiene at ingest (docs/ingest-normalisation.md "Input hygiene"), on both databases: nesting
// 5 000 levels deep anywhere in an event is cut at 64 levels (the valid events
// beside it are kept, and every stored event's detail reads back), and NUL or lone
// surrogates in any text are stored as U+FFFD, so the same release, tag or message
// is listed and opened alike on SQLite and PostgreSQL.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { depthOf } from '../helpers/json.js';
import { DEPTH_LIMIT_MARK } from '../../src/ingest/hygiene.js';
import type { ProjectRow } from '../../src/store/schema.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { errorEvent, eventsOf, makeProject, sessionUpdate } from './helpers.js';

const DEEP = 5000;
const deepArray = (inner = '"x"') => '['.repeat(DEEP) + inner + ']'.repeat(DEEP);
const deepObject = (inner = '"x"') => '{"a":'.repeat(DEEP) + inner + '}'.repeat(DEEP);

/** An event item whose JSON text has `fragment` spliced in as the value of a field (built as text: too deep for JSON.stringify). */
function eventText(base: Record<string, unknown>, field: string, fragment: string): string {
  const json = JSON.stringify({ ...base, [field]: '@@' });
  return json.replace('"@@"', fragment);
}

function envelopeOf(items: Array<{ type: string; text: string }>): string {
  return ['{}', ...items.flatMap((i) => [JSON.stringify({ type: i.type }), i.text])].join('\n');
}

describe.each(dialects)('input hygiene at ingest on %s', (dialect) => {
  let t: TestServer;
  let p: ProjectRow;
  beforeAll(async () => {
    t = await startTestServer(dialect, { env: { RATE_LIMIT: '0' } });
    p = await makeProject(t);
  });
  afterAll(() => t?.close());

  const send = (body: string) =>
    fetch(`${t.url}/api/${p.id}/envelope/?sentry_key=${p.dsn_key}`, { method: 'POST', body });

  it('cuts deep nesting at 64 levels, keeps the valid events beside it, and every detail reads back', async () => {
    const now = t.clock.now();
    const base = () => errorEvent({ timestamp: now });
    const cases: Array<[string, string]> = [
      ['tags', `{"deep":${deepArray()}}`],
      ['logentry', `{"message":"got %s","params":[${deepObject()}]}`],
      ['extra', `{"deep":${deepObject()}}`],
      ['contexts', `{"deep":${deepObject()}}`],
      ['user', `{"id":"u1","data":${deepArray()}}`],
      ['request', `{"url":"http://x/","data":${deepObject()}}`],
      ['sdk', `{"name":"sentry.javascript.node","deep":${deepArray()}}`],
      ['breadcrumbs', `{"values":[{"message":"m","data":${deepObject()}}]}`],
    ];
    const ids: string[] = [];
    const items = cases.map(([field, fragment]) => {
      const ev = base();
      ids.push(ev.event_id as string);
      return { type: 'event', text: eventText(ev, field, fragment) };
    });
    // exception.value nested deep.
    const ex = base();
    items.push({ type: 'event', text: JSON.stringify(ex).replace('"value":"boom"', `"value":${deepArray()}`) });
    const valid = base();
    items.push({ type: 'event', text: JSON.stringify(valid) });
    ids.push(ex.event_id as string, valid.event_id as string);
    const res = await send(envelopeOf(items));
    expect(res.status).toBe(200);
    const stored = await eventsOf(t, p);
    expect(stored.map((e) => e.event_id).sort()).toEqual(ids.sort());
    for (const row of stored) {
      const detail = await t.api(`/api/projects/${p.slug}/events/${row.event_id}`);
      expect(detail.status).toBe(200);
      const body = (await detail.json()) as Record<string, unknown>;
      expect(depthOf(body)).toBeLessThan(80);
    }
    const tagged = stored.find((e) => JSON.stringify(e).includes('depth limit'));
    expect(tagged).toBeDefined();
    const exDetail = (await (await t.api(`/api/projects/${p.slug}/events/${ex.event_id}`)).json()) as {
      exceptions: Array<{ value: string }>;
      title?: string;
    };
    expect(JSON.stringify(exDetail)).toContain(DEPTH_LIMIT_MARK);
  });

  it('stores NUL and lone surrogates as U+FFFD, so the release is listed and opens', async () => {
    const now = t.clock.now();
    const ev = errorEvent({ timestamp: now, value: 'nul\u0000here', release: 'rel\ud800x' });
    ev.tags = { 'k\u0000ey': 'v\udc00', plain: 'ok' };
    ev.message = 'a\u0000b';
    const session = sessionUpdate({ started: now, release: 'rel\ud800x' });
    (session as any).did = 'd\u0000id';
    const body = envelopeOf([
      { type: 'event', text: JSON.stringify(ev) },
      { type: 'session', text: JSON.stringify(session) },
    ]);
    const res = await send(body);
    expect(res.status).toBe(200);
    const row = (await eventsOf(t, p)).find((e) => e.event_id === ev.event_id)!;
    expect(row.release).toBe('rel\ufffdx');
    const releases = (await (await t.api(`/api/projects/${p.slug}/releases`)).json()) as {
      releases?: Array<{ release?: string; version?: string }>;
    } & Record<string, unknown>;
    expect(JSON.stringify(releases)).toContain('rel\ufffdx');
    const opened = await t.api(`/api/projects/${p.slug}/releases/${encodeURIComponent('rel\ufffdx')}`);
    expect(opened.status).toBe(200);
    const detail = (await (await t.api(`/api/projects/${p.slug}/events/${ev.event_id}`)).json()) as Record<string, any>;
    expect(detail.tags).toMatchObject({ 'k\ufffdey': 'v\ufffd', plain: 'ok' });
    expect(JSON.stringify(detail)).not.toMatch(/\\u0000|\\ud[89a-f]/i);
    expect(detail.exceptions[0].value).toBe('nul\ufffdhere');
    // The same event sent again is a duplicate: its cleaned id and payload are stable.
    expect((await send(body)).status).toBe(200);
    expect((await eventsOf(t, p)).filter((e) => e.event_id === ev.event_id)).toHaveLength(1);
  });
});
