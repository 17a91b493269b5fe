// Privacy on the Worker (workerd, D1): events are scrubbed before they are stored,
// `DELETE /api/projects/{slug}/users/{user}/events` erases one end user's events, tags
// and payload bytes in D1 atomic batches, more than one slice of them, leaving the other
// user's payloads readable from the rewritten chunks: in D1, and with the chunks in the R2
// bucket (rewritten as new objects, the old ones deleted); and the usage routes answer from
// the aggregates D1's triggers keep.
import { env } from 'cloudflare:workers';
import type { Hono } from 'hono';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildWorkerDeps, type WorkerEnv } from '../../../../src/editions/workers/deps.js';
import { decompressBlob } from '../../../../src/editions/workers/runtime.js';
import { createApp } from '../../../../src/editions/app.js';
import { PAYLOAD_PREFIX, readPayloadChunks, type BlobBucket } from '../../../../src/store/blobs.js';
import { ERASE_SLICE } from '../../../../src/privacy/erase.js';
import type { Store } from '../../../../src/store/database.js';
import { migrate } from '../../../../src/store/migrate.js';
import { createProject, PROJECT_DEFAULTS } from '../../../../src/store/projects.js';
import { readStoredPayload } from '../../../../src/store/stored-payload.js';
import { withBlobs, withoutQueue } from './direct-path.js';

const KEY = 'workers-privacy-test-key';
const bucket = withBlobs(env as unknown as WorkerEnv).BLOBS as BlobBucket;
const editions = { d1: withoutQueue(env as unknown as WorkerEnv), r2: withBlobs(env as unknown as WorkerEnv) };
const apps = {} as Record<keyof typeof editions, { app: Hono; store: Store; blobs?: BlobBucket }>;

beforeAll(async () => {
  for (const [name, e] of Object.entries(editions)) {
    const deps = buildWorkerDeps({ ...e, RATE_LIMIT: '0', LOG_LEVEL: 'silent', API_KEYS: KEY });
    apps[name as keyof typeof editions] = { app: createApp(deps), store: deps.store, blobs: deps.blobs };
  }
  await migrate(apps.d1.store);
});

const hex = (n: number, prefix: string) => (prefix + n.toString(16)).padStart(32, '0');

function event(id: string, user: string) {
  return {
    event_id: id,
    timestamp: Date.now() / 1000,
    platform: 'node',
    user: { id: user },
    extra: { password: `pw-of-${user}`, note: `note-of-${user}` },
    exception: {
      values: [
        { type: 'Error', value: 'boom', stacktrace: { frames: [{ filename: 'a.js', function: 'f', lineno: 1 }] } },
      ],
    },
  };
}

async function send(app: Hono, p: { id: number; dsn_key: string }, events: object[]): Promise<Response> {
  const body = [
    JSON.stringify({}),
    ...events.flatMap((e) => [JSON.stringify({ type: 'event' }), JSON.stringify(e)]),
  ].join('\n');
  return app.fetch(
    new Request(`http://worker/api/${p.id}/envelope/?sentry_key=${p.dsn_key}`, { method: 'POST', body }),
  );
}

describe.each(['d1', 'r2'] as const)('privacy on the Worker (bytes in %s)', (edition) => {
  it('scrubs before storing and erases one end user', async () => {
    const { app, store, blobs } = apps[edition];
    expect(blobs !== undefined).toBe(edition === 'r2');
    const p = await createProject(
      store.db,
      { ...PROJECT_DEFAULTS, slug: `erase-${edition}-${Date.now()}`, name: 'erase' },
      Date.now(),
    );
    let n = 0;
    for (let round = 0; round < 3; round++) {
      const batch = [];
      for (let i = 0; i < 25; i++) batch.push(event(hex(++n, 'a'), 'alice'));
      for (let i = 0; i < 3; i++) batch.push(event(hex(++n, 'b'), 'bob'));
      expect((await send(app, p, batch)).status).toBe(200);
    }
    const rows = () => store.db.selectFrom('events').selectAll().where('project_id', '=', p.id).execute();
    expect(await rows()).toHaveLength(84);
    const first = (await rows())[0];
    const raw = new TextDecoder().decode(await readStoredPayload(store.db, first, decompressBlob, blobs));
    expect(raw).not.toContain('pw-of-');
    expect(JSON.parse(raw).extra.password).toBe('[Filtered]');

    const res = await app.fetch(
      new Request(`http://worker/api/projects/${p.slug}/users/alice/events`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${KEY}` },
      }),
    );
    expect(res.status).toBe(204);
    expect(75).toBeGreaterThan(ERASE_SLICE);
    const left = await rows();
    expect(left).toHaveLength(9);
    for (const e of left) {
      expect(e.user_id).toBe('bob');
      const text = new TextDecoder().decode(await readStoredPayload(store.db, e, decompressBlob, blobs));
      expect(JSON.parse(text).extra.note).toBe('note-of-bob');
    }
    const chunks = await store.db
      .selectFrom('payload_chunks')
      .select(['id', 'r2_key'])
      .where('project_id', '=', p.id)
      .execute();
    expect(chunks.length).toBeGreaterThan(0);
    const bytes = await readPayloadChunks(
      store.db,
      chunks.map((c) => Number(c.id)),
      decompressBlob,
      blobs,
    );
    expect(bytes.size).toBe(chunks.length);
    for (const c of bytes.values()) expect(new TextDecoder().decode(c)).not.toContain('note-of-alice');
    if (edition === 'r2') {
      // The objects left are the ones the rows name: the rewritten chunks' old objects are gone.
      const named = new Set(chunks.map((c) => c.r2_key));
      const listed = (await bucket.list({ prefix: PAYLOAD_PREFIX })).objects.map((o) => o.key);
      for (const key of named) expect(listed).toContain(key);
      for (const key of listed) expect(named.has(key)).toBe(true);
    }
    const issue = await store.db
      .selectFrom('issues')
      .selectAll()
      .where('project_id', '=', p.id)
      .executeTakeFirstOrThrow();
    expect(Number(issue.event_count)).toBe(84);
    expect(Number(issue.stored_count)).toBe(9);

    // Usage on D1 from the trigger-kept aggregates: the rewritten chunks' bytes, the stored
    // events. (Chunks in the bucket count for nothing there yet: docs/architecture.md.)
    if (edition === 'd1') {
      const usage = await (
        await app.fetch(
          new Request(`http://worker/api/projects/${p.slug}/usage`, { headers: { authorization: `Bearer ${KEY}` } }),
        )
      ).json();
      const data = await store.db.selectFrom('payload_chunks').select('data').where('project_id', '=', p.id).execute();
      const real = data.reduce((n, c) => n + c.data.byteLength, 0);
      expect(usage.kinds.events).toEqual({ count: 9, bytes: real });
    }
    const all = await (
      await app.fetch(new Request('http://worker/api/usage', { headers: { authorization: `Bearer ${KEY}` } }))
    ).json();
    expect(all.database_bytes).toBeNull();

    const unknown = await app.fetch(
      new Request(`http://worker/api/projects/${p.slug}/users/nobody/events`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${KEY}` },
      }),
    );
    expect(unknown.status).toBe(204);
  });
});
