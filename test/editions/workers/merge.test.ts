// Issue merges on the serverless edition (the Worker as deployed, on a local D1, no
// interactive transactions): the merge route moves counts, aggregates and events into
// the target as one atomic batch, and D1 ingest sends a merged fingerprint's later
// events there; re-symbolication in the Worker's steps maps a fingerprint the
// symbolicated frames give to the event's issue, or merges the issue that has it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RESYMBOLICATE_CRON } from '../../../src/editions/workers/crons.js';
import { envelope, errorEvent, eventId } from '../../ingest/helpers.js';
import { startTestWorker, type TestWorker } from './harness.js';

const HOUR = 3_600_000;
const MAPPING = 'com.example.Checkout -> a.b:\n    void pay(int) -> c\n';

function form(kind: string, release: string, name: string, content: string): FormData {
  const body = new FormData();
  body.set('kind', kind);
  body.set('release', release);
  body.set('file', new Blob([content]), name);
  return body;
}

/** An obfuscated Java crash of `release` at `timestamp`. */
function javaEvent(release: string, timestamp: number, type = 'IllegalStateException'): Record<string, unknown> {
  return {
    ...errorEvent({ id: eventId(), timestamp, type, value: 'declined', release }),
    platform: 'java',
    exception: {
      values: [
        {
          type,
          value: 'declined',
          module: 'java.lang',
          stacktrace: { frames: [{ module: 'a.b', function: 'c', filename: 'SourceFile', lineno: 4, in_app: true }] },
        },
      ],
    },
  };
}

