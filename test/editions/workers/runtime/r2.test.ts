// Bytes in R2 inside workerd (src/store/blobs.ts): with the bucket `BLOBS` of wrangler.jsonc
// bound, the real SDK's envelopes leave payload chunk rows with a key and no bytes in D1,
// the bytes in the bucket, and every reader (event detail, re-symbolication's reader,
// export) gets them back; the queue consumer does the same. Retention and project deletion
// remove the objects (payloads and attachments), and retention sweeps an orphan object of
// a failed batch. Export → import → export gives the same lines, attachments included,
// with the bucket and without it. Storage usage (storage_usage, kept by triggers) counts
// the objects' bytes: the same with and without the bucket. (attachments.test.ts
// downloads attachments from R2.)
import { createMessageBatch } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import type { Hono } from 'hono';
import { beforeAll, describe, expect, it } from 'vitest';
import { DAY_MS } from '../../../../src/clock.js';
import { buildWorkerDeps, type WorkerEnv } from '../../../../src/editions/workers/deps.js';
import { consumeIngestBatch, type QueueBinding } from '../../../../src/editions/workers/ingest-queue.js';
import { decompressBlob } from '../../../../src/editions/workers/runtime.js';
import { workersTransferRuntime } from '../../../../src/editions/workers/transfer-runtime.js';
import { createApp } from '../../../../src/editions/app.js';
import { ATTACHMENT_PREFIX, PAYLOAD_PREFIX, readObject, type BlobBucket } from '../../../../src/store/blobs.js';
import type { Store } from '../../../../src/store/database.js';
import { migrate } from '../../../../src/store/migrate.js';
import { readStoredPayloads } from '../../../../src/store/payloads.js';
import { createProject, PROJECT_DEFAULTS } from '../../../../src/store/projects.js';
import { runRetention } from '../../../../src/store/retention.js';
import { importNdjson } from '../../../../src/transfer/import.js';
import type { TransferRuntime } from '../../../../src/transfer/line-type.js';
import nodeEvent from '../../../fixtures/sdk-captures/node-event.envelope?raw';
import { withBlobs, withoutQueue } from './direct-path.js';
import { bucketKeys, bytesOf, comparable, exported } from './r2-helpers.js';

const FIXTURE_EVENT_ID = '53581e2b976e4b7c89e8cf789073fd8e';
const KEY = 'workers-r2-test-key';
const settings = { RATE_LIMIT: '0', LOG_LEVEL: 'silent', API_KEYS: KEY };
const workerEnv = env as unknown as WorkerEnv;
const bucket = withBlobs(workerEnv).BLOBS as BlobBucket;

let app: Hono;
let store: Store;
let plain: { app: Hono; store: Store };

beforeAll(async () => {
  const deps = buildWorkerDeps({ ...withBlobs(workerEnv), ...settings });
  store = deps.store;
  app = createApp(deps);
  const d1 = buildWorkerDeps({ ...withoutQueue(workerEnv), ...settings });
  plain = { app: createApp(d1), store: d1.store };
  await migrate(store);
});

let n = 0;
async function project() {
  n += 1;
  return createProject(store.db, { ...PROJECT_DEFAULTS, slug: `r2-${n}-${Date.now()}`, name: `r2 ${n}` }, Date.now());
}
type Project = Awaited<ReturnType<typeof project>>;

const eventId = (i: number) => i.toString(16).padStart(32, 'c');

function envelope(id: string): string {
  return nodeEvent.replaceAll(FIXTURE_EVENT_ID, id);
}

/** The SDK's event with a file attached (`bytes`), as one envelope. */
function withAttachment(id: string, bytes: Uint8Array): Uint8Array<ArrayBuffer> {
  const lines = envelope(id).trimEnd().split('\n');
  const head = new TextEncoder().encode(
    `${lines.join('\n')}\n${JSON.stringify({ type: 'attachment', filename: 'trace.bin', length: bytes.byteLength })}\n`,
  );
  const out = new Uint8Array(head.byteLength + bytes.byteLength + 1);
  out.set(head);
  out.set(bytes, head.byteLength);
  out[out.byteLength - 1] = 0x0a;
  return out;
}

