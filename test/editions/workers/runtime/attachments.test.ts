// Attachments inside the Workers runtime: the Worker's own app on D1 stores an Android
// crash's screenshot and a file larger than one chunk with their event (one D1 batch),
// lists them and streams them back byte for byte with the safe download headers; user
// feedback sent later links to the event's issue. The same with the bytes in the R2
// bucket `BLOBS` (each chunk row keeps its object's key, src/store/blobs.ts) as in D1.
import { env } from 'cloudflare:workers';
import type { Hono } from 'hono';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildWorkerDeps, type WorkerEnv } from '../../../../src/editions/workers/deps.js';
import { createApp } from '../../../../src/editions/app.js';
import { readObject, type BlobBucket } from '../../../../src/store/blobs.js';
import type { Store } from '../../../../src/store/database.js';
import { migrate } from '../../../../src/store/migrate.js';
import { createProject, PROJECT_DEFAULTS } from '../../../../src/store/projects.js';
import androidEventText from '../../../fixtures/mobile/android-event.json?raw';
import { withBlobs, withoutQueue } from './direct-path.js';

const androidEvent = JSON.parse(androidEventText) as Record<string, unknown>;

let app: Hono;
let store: Store;
const editions = { d1: withoutQueue(env as unknown as WorkerEnv), r2: withBlobs(env as unknown as WorkerEnv) };
const apps = {} as Record<keyof typeof editions, Hono>;
const bucket = editions.r2.BLOBS as BlobBucket;

beforeAll(async () => {
  for (const [name, e] of Object.entries(editions)) {
    const deps = buildWorkerDeps({ ...e, RATE_LIMIT: '0', LOG_LEVEL: 'silent' });
    apps[name as keyof typeof editions] = createApp(deps);
    store = deps.store;
  }
  app = apps.d1;
  await migrate(store);
});

const enc = new TextEncoder();