describe('issue merges on the Worker', () => {
  let w: TestWorker;
  let key = '';
  let projectId = 0;
  beforeAll(async () => {
    w = await startTestWorker({ API_KEYS: 'merge-key' });
    const created = await w.api('/api/projects', { method: 'POST', json: { slug: 'shop' } });
    expect(created.status).toBe(201);
    const project = (await created.json()) as { dsn: string; id: number };
    key = new URL(project.dsn).username;
    projectId = project.id;
  }, 120_000);
  afterAll(async () => {
    await w?.close();
  });

  async function send(events: Record<string, unknown>[]): Promise<void> {
    const res = await fetch(`${w.url}/api/${projectId}/envelope/?sentry_key=${key}`, {
      method: 'POST',
      body: new Uint8Array(
        envelope(
          {},
          events.map((payload) => ({ type: 'event', payload })),
        ),
      ),
    });
    expect(res.status, await res.clone().text()).toBe(200);
  }
  const get = async (path: string) => {
    const res = await w.api(path);
    return { status: res.status, body: (await res.json()) as any };
  };
  const issues = async (release?: string) =>
    (await get(`/api/projects/shop/issues${release ? `?release=${encodeURIComponent(release)}` : ''}`)).body
      .issues as any[];

  it('merges issues into a target and sends later events of a merged fingerprint there', async () => {
    const now = Date.now();
    await send([
      errorEvent({ timestamp: now - 3 * HOUR, fn: 'a', user: 'u1', release: 'm@1' }),
      errorEvent({ timestamp: now - 2 * HOUR, fn: 'b', user: 'u2', release: 'm@1' }),
      errorEvent({ timestamp: now - HOUR, fn: 'b', user: 'u1', release: 'm@1' }),
    ]);
    const [b, a] = await issues('m@1'); // latest first
    expect([a.event_count, b.event_count]).toEqual([1, 2]);
    const bad = await w.api('/api/projects/shop/issues/merge', {
      method: 'POST',
      json: { fingerprints: [a.fingerprint], into: a.fingerprint },
    });
    expect(bad.status).toBe(400);
    const unknown = await w.api('/api/projects/shop/issues/merge', {
      method: 'POST',
      json: { fingerprints: ['f'.repeat(32)], into: a.fingerprint },
    });
    expect(unknown.status).toBe(404);

    const merged = await w.api('/api/projects/shop/issues/merge', {
      method: 'POST',
      json: { fingerprints: [b.fingerprint], into: a.fingerprint },
    });
    expect(merged.status, await merged.clone().text()).toBe(200);
    expect(await merged.json()).toMatchObject({
      fingerprint: a.fingerprint,
      event_count: 3,
      stored_count: 3,
      users: 2,
      first_seen: a.first_seen,
      last_seen: b.last_seen,
    });
    const detail = (await get(`/api/projects/shop/issues/${a.fingerprint}?days=1`)).body;
    expect(detail.timeline.filter((h: any) => h.events > 0).map((h: any) => h.events)).toEqual([1, 1, 1]);
    expect(detail.breakdown.release).toEqual([{ value: 'm@1', count: 3 }]);
    expect((await get(`/api/projects/shop/issues/${b.fingerprint}`)).body).toMatchObject({
      fingerprint: a.fingerprint,
      merged_into: a.fingerprint,
    });

    await send([errorEvent({ timestamp: now - 60_000, fn: 'b', user: 'u3', release: 'm@1' })]);
    expect((await issues('m@1')).map((i) => [i.fingerprint, i.event_count, i.users])).toEqual([[a.fingerprint, 4, 3]]);
    const events = (await get(`/api/projects/shop/events?fingerprint=${a.fingerprint}&days=1`)).body.events as any[];
    expect(events).toHaveLength(4);
  });

  it('re-symbolication maps the symbolicated fingerprint to the issue, so the next crash joins it', async () => {
    const now = Date.now();
    await send([javaEvent('android@7', now - HOUR)]);
    const [before] = await issues('android@7');
    const uploaded = await w.api('/api/projects/shop/symbols', {
      method: 'POST',
      body: form('proguard', 'android@7', 'mapping.txt', MAPPING),
    });
    expect(uploaded.status).toBe(201);
    await w.runCron(RESYMBOLICATE_CRON);
    const [after] = await issues('android@7');
    expect(after.fingerprint).toBe(before.fingerprint);
    expect(before.location).toBe('SourceFile:4');
    expect(after.location).not.toBe(before.location);
    expect(after.location).toMatch(/Checkout/);

    await send([javaEvent('android@7', now - 60_000)]);
    expect((await issues('android@7')).map((i) => [i.fingerprint, i.event_count, i.location])).toEqual([
      [before.fingerprint, 2, after.location],
    ]);
  });

  it('re-symbolication merges the issue a symbolicated crash opened with the issue of the same crash sent before its symbols', async () => {
    const now = Date.now();
    // android@8's mapping is there from the start: its crash is symbolicated at ingest.
    expect(
      (
        await w.api('/api/projects/shop/symbols', {
          method: 'POST',
          body: form('proguard', 'android@8', 'mapping.txt', MAPPING),
        })
      ).status,
    ).toBe(201);
    // (Another crash than the test before's, whose symbolicated fingerprint is mapped already.)
    const type = 'IllegalArgumentException';
    await send([javaEvent('android@8', now - 2 * HOUR, type)]);
    // The same crash on android@9, whose mapping comes later.
    await send([javaEvent('android@9', now - HOUR, type)]);
    const [symbolicated] = await issues('android@8');
    const [plain] = await issues('android@9');
    expect(plain.fingerprint).not.toBe(symbolicated.fingerprint);

    expect(
      (
        await w.api('/api/projects/shop/symbols', {
          method: 'POST',
          body: form('proguard', 'android@9', 'mapping.txt', MAPPING),
        })
      ).status,
    ).toBe(201);
    await w.runCron(RESYMBOLICATE_CRON);
    // One issue, the older: the symbolicated one.
    const all = (await issues()).filter(
      (i) => i.fingerprint === symbolicated.fingerprint || i.fingerprint === plain.fingerprint,
    );
    expect(all.map((i) => [i.fingerprint, i.event_count, i.last_release])).toEqual([
      [symbolicated.fingerprint, 2, 'android@9'],
    ]);
    expect((await get(`/api/projects/shop/issues/${plain.fingerprint}`)).body).toMatchObject({
      fingerprint: symbolicated.fingerprint,
      merged_into: symbolicated.fingerprint,
    });
    await send([javaEvent('android@9', now - 60_000, type)]);
    expect((await get(`/api/projects/shop/issues/${symbolicated.fingerprint}`)).body.event_count).toBe(3);
  });
});