async function send(target: Hono, p: Project, body: string | Uint8Array<ArrayBuffer>): Promise<number> {
  const res = await target.fetch(
    new Request(`http://worker/api/${p.id}/envelope/?sentry_key=${p.dsn_key}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-sentry-envelope' },
      body,
    }),
  );
  return res.status;
}

const api = (target: Hono, path: string, method = 'GET') =>
  Promise.resolve(
    target.fetch(new Request(`http://worker${path}`, { method, headers: { authorization: `Bearer ${KEY}` } })),
  );

async function chunksOf(db: Store['db'], projectId: number) {
  return db.selectFrom('payload_chunks').select(['id', 'data', 'r2_key']).where('project_id', '=', projectId).execute();
}

async function attachmentChunksOf(db: Store['db'], projectId: number) {
  return db
    .selectFrom('attachment_chunks as c')
    .innerJoin('attachments as a', 'a.id', 'c.attachment_id')
    .select(['c.data', 'c.r2_key'])
    .where('a.project_id', '=', projectId)
    .execute();
}

const objectKeys = (prefix = PAYLOAD_PREFIX) => bucketKeys(bucket, prefix);

describe('payloads in R2', () => {
  it('keeps keys in D1 and bytes in the bucket, and reads them back for the event detail and re-symbolication', async () => {
    const p = await project();
    for (let i = 1; i <= 3; i++) expect(await send(app, p, envelope(eventId(i)))).toBe(200);
    const chunks = await chunksOf(store.db, p.id);
    expect(chunks).toHaveLength(3);
    const keys = await objectKeys();
    for (const c of chunks) {
      expect(c.data.byteLength).toBe(0);
      expect(c.r2_key).toMatch(/^payloads\/\d{4}-\d{2}-\d{2}\/[0-9a-f-]{36}$/);
      expect(keys).toContain(c.r2_key);
    }

    const res = await api(app, `/api/projects/${p.slug}/events/${eventId(2)}`);
    expect(res.status).toBe(200);
    const detail = (await res.json()) as { event_id: string; exceptions: { type: string; frames: unknown[] }[] };
    expect(detail.event_id).toBe(eventId(2));
    // The exception and its frames come from the payload read back from R2.
    expect(detail.exceptions.length).toBeGreaterThan(0);
    expect(detail.exceptions[0].frames.length).toBeGreaterThan(0);

    const rows = await store.db.selectFrom('events').selectAll().where('project_id', '=', p.id).orderBy('id').execute();
    const payloads = await readStoredPayloads(store.db, rows, decompressBlob, bucket);
    for (const r of rows)
      expect(JSON.parse(new TextDecoder().decode(payloads.get(Number(r.id)))).event_id).toBe(r.event_id);
    // Without the bucket the same rows read as empty: D1 holds no bytes of them.
    const without = await readStoredPayloads(store.db, rows, decompressBlob);
    for (const r of rows) expect(without.get(Number(r.id))?.byteLength).toBe(0);
  });

  it('writes the chunks of a queue batch to the bucket before the batch', async () => {
    const p = await project();
    const sent: unknown[] = [];
    const queue: QueueBinding = {
      async send(body) {
        sent.push(structuredClone(body));
      },
    };
    const queued = createApp(buildWorkerDeps({ ...withBlobs(workerEnv), ...settings, INGEST_QUEUE: queue }));
    for (let i = 100; i < 110; i++) expect(await send(queued, p, envelope(eventId(i)))).toBe(200);
    expect(sent).toHaveLength(10);
    const batch = createMessageBatch(
      'faultline-ingest',
      sent.map((body, i) => ({ id: `r2-${p.id}-${i}`, timestamp: new Date(1_790_000_000_000), attempts: 1, body })),
    );
    const summary = await consumeIngestBatch(batch, {
      store,
      logger: { debug() {}, info() {}, warn() {}, error() {} } as never,
      now: () => 1_790_000_000_000,
      bucket,
    });
    expect(summary.committed).toBe(10);
    const chunks = await chunksOf(store.db, p.id);
    expect(chunks.length).toBeGreaterThan(0);
    for (const c of chunks) expect(c.r2_key).not.toBeNull();
    const rows = await store.db.selectFrom('events').selectAll().where('project_id', '=', p.id).execute();
    expect(rows).toHaveLength(10);
    const payloads = await readStoredPayloads(store.db, rows, decompressBlob, bucket);
    for (const r of rows)
      expect(JSON.parse(new TextDecoder().decode(payloads.get(Number(r.id)))).event_id).toBe(r.event_id);
  });

  it('keeps the bytes in D1 without a bucket', async () => {
    const p = await project();
    expect(await send(plain.app, p, envelope(eventId(200)))).toBe(200);
    const [chunk] = await chunksOf(plain.store.db, p.id);
    expect(chunk.r2_key).toBeNull();
    expect(chunk.data.byteLength).toBeGreaterThan(0);
  });

  it('removes the objects of a deleted project', async () => {
    const p = await project();
    for (let i = 300; i < 303; i++) expect(await send(app, p, envelope(eventId(i)))).toBe(200);
    expect(await send(app, p, withAttachment(eventId(303), new Uint8Array(1000).fill(7)))).toBe(200);
    const keys = (await chunksOf(store.db, p.id)).map((c) => c.r2_key as string);
    expect(keys).toHaveLength(4);
    const files = await store.db
      .selectFrom('attachment_chunks')
      .select('r2_key')
      .where('attachment_id', 'in', store.db.selectFrom('attachments').select('id').where('project_id', '=', p.id))
      .execute();
    expect(files).toHaveLength(1);
    keys.push(files[0].r2_key as string);
    for (const k of keys) expect(await bucket.get(k)).not.toBeNull();
    expect((await api(app, `/api/projects/${p.slug}`, 'DELETE')).status).toBe(204);
    const left = [...(await objectKeys()), ...(await objectKeys(ATTACHMENT_PREFIX))];
    for (const k of keys) expect(left).not.toContain(k);
  });
});

describe('storage usage with payloads in R2', () => {
  it('counts the objects: the same usage with the bucket and without it', async () => {
    const inR2 = await project();
    const inD1 = await project();
    const file = new Uint8Array(700 * 1024).map((_, i) => (i * 7919) % 251);
    for (const [target, p] of [
      [app, inR2],
      [plain.app, inD1],
    ] as const) {
      expect(await send(target, p, envelope(eventId(300)))).toBe(200);
      expect(await send(target, p, withAttachment(eventId(301), file))).toBe(200);
    }
    const usage = async (target: Hono, p: Project) =>
      (await (await api(target, `/api/projects/${p.slug}/usage`)).json()) as {
        bytes: number;
        kinds: Record<string, { count: number; bytes: number }>;
      };
    const r2 = await usage(app, inR2);
    const d1 = await usage(plain.app, inD1);
    // The rows in D1 hold no payload bytes, the objects do.
    const chunks = await chunksOf(store.db, inR2.id);
    expect(chunks.every((c) => c.data.byteLength === 0 && c.r2_key !== null)).toBe(true);
    let objectBytes = 0;
    for (const c of chunks) objectBytes += (await readObject(bucket, c.r2_key!))!.byteLength;
    expect(r2.kinds.events).toEqual({ count: 2, bytes: objectBytes });
    expect(r2.kinds.attachments).toEqual({ count: 1, bytes: file.byteLength });
    expect(r2.kinds).toEqual(d1.kinds);
    expect(r2.bytes).toBe(d1.bytes);
    expect(r2.bytes).toBe(objectBytes + file.byteLength);
  });
});

describe('export and import with payloads in R2', () => {
  const withBucket: TransferRuntime = { ...workersTransferRuntime, blobs: bucket };

  it('exports, imports into the bucket and exports the same lines; and the same without the bucket', async () => {
    const p = await project();
    for (let i = 400; i < 405; i++) expect(await send(app, p, envelope(eventId(i)))).toBe(200);
    const file700k = new Uint8Array(700_000).map((_, i) => i % 251);
    expect(await send(app, p, withAttachment(eventId(405), file700k))).toBe(200);
    const first = await exported(store, withBucket, p.slug);
    // The attachment's two chunks travel with their bytes, read from their objects.
    const chunkLines = first
      .filter((l) => l.startsWith('{"type":"attachment_chunk"'))
      .map((l) => JSON.parse(l) as { data: string });
    expect(chunkLines).toHaveLength(2);
    expect(chunkLines.reduce((n, l) => n + atob(l.data).length, 0)).toBe(file700k.byteLength);
    expect(first.filter((l) => l.startsWith('{"type":"event"'))).toHaveLength(6);
    expect(first.join('\n')).toContain(eventId(402));
    const file = (slug: string) =>
      [
        JSON.stringify({
          type: 'meta',
          format: 1,
          exported_at: new Date(0).toISOString(),
          source: { faultline: 'test', database: 'd1', project: slug },
        }),
        ...first,
      ]
        .map((l) => l.replaceAll(`"${p.slug}"`, `"${slug}"`))
        .join('\n') + '\n';

    // Into the bucket: rows with keys, and the same lines back.
    const intoR2 = `${p.slug}-r2`;
    await importNdjson(store, withBucket, bytesOf(file(intoR2)));
    const imported = await store.db
      .selectFrom('projects')
      .select('id')
      .where('slug', '=', intoR2)
      .executeTakeFirstOrThrow();
    const chunks = await chunksOf(store.db, imported.id);
    expect(chunks.length).toBeGreaterThan(0);
    for (const c of chunks) {
      expect(c.r2_key).not.toBeNull();
      expect(c.data.byteLength).toBe(0);
    }
    // The attachment's chunks too, as ingest stores them; a second import adds no object.
    const attachmentChunks = await attachmentChunksOf(store.db, imported.id);
    expect(attachmentChunks).toHaveLength(2);
    for (const c of attachmentChunks) {
      expect(c.r2_key).toMatch(new RegExp(`^${ATTACHMENT_PREFIX}`));
      expect(new Uint8Array(c.data).byteLength).toBe(0);
    }
    const attachmentObjects = (await objectKeys(ATTACHMENT_PREFIX)).length;
    await importNdjson(store, withBucket, bytesOf(file(intoR2)));
    expect((await objectKeys(ATTACHMENT_PREFIX)).length).toBe(attachmentObjects);
    const again = comparable(await exported(store, withBucket, intoR2), intoR2, p.slug);
    expect(again).toEqual(comparable(first, p.slug, p.slug));

    // Without the bucket (the D1-only path): bytes in D1, and the same lines back.
    const intoD1 = `${p.slug}-d1`;
    await importNdjson(plain.store, workersTransferRuntime, bytesOf(file(intoD1)));
    const d1Project = await plain.store.db
      .selectFrom('projects')
      .select('id')
      .where('slug', '=', intoD1)
      .executeTakeFirstOrThrow();
    for (const c of await chunksOf(plain.store.db, d1Project.id)) {
      expect(c.r2_key).toBeNull();
      expect(c.data.byteLength).toBeGreaterThan(0);
    }
    const plainAgain = comparable(await exported(plain.store, workersTransferRuntime, intoD1), intoD1, p.slug);
    expect(plainAgain).toEqual(comparable(first, p.slug, p.slug));
  });
});

describe('retention with payloads in R2', () => {
  it('removes the objects of expired payload and attachment chunks and sweeps orphans of older days, keeping newer objects', async () => {
    const p = await project();
    for (let i = 500; i < 503; i++) expect(await send(app, p, envelope(eventId(i)))).toBe(200);
    expect(await send(app, p, withAttachment(eventId(503), new Uint8Array(100).fill(1)))).toBe(200);
    expect((await objectKeys(ATTACHMENT_PREFIX)).length).toBeGreaterThan(0);
    const newest = await store.db
      .selectFrom('payload_chunks')
      .select((eb) => eb.fn.max('received_at').as('at'))
      .executeTakeFirstOrThrow();
    const now = Number(newest.at) + 40 * DAY_MS;
    // An orphan (its batch failed) of a day long past, and an object newer than the cutoff.
    const orphan = `${PAYLOAD_PREFIX}2001-01-01/orphan`;
    const recent = `${PAYLOAD_PREFIX}${new Date(now).toISOString().slice(0, 10)}/recent`;
    await bucket.put(orphan, new Uint8Array([1]));
    await bucket.put(recent, new Uint8Array([2]));
    expect((await objectKeys()).length).toBeGreaterThan(3);

    const summary = await runRetention(store, { now, retentionDays: 30, blobs: bucket });
    expect(summary.ran).toBe(true);
    expect(summary.deleted.payload_chunks).toBeGreaterThanOrEqual(3);
    expect(await store.db.selectFrom('payload_chunks').select('id').execute()).toHaveLength(0);
    expect(await objectKeys()).toEqual([recent]);
    expect(await objectKeys(ATTACHMENT_PREFIX)).toEqual([]);
    expect(await store.db.selectFrom('attachment_chunks').select('seq').execute()).toHaveLength(0);
  });
});