function envelope(header: object, items: { headers: object; payload: Uint8Array }[]): Uint8Array<ArrayBuffer> {
  const parts: Uint8Array[] = [enc.encode(JSON.stringify(header) + '\n')];
  for (const item of items)
    parts.push(
      enc.encode(JSON.stringify({ ...item.headers, length: item.payload.byteLength }) + '\n'),
      item.payload,
      enc.encode('\n'),
    );
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

describe.each(['d1', 'r2'] as const)('attachments (bytes in %s)', (edition) => {
  it('stores, lists and downloads a screenshot and a two-chunk file with their event', async () => {
    const app = apps[edition];
    const p = await createProject(
      store.db,
      { ...PROJECT_DEFAULTS, slug: `mobile-${edition}-${Date.now()}`, name: 'mobile' },
      Date.now(),
    );
    const id = 'f'.repeat(31) + (edition === 'd1' ? '1' : '2');
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3, 4]);
    const big = new Uint8Array(700_000).map((_, i) => i % 249);
    const body = envelope({ event_id: id }, [
      {
        headers: { type: 'event' },
        payload: enc.encode(JSON.stringify({ ...androidEvent, event_id: id, timestamp: Date.now() / 1000 })),
      },
      {
        headers: {
          type: 'attachment',
          filename: 'screenshot.png',
          content_type: 'image/png',
          attachment_type: 'event.attachment',
        },
        payload: png,
      },
      { headers: { type: 'attachment', filename: 'trace.bin' }, payload: big },
    ]);
    const res = await app.fetch(
      new Request(`http://worker/api/${p.id}/envelope/?sentry_key=${p.dsn_key}`, {
        method: 'POST',
        body: body as Uint8Array<ArrayBuffer>,
      }),
    );
    expect(res.status).toBe(200);

    const listed = await app.fetch(new Request(`http://worker/api/projects/${p.slug}/events/${id}/attachments`));
    expect(listed.status).toBe(200);
    const { attachments } = (await listed.json()) as { attachments: { id: string; name: string; size: number }[] };
    expect(attachments.map((a) => [a.name, a.size])).toEqual([
      ['screenshot.png', png.length],
      ['trace.bin', big.length],
    ]);
    const download = await app.fetch(
      new Request(`http://worker/api/projects/${p.slug}/attachments/${attachments[1].id}`),
    );
    expect(download.headers.get('content-disposition')).toMatch(/^attachment;/);
    expect(download.headers.get('x-content-type-options')).toBe('nosniff');
    expect(new Uint8Array(await download.arrayBuffer())).toEqual(big);
    const image = await app.fetch(new Request(`http://worker/api/projects/${p.slug}/attachments/${attachments[0].id}`));
    expect(new Uint8Array(await image.arrayBuffer())).toEqual(png);
    // Where the bytes are: in the chunk rows, or in objects the rows name.
    const chunks = await store.db
      .selectFrom('attachment_chunks')
      .select(['seq', 'data', 'r2_key'])
      .where('attachment_id', '=', Number(attachments[1].id))
      .orderBy('seq')
      .execute();
    expect(chunks).toHaveLength(2);
    for (const c of chunks) {
      if (edition === 'd1') {
        expect(c.r2_key).toBeNull();
        expect(c.data.byteLength).toBeGreaterThan(0);
      } else {
        expect(c.data.byteLength).toBe(0);
        expect(c.r2_key).toMatch(/^attachments\/\d{4}-\d{2}-\d{2}\//);
        expect((await readObject(bucket, c.r2_key as string))?.byteLength).toBeGreaterThan(0);
      }
    }

    // User feedback about the event, in a later envelope, is linked to its issue.
    const report = { event_id: id, name: 'Grace', email: 'grace@example.com', comments: 'App closed while paying.' };
    const fb = await app.fetch(
      new Request(`http://worker/api/${p.id}/envelope/?sentry_key=${p.dsn_key}`, {
        method: 'POST',
        body: envelope({ event_id: id }, [
          { headers: { type: 'user_report' }, payload: enc.encode(JSON.stringify(report)) },
        ]),
      }),
    );
    expect(fb.status).toBe(200);
    const feedback = (await (await app.fetch(new Request(`http://worker/api/projects/${p.slug}/feedback`))).json()) as {
      feedback: { comments: string; issue: string | null }[];
    };
    expect(feedback.feedback).toMatchObject([{ comments: 'App closed while paying.', issue: expect.any(String) }]);
  });

  it.runIf(edition === 'd1')('counts sessions that end in an ANR for the release (D1 ingest batch)', async () => {
    const p = await createProject(
      store.db,
      { ...PROJECT_DEFAULTS, slug: `anr-${Date.now()}`, name: 'anr' },
      Date.now(),
    );
    const started = new Date(Date.now() - 3_600_000).toISOString();
    const session = (sid: string, extra: object) => ({
      sid,
      started,
      attrs: { release: 'shop@1', environment: 'production' },
      ...extra,
    });
    const send = (items: object[]) =>
      app.fetch(
        new Request(`http://worker/api/${p.id}/envelope/?sentry_key=${p.dsn_key}`, {
          method: 'POST',
          body: envelope(
            {},
            items.map((payload) => ({ headers: { type: 'session' }, payload: enc.encode(JSON.stringify(payload)) })),
          ),
        }),
      );
    const sids = ['a', 'b', 'c', 'd'].map((c) => c.repeat(32));
    expect((await send(sids.map((sid) => session(sid, { init: true, status: 'ok' })))).status).toBe(200);
    const later = new Date().toISOString();
    expect(
      (
        await send([
          session(sids[0], { status: 'abnormal', abnormal_mechanism: 'anr_foreground', timestamp: later }),
          session(sids[1], { status: 'exited', timestamp: later }),
        ])
      ).status,
    ).toBe(200);
    const list = (await (await app.fetch(new Request(`http://worker/api/projects/${p.slug}/releases`))).json()) as {
      releases: { release: string; anr_rate: number | null }[];
    };
    expect(list.releases.find((r) => r.release === 'shop@1')?.anr_rate).toBe(0.25);
  });
});
