// Payload chunks: how packPayloads cuts a batch's payloads into chunks, and what the
// writer stores on both databases (chunks per project, byte ranges that give back
// each payload exactly, nothing stored for events sampling dropped).
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decompress } from '../../../src/editions/node/codec.js';
import { packPayloads, storedPayload } from '../../../src/editions/node/payloads.js';
import { PAYLOAD_CHUNK_MAX_BYTES } from '../../../src/store/payloads.js';
import { dialects } from '../../helpers/server.js';
import {
  createProject,
  makeEvent,
  makeWork,
  newWriter,
  openTestStore,
  sequence,
  type TestStore,
} from '../../helpers/factory.js';

const T = Date.UTC(2026, 0, 10, 12, 0, 0);

function bytes(n: number, fill: string): Uint8Array {
  return new Uint8Array(Buffer.from(fill.repeat(Math.ceil(n / fill.length)).slice(0, n)));
}

describe('packPayloads', () => {
  it('keeps each project apart, in order, and every payload at its own range', () => {
    const items = [
      { projectId: 1, receivedAt: T + 3, payload: bytes(10, 'a') },
      { projectId: 2, receivedAt: T + 1, payload: bytes(20, 'b') },
      { projectId: 1, receivedAt: T + 2, payload: bytes(30, 'c') },
      { projectId: 1, receivedAt: T + 1, payload: new Uint8Array(0) },
    ];
    const { chunks, slots } = packPayloads(items);
    expect(chunks.map((c) => [c.projectId, c.receivedAt, c.members])).toEqual([
      [1, T + 3, [0, 2, 3]],
      [2, T + 1, [1]],
    ]);
    expect(slots).toEqual([
      { chunk: 0, start: 0, length: 10 },
      { chunk: 1, start: 0, length: 20 },
      { chunk: 0, start: 10, length: 30 },
      { chunk: 0, start: 40, length: 0 },
    ]);
    items.forEach((item, i) => {
      const data = decompress(chunks[slots[i].chunk].data);
      expect(
        Buffer.from(data.subarray(slots[i].start, slots[i].start + slots[i].length)).equals(Buffer.from(item.payload)),
      ).toBe(true);
    });
  });

  it(`starts a new chunk before ${PAYLOAD_CHUNK_MAX_BYTES} bytes, and gives a larger payload a chunk of its own`, () => {
    const third = Math.floor(PAYLOAD_CHUNK_MAX_BYTES / 3);
    const sizes = [third, third, third, third, PAYLOAD_CHUNK_MAX_BYTES + 1, 5];
    const items = sizes.map((n, i) => ({ projectId: 7, receivedAt: T + i, payload: bytes(n, String(i)) }));
    const { chunks, slots } = packPayloads(items);
    expect(chunks.map((c) => c.members)).toEqual([[0, 1, 2], [3], [4], [5]]);
    expect(chunks.map((c) => decompress(c.data).length)).toEqual([3 * third, third, PAYLOAD_CHUNK_MAX_BYTES + 1, 5]);
    expect(slots.map((s) => s.start)).toEqual([0, third, 2 * third, 0, 0, 0]);
    expect(packPayloads([])).toEqual({ chunks: [], slots: [] });
  });
});

describe.each(dialects)('payload chunks through the writer (%s)', (dialect) => {
  let t: TestStore;
  beforeAll(async () => {
    t = await openTestStore(dialect);
  });
  afterAll(async () => {
    await t?.close();
  });

  async function payloadsOf(projectId: number) {
    const rows = await t.store.db
      .selectFrom('events')
      .selectAll()
      .where('project_id', '=', projectId)
      .orderBy('id')
      .execute();
    return Promise.all(
      rows.map(async (r) => ({ row: r, payload: (await storedPayload(t.store.db, r)).toString('utf8') })),
    );
  }

  it('stores a batch of two projects in chunks of each, large batches in several, every payload exact', async () => {
    const a = await createProject(t.store);
    const b = await createProject(t.store);
    const writer = newWriter(t.store);
    // 40 random payloads of 20 KB: 800 KB for a, over three chunks' worth; 3 small ones for b.
    const big = Array.from({ length: 40 }, (_, i) =>
      makeEvent({ raw: Buffer.from(JSON.stringify({ i, noise: crypto.randomBytes(15_000).toString('base64') })) }),
    );
    const small = Array.from({ length: 3 }, (_, i) =>
      makeEvent({ raw: Buffer.from(JSON.stringify({ i, note: 'small' })) }),
    );
    const works = [
      ...big.map((e, i) => makeWork(a, { events: [e], receivedAt: T + i })),
      ...small.map((e) => makeWork(b, { events: [e], receivedAt: T })),
    ];
    await Promise.all(works.map((w) => writer.submit(w)));
    await writer.close();

    const stored = await payloadsOf(a.id);
    expect(new Map(stored.map((s) => [s.row.event_id, s.payload]))).toEqual(
      new Map(big.map((e) => [e.eventId, Buffer.from(e.raw!).toString('utf8')])),
    );
    const chunksA = await t.store.db.selectFrom('payload_chunks').selectAll().where('project_id', '=', a.id).execute();
    expect(chunksA.length).toBeGreaterThanOrEqual(Math.ceil((40 * 20_000) / PAYLOAD_CHUNK_MAX_BYTES));
    // Each chunk's received_at is the newest of its events'.
    for (const c of chunksA) {
      const members = stored.filter((s) => Number(s.row.payload_chunk) === Number(c.id));
      expect(members.length).toBeGreaterThan(0);
      expect(Number(c.received_at)).toBe(Math.max(...members.map((m) => Number(m.row.received_at))));
      expect(decompress(c.data).length).toBeLessThanOrEqual(
        Math.max(PAYLOAD_CHUNK_MAX_BYTES, ...members.map((m) => Number(m.row.payload_length))),
      );
    }
    const storedB = await payloadsOf(b.id);
    expect(storedB.map((s) => s.payload).sort()).toEqual(small.map((e) => Buffer.from(e.raw!).toString('utf8')).sort());
    expect(new Set(storedB.map((s) => Number(s.row.payload_chunk))).size).toBe(1);
    expect(chunksA.map((c) => Number(c.id))).not.toContain(Number(storedB[0].row.payload_chunk));
  });

  it('puts no payload of an event sampling dropped into a chunk', async () => {
    const project = await createProject(t.store, { sample_rate: 0.5, sample_keep_first: 0 });
    // Draws: keep, drop, keep.
    const writer = newWriter(t.store, { random: sequence([0.1, 0.9, 0.2]), batchThread: false });
    const events = [0, 1, 2].map((i) =>
      makeEvent({ fingerprint: 'f'.repeat(32), raw: Buffer.from(JSON.stringify({ i, pad: 'p'.repeat(1000) })) }),
    );
    await writer.submit(makeWork(project, { events }));
    await writer.close();
    const stored = await payloadsOf(project.id);
    expect(stored.map((s) => s.row.event_id)).toEqual([events[0].eventId, events[2].eventId]);
    const [chunk] = await t.store.db
      .selectFrom('payload_chunks')
      .selectAll()
      .where('project_id', '=', project.id)
      .execute();
    expect(decompress(chunk.data).toString('utf8')).toBe(stored.map((s) => s.payload).join(''));
  });
});
