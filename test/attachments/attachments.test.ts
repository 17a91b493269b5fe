// Attachments through the real server on each database: mobile SDK envelopes with a
// screenshot and a view hierarchy, listing and safe downloads, resends, limits,
// attachments for events stored earlier or never, retention, project deletion and
// export → import.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { runRetention } from '../../src/store/retention.js';
import { attachmentUsage } from '../../src/attachments/storage.js';
import { MAX_ATTACHMENT_BYTES, MAX_ATTACHMENTS_BYTES } from '../../src/limits.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { dsnOf, makeProject, post } from '../ingest/helpers.js';
import { emptyStore, exportText, importText } from '../transfer/support.js';
import {
  androidCrashEnvelope,
  androidEvent,
  buildEnvelope,
  mobileFixture,
  newEventId,
  screenshotItem,
} from './mobile-envelopes.js';

const NOW = Date.UTC(2026, 10, 20, 12, 0, 0);
const DAY = 86_400_000;

type AttachmentJson = { id: string; name: string; content_type: string; size: number; attachment_type: string };

describe.each(dialects)('attachments on %s', (dialect) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(dialect, { clock: new ManualClock(NOW) });
  });
  afterAll(async () => {
    await t?.close();
  });

  async function list(slug: string, id: string): Promise<AttachmentJson[]> {
    const res = await t.api(`/api/projects/${slug}/events/${id}/attachments`);
    expect(res.status).toBe(200);
    return ((await res.json()) as { attachments: AttachmentJson[] }).attachments;
  }

  it('keeps a screenshot and a view hierarchy with their event and serves them as safe downloads', async () => {
    const p = await makeProject(t);
    const id = newEventId();
    const body = androidCrashEnvelope(id, NOW - 60_000, dsnOf(t, p));
    const res = await post(t, p, body, { auth: 'header' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ id });

    const files = await list(p.slug, id);
    expect(files.map((f) => [f.name, f.content_type, f.attachment_type, f.size])).toEqual([
      ['screenshot.png', 'image/png', 'event.attachment', mobileFixture('screenshot.png').length],
      [
        'view-hierarchy.json',
        'application/json',
        'event.view_hierarchy',
        mobileFixture('android-view-hierarchy.json').length,
      ],
    ]);

    const png = await t.api(`/api/projects/${p.slug}/attachments/${files[0].id}`);
    expect(png.status).toBe(200);
    expect(png.headers.get('content-type')).toBe('application/octet-stream');
    expect(png.headers.get('content-disposition')).toMatch(/^attachment; filename="screenshot.png"/);
    expect(png.headers.get('x-content-type-options')).toBe('nosniff');
    expect(png.headers.get('content-security-policy')).toBe("sandbox; default-src 'none'");
    expect(Buffer.from(await png.arrayBuffer()).equals(mobileFixture('screenshot.png'))).toBe(true);

    // The resend of a timed-out request stores nothing twice.
    expect((await post(t, p, body, { auth: 'header' })).status).toBe(200);
    expect(await list(p.slug, id)).toHaveLength(2);
    expect(await attachmentUsage(t.deps.store.db, p.id)).toEqual({
      count: 2,
      bytes: mobileFixture('screenshot.png').length + mobileFixture('android-view-hierarchy.json').length,
    });
  });

  it('streams a file larger than one chunk back byte for byte', async () => {
    const p = await makeProject(t);
    const id = newEventId();
    const big = new Uint8Array(1_300_000).map((_, i) => (i * 31) % 251);
    const res = await post(
      t,
      p,
      androidCrashEnvelope(id, NOW, dsnOf(t, p), [
        { headers: { type: 'attachment', filename: 'log.bin' }, payload: big },
      ]),
    );
    expect(res.status).toBe(200);
    const file = (await list(p.slug, id)).find((f) => f.name === 'log.bin')!;
    expect(file.size).toBe(big.length);
    const download = await t.api(`/api/projects/${p.slug}/attachments/${file.id}`);
    expect(Buffer.from(await download.arrayBuffer()).equals(Buffer.from(big))).toBe(true);
  });

  it('never serves a file as the HTML or SVG its content type claims', async () => {
    const p = await makeProject(t);
    const id = newEventId();
    const hostile = [
      {
        headers: { type: 'attachment', filename: 'x.html', content_type: 'text/html' },
        payload: '<script>parent.pwned=1</script>',
      },
      {
        headers: { type: 'attachment', filename: 'x.svg', content_type: 'image/svg+xml' },
        payload: '<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>',
      },
    ];
    expect((await post(t, p, androidCrashEnvelope(id, NOW, dsnOf(t, p), hostile))).status).toBe(200);
    for (const f of (await list(p.slug, id)).filter((x) => x.name.startsWith('x.'))) {
      const res = await t.api(`/api/projects/${p.slug}/attachments/${f.id}`);
      expect(res.headers.get('content-type')).toBe('application/octet-stream');
      expect(res.headers.get('content-disposition')).toMatch(/^attachment;/);
      expect(res.headers.get('content-security-policy')).toContain('sandbox');
    }
  });

  it('refuses an envelope whose attachment is over the limit (413) and stores none of it', async () => {
    const p = await makeProject(t);
    const id = newEventId();
    const tooBig = new Uint8Array(MAX_ATTACHMENT_BYTES + 1);
    const res = await post(
      t,
      p,
      androidCrashEnvelope(id, NOW, dsnOf(t, p), [
        { headers: { type: 'attachment', filename: 'big.bin' }, payload: tooBig },
      ]),
    );
    expect(res.status).toBe(413);
    expect(((await res.json()) as { error: string }).error).toMatch(/attachment/);
    expect((await t.api(`/api/projects/${p.slug}/events/${id}/attachments`)).status).toBe(404);
    // Attachments adding up to more than the envelope's limit.
    const half = new Uint8Array(MAX_ATTACHMENTS_BYTES / 2 - 100);
    const many = [1, 2, 3].map((n) => ({ headers: { type: 'attachment', filename: `part${n}.bin` }, payload: half }));
    expect((await post(t, p, androidCrashEnvelope(newEventId(), NOW, dsnOf(t, p), many))).status).toBe(413);
  });

  it('attaches a file sent after its event, and drops one whose event was never stored', async () => {
    const p = await makeProject(t);
    const id = newEventId();
    expect(
      (
        await post(
          t,
          p,
          buildEnvelope({ event_id: id }, [{ headers: { type: 'event' }, payload: androidEvent(id, NOW) }]),
        )
      ).status,
    ).toBe(200);
    expect(await list(p.slug, id)).toEqual([]);
    const later = await post(t, p, buildEnvelope({ event_id: id }, [screenshotItem()]));
    expect(later.status).toBe(200);
    expect(await list(p.slug, id)).toHaveLength(1);

    const unknown = newEventId();
    expect((await post(t, p, buildEnvelope({ event_id: unknown }, [screenshotItem()]))).status).toBe(200);
    expect(await attachmentUsage(t.deps.store.db, p.id)).toEqual({
      count: 1,
      bytes: mobileFixture('screenshot.png').length,
    });
    // Unknown ids are a 404, not an error.
    expect((await t.api(`/api/projects/${p.slug}/attachments/999999999`)).status).toBe(404);
    expect((await t.api(`/api/projects/${p.slug}/attachments/abc`)).status).toBe(404);
  });

  it('goes with its event (retention) and with its project', async () => {
    const p = await makeProject(t);
    const old = newEventId();
    (t.clock as ManualClock).set(NOW - 40 * DAY);
    expect((await post(t, p, androidCrashEnvelope(old, NOW - 40 * DAY, dsnOf(t, p)))).status).toBe(200);
    (t.clock as ManualClock).set(NOW);
    const kept = newEventId();
    expect((await post(t, p, androidCrashEnvelope(kept, NOW, dsnOf(t, p)))).status).toBe(200);
    expect((await attachmentUsage(t.deps.store.db, p.id)).count).toBe(4);

    const summary = await runRetention(t.deps.store, { now: NOW, retentionDays: 30 });
    expect(summary.deleted.attachments).toBeGreaterThanOrEqual(2);
    expect((await attachmentUsage(t.deps.store.db, p.id)).count).toBe(2);
    expect(await list(p.slug, kept)).toHaveLength(2);
    const chunks = async () =>
      Number(
        (
          await t.deps.store.db
            .selectFrom('attachment_chunks')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .where(
              'attachment_id',
              'in',
              t.deps.store.db.selectFrom('attachments').select('id').where('project_id', '=', p.id),
            )
            .executeTakeFirstOrThrow()
        ).n,
      );
    expect(await chunks()).toBe(2);
    const orphans = await t.deps.store.db
      .selectFrom('attachment_chunks')
      .select('attachment_id')
      .where((eb) =>
        eb.not(
          eb.exists(
            eb
              .selectFrom('attachments')
              .select('id')
              .whereRef('attachments.id', '=', 'attachment_chunks.attachment_id'),
          ),
        ),
      )
      .execute();
    expect(orphans).toEqual([]);

    expect((await t.api(`/api/projects/${p.slug}`, { method: 'DELETE' })).status).toBeLessThan(300);
    expect(
      (await t.deps.store.db.selectFrom('attachments').select('id').where('project_id', '=', p.id).execute()).length,
    ).toBe(0);
    const left = await t.deps.store.db.selectFrom('attachment_chunks').select('attachment_id').execute();
    const ids = new Set(
      (await t.deps.store.db.selectFrom('attachments').select('id').execute()).map((r) => Number(r.id)),
    );
    expect(left.every((c) => ids.has(Number(c.attachment_id)))).toBe(true);
  });

  it('exports and imports attachments with their bytes, and a second import adds nothing', async () => {
    const p = await makeProject(t);
    const id = newEventId();
    const big = new Uint8Array(700_000).map((_, i) => i % 253);
    expect(
      (
        await post(
          t,
          p,
          androidCrashEnvelope(id, NOW, dsnOf(t, p), [
            { headers: { type: 'attachment', filename: 'trace.bin' }, payload: big },
          ]),
        )
      ).status,
    ).toBe(200);
    const file = await exportText(t.deps.store, { project: p.slug });
    const lines = file
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { type: string });
    expect(lines.filter((l) => l.type === 'attachment')).toHaveLength(3);
    expect(lines.filter((l) => l.type === 'attachment_chunk')).toHaveLength(4);
    expect(lines.findIndex((l) => l.type === 'attachment')).toBeGreaterThan(lines.findIndex((l) => l.type === 'event'));

    const target = await emptyStore(dialect);
    try {
      const first = await importText(target.store, file);
      expect(first.types.attachment.added).toBe(3);
      expect(first.types.attachment_chunk.added).toBe(4);
      const second = await importText(target.store, file);
      expect(second.types.attachment.added).toBe(0);
      expect(second.types.attachment_chunk.added).toBe(0);
      const again = await exportText(target.store, { project: p.slug });
      const body = (text: string) => text.split('\n').filter((l) => l && JSON.parse(l).type !== 'meta');
      expect(body(again)).toEqual(body(file));
    } finally {
      await target.close();
    }
  });
});
