// Source maps end to end on both databases: an esbuild-minified bundle with
// @sentry/browser, thrown in real Chromium, symbolicated to the original source lines
// (upload before the event, after it, by release and file name, by debug id), the issue
// of a crash sent before its map taking the symbolicated location and the next crash
// (merged when it came first), and the bad inputs of issue 28 refused with a 400 or
// left unsymbolicated.
import { deflateRawSync } from 'node:zlib';
import { zipSync, strToU8 } from 'fflate';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProjectRow } from '../../src/store/schema.js';
import { storeUpload } from '../../src/symbols/upload.js';
import { defaultSymbolKinds } from '../../src/symbols/default-kinds.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { lacks } from '../helpers/tools.js';
import { dsnOf, makeProject } from '../ingest/helpers.js';
import { buildBrowserFixture, launchChromium, runApp, serveApp, type BrowserFixture } from './browser-fixture.js';
import { eventDetail, eventually, issueOf, sendEvent, uploadOk, uploadSymbols } from './helpers.js';
import { SymbolService } from '../../src/symbols/service.js';
import { storedPayloads } from '../../src/editions/node/payloads.js';
import { captureLogger } from '../helpers/log-capture.js';

let fx: BrowserFixture;
let browser: Browser;
const noChromium = lacks('chromium');

beforeAll(async () => {
  fx = buildBrowserFixture();
  if (!noChromium) browser = await launchChromium();
}, 60_000);
afterAll(async () => {
  await browser?.close();
});

/**
 * Runs the app (plain or injected build) in Chromium; the detail of the event it sent
 * (the release's `nth` event, newest first in the list).
 */
async function crashInBrowser(
  t: TestServer,
  project: ProjectRow,
  build: 'plain' | 'injected',
  release: string,
  nth = 1,
): Promise<any> {
  const app = await serveApp(`${fx.dir}/${build}`, dsnOf(t, project), release);
  try {
    await runApp(browser, `${app.url}/`);
    const list = await eventually(async () => {
      const body = (await (
        await t.api(`/api/projects/${project.slug}/events?release=${encodeURIComponent(release)}`)
      ).json()) as any;
      return body.events?.length >= nth ? body.events : null;
    });
    return eventDetail(t, project, list[0].event_id);
  } finally {
    await app.close();
  }
}

/**
 * A zip built by hand from raw deflate streams, as bomb makers do: each entry's local
 * header declares `declared` bytes unpacked (true or not).
 */
function handMadeZip(entries: { name: string; content: Buffer; declared: number }[]): Uint8Array {
  const parts: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const e of entries) {
    const data = deflateRawSync(e.content, { level: 9 });
    const name = Buffer.from(e.name);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(8, 8);
    local.writeUInt32LE(data.length, 18);
    local.writeUInt32LE(e.declared, 22);
    local.writeUInt16LE(name.length, 26);
    const dir = Buffer.alloc(46);
    dir.writeUInt32LE(0x02014b50, 0);
    dir.writeUInt16LE(20, 4);
    dir.writeUInt16LE(20, 6);
    dir.writeUInt16LE(8, 10);
    dir.writeUInt32LE(data.length, 20);
    dir.writeUInt32LE(e.declared, 24);
    dir.writeUInt16LE(name.length, 28);
    dir.writeUInt32LE(offset, 42);
    central.push(dir, name);
    parts.push(local, name, data);
    offset += 30 + name.length + data.length;
  }
  const dirBytes = Buffer.concat(central);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(dirBytes.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...parts, dirBytes, end]);
}

function throwFrame(detail: any): any {
  const frames = detail.exceptions.at(-1).symbolicated_frames as any[];
  return frames?.find((f) => f.filename === 'src/parser.js');
}

describe.each(dialects)('source maps on %s', (dialect) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(dialect);
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  it.skipIf(noChromium)(
    'symbolicates a Chromium crash at ingest to the original line, with context and caller names',
    async () => {
      const project = await makeProject(t);
      const [file] = await uploadOk(t, project, {
        kind: 'sourcemap',
        release: 'web@1',
        files: [{ name: '~/static/app.min.js.map', data: fx.plain.map }],
      });
      expect(file).toMatchObject({
        kind: 'sourcemap',
        release: 'web@1',
        debug_id: '',
        filename: '~/static/app.min.js.map',
      });
      const detail = await crashInBrowser(t, project, 'plain', 'web@1');
      expect(detail.symbolicated).toBe(true);
      const original = detail.exceptions.at(-1).frames ?? detail.exceptions.at(-1).stacktrace.frames;
      expect(
        original
          .filter((f: any) => f.lineno !== undefined)
          .every((f: any) => /\/static\/app\.min\.js$/.test(f.filename)),
      ).toBe(true);
      const frame = throwFrame(detail);
      expect(frame).toMatchObject({ filename: 'src/parser.js', lineno: fx.throwLine });
      expect(frame.context_line).toContain("throw new Error('order is missing fields: '");
      expect(frame.pre_context).toHaveLength(fx.throwLine - 1);
      expect(frame.pre_context[0]).toBe('export function parseOrder(text) {');
      expect(frame.post_context.length).toBeGreaterThan(0);
      expect(frame.post_context.length).toBeLessThanOrEqual(5);
      // The caller's call site names the function (esbuild renamed parseOrder in the bundle).
      expect(frame.function).toBe('parseOrder');
      const frames = detail.exceptions.at(-1).symbolicated_frames as any[];
      expect(frames.some((f) => f.filename === 'src/app.js' && f.function === 'loadOrders')).toBe(true);
      // The issue's location comes from the symbolicated frames.
      expect(detail.error_location).toBe(`parser.js:${fx.throwLine}`);
    },
  );

  it.skipIf(noChromium)(
    're-symbolicates a crash sent before its map was uploaded: its issue takes the symbolicated location and the next crash joins it',
    async () => {
      const project = await makeProject(t);
      const before = await crashInBrowser(t, project, 'plain', 'web@2');
      expect(before.symbolicated).toBe(false);
      expect(before.error_location).toMatch(/^app\.min\.js:/);
      await uploadOk(t, project, {
        kind: 'sourcemap',
        release: 'web@2',
        files: [{ name: 'app.min.js.map', data: fx.plain.map }],
      });
      const after = await eventually(async () => {
        const d = await eventDetail(t, project, before.event_id);
        return d.symbolicated ? d : null;
      });
      expect(throwFrame(after)).toMatchObject({ filename: 'src/parser.js', lineno: fx.throwLine });
      // The event stays in its issue; it and its issue show the symbolicated location.
      expect(after.fingerprint).toBe(before.fingerprint);
      expect(after.error_location).toBe(`parser.js:${fx.throwLine}`);
      const issue = await eventually(async () => {
        const i = await issueOf(t, project, before.fingerprint);
        return i.location === `parser.js:${fx.throwLine}` ? i : null;
      });
      expect(issue.title).toBe(before.title);

      // The next crash, symbolicated at ingest, counts in the same issue.
      const next = await crashInBrowser(t, project, 'plain', 'web@2', 2);
      expect(next.symbolicated).toBe(true);
      const list = (await (await t.api(`/api/projects/${project.slug}/issues`)).json()) as any;
      expect(list.issues.map((i: any) => [i.fingerprint, i.event_count, i.location])).toEqual([
        [before.fingerprint, 2, `parser.js:${fx.throwLine}`],
      ]);
      expect(next.fingerprint).toBe(before.fingerprint);
    },
  );

  it.skipIf(noChromium)(
    'merges the issue the next crash opened before re-symbolication ran into the first one',
    async () => {
      // A server of its own: its re-symbolication loop is stopped, so the run waits for the test.
      const s = await startTestServer(dialect);
      try {
        await s.deps.symbols!.jobs!.stop();
        const project = await makeProject(s);
        const first = await crashInBrowser(s, project, 'plain', 'web@5');
        expect(first.symbolicated).toBe(false);
        await uploadOk(s, project, {
          kind: 'sourcemap',
          release: 'web@5',
          files: [{ name: 'app.min.js.map', data: fx.plain.map }],
        });
        const second = await crashInBrowser(s, project, 'plain', 'web@5', 2);
        expect(second.symbolicated).toBe(true);
        expect(second.fingerprint).not.toBe(first.fingerprint);
        const issues = async () =>
          ((await (await s.api(`/api/projects/${project.slug}/issues`)).json()) as any).issues as any[];
        expect(await issues()).toHaveLength(2);

        // The run the upload recorded, in steps as the serverless edition takes it.
        const service = new SymbolService({
          store: s.deps.store,
          kinds: defaultSymbolKinds(),
          clock: s.clock,
          logger: captureLogger('info').logger,
          md5Hex: s.deps.ingestRuntime.md5Hex,
          readPayloads: storedPayloads,
          steps: { batchEvents: 100, scheduled: () => undefined },
        });
        expect(await service.resymbolicationStep(100)).toMatchObject({ ran: true, pending: false });

        // One issue: the older one, with both events and the symbolicated location.
        const [merged] = await issues();
        expect((await issues()).map((i) => i.fingerprint)).toEqual([first.fingerprint]);
        expect(merged).toMatchObject({ event_count: 2, stored_count: 2, location: `parser.js:${fx.throwLine}` });
        const events = (
          (await (await s.api(`/api/projects/${project.slug}/events?fingerprint=${first.fingerprint}`)).json()) as any
        ).events as any[];
        expect(events.map((e) => e.event_id).sort()).toEqual([first.event_id, second.event_id].sort());
        const gone = (await (await s.api(`/api/projects/${project.slug}/issues/${second.fingerprint}`)).json()) as any;
        expect(gone).toMatchObject({ fingerprint: first.fingerprint, merged_into: first.fingerprint, event_count: 2 });

        // A third crash joins it too.
        await crashInBrowser(s, project, 'plain', 'web@5', 3);
        expect((await issues()).map((i) => [i.fingerprint, i.event_count])).toEqual([[first.fingerprint, 3]]);
      } finally {
        await s.close();
      }
    },
  );

  it.skipIf(noChromium)('matches by debug id (sentry-cli sourcemaps inject) whatever the release', async () => {
    const project = await makeProject(t);
    const [file] = await uploadOk(t, project, {
      kind: 'sourcemap',
      files: [{ name: 'bundle.map', data: fx.injected.map }],
    });
    expect(file.debug_id).toBe(fx.injected.debugId);
    const detail = await crashInBrowser(t, project, 'injected', 'web@9');
    expect(detail.debug_images.some((i: any) => i.type === 'sourcemap' && i.debug_id === fx.injected.debugId)).toBe(
      true,
    );
    expect(throwFrame(detail)).toMatchObject({ filename: 'src/parser.js', lineno: fx.throwLine });
  });

  it('matches by release, dist and file name: ~/path, full URL, basename; not another file or dist', async () => {
    const project = await makeProject(t);
    await uploadOk(t, project, {
      kind: 'sourcemap',
      release: 'web@3',
      dist: 'd1',
      files: [{ name: 'app.min.js.map', data: fx.plain.map }],
    });
    const event = (absPath: string, dist: string) => ({
      platform: 'javascript',
      release: 'web@3',
      dist,
      exception: {
        values: [
          {
            type: 'Error',
            value: 'x',
            stacktrace: { frames: [{ abs_path: absPath, filename: absPath, function: 'a', lineno: 1, colno: 2000 }] },
          },
        ],
      },
    });
    for (const path of ['http://cdn.example.com/static/app.min.js', 'app.min.js', '~/app.min.js']) {
      const d = await eventDetail(t, project, await sendEvent(t, project, event(path, 'd1')));
      expect(d.symbolicated, path).toBe(true);
    }
    for (const [path, dist] of [
      ['http://cdn.example.com/static/other.min.js', 'd1'],
      ['http://cdn.example.com/static/app.min.js', 'd2'],
    ]) {
      const d = await eventDetail(t, project, await sendEvent(t, project, event(path, dist)));
      expect(d.symbolicated, `${path} ${dist}`).toBe(false);
    }
    // A frame past the end of the minified file stays as it is.
    const past = await eventDetail(
      t,
      project,
      await sendEvent(t, project, {
        ...event('app.min.js', 'd1'),
        exception: {
          values: [
            {
              type: 'Error',
              value: 'x',
              stacktrace: { frames: [{ abs_path: 'app.min.js', function: 'a', lineno: 99999, colno: 1 }] },
            },
          ],
        },
      }),
    );
    expect(past.symbolicated).toBe(false);
  });

  it('leaves frames as they are when a stored map cannot be read, and still stores the event', async () => {
    const project = await makeProject(t);
    const [file] = await uploadOk(t, project, {
      kind: 'sourcemap',
      release: 'web@4',
      files: [{ name: 'app.min.js.map', data: fx.plain.map }],
    });
    // The stored bytes damaged behind the server's back (before any event loaded them).
    await t.deps.store.db
      .updateTable('symbol_chunks')
      .set({ data: new TextEncoder().encode('{"version":3,"mappin') })
      .where('file_id', '=', file.id)
      .execute();
    const id = await sendEvent(t, project, {
      platform: 'javascript',
      release: 'web@4',
      exception: {
        values: [
          {
            type: 'Error',
            value: 'x',
            stacktrace: { frames: [{ abs_path: 'https://x/app.min.js', function: 'a', lineno: 15, colno: 31115 }] },
          },
        ],
      },
    });
    const d = await eventDetail(t, project, id);
    expect(d.symbolicated).toBe(false);
    expect(d.title).toBe('Error: x');
  });

  it('refuses bad source maps and bad zips with a 400 and stores nothing', async () => {
    const project = await makeProject(t);
    const map = (extra: object) =>
      JSON.stringify({ version: 3, sources: ['a.js'], names: [], mappings: 'AAAA', ...extra });
    const cases: [string, Uint8Array | string][] = [
      ['not-json.map', 'this is { not json'],
      ['v2.map', map({ version: 2 })],
      ['no-mappings.map', JSON.stringify({ version: 3, sources: [] })],
      ['out-of-range.map', map({ mappings: 'AKAA' })],
      ['bad-name.map', map({ mappings: 'AAAAK' })],
      ['slip.zip', zipSync({ '../../etc/evil.map': strToU8(map({})) })],
      ['truncated.zip', zipSync({ 'a.map': strToU8(map({})), 'b.map': strToU8(map({})) }).subarray(0, 120)],
      ['nothing.zip', zipSync({ 'readme.txt': strToU8('hello') })],
      [
        'bomb-entries.zip',
        zipSync(Object.fromEntries(Array.from({ length: 1001 }, (_, i) => [`m${i}.txt`, strToU8('x')]))),
      ],
    ];
    for (const [name, data] of cases) {
      const res = await uploadSymbols(t, project, { kind: 'sourcemap', release: 'bad', files: [{ name, data }] });
      expect(res.status, name).toBe(400);
      expect(((await res.json()) as any).error, name).toEqual(expect.any(String));
    }
    const bombs: [string, Uint8Array, string][] = [
      // Declares 300 MB of zeros in one entry: refused by its header.
      [
        'one-big.zip',
        handMadeZip([{ name: 'z.bin', content: Buffer.alloc(1024), declared: 300 * 1024 * 1024 }]),
        'is larger than 268435456 bytes (256 MB per file)',
      ],
      // Five entries declaring 250 MB each: over 1 GB by the fifth header.
      [
        'many.zip',
        handMadeZip(
          Array.from({ length: 5 }, (_, i) => ({
            name: `z${i}.bin`,
            content: Buffer.alloc(1024),
            declared: 250 * 1024 * 1024,
          })),
        ),
        'the zip unpacks to more than 1073741824 bytes (1 GB)',
      ],
    ];
    for (const [name, data, message] of bombs) {
      const res = await uploadSymbols(t, project, { kind: 'sourcemap', release: 'bad', files: [{ name, data }] });
      expect(res.status, name).toBe(400);
      expect(((await res.json()) as any).error, name).toContain(message);
    }
    const rows = await t.deps.store.db
      .selectFrom('symbol_files')
      .select('id')
      .where('project_id', '=', project.id)
      .execute();
    expect(rows).toEqual([]);
  });

  it('counts the bytes really inflated, whatever the headers declare (limits lowered to keep it fast)', async () => {
    const project = await makeProject(t);
    const limits = { maxFileBytes: 1024 * 1024, maxZipEntries: 1000, maxZipUnpackedBytes: 4 * 1024 * 1024 };
    const target = { projectId: project.id, kind: 'sourcemap' as const, release: 'bad', filename: 'x.zip' };
    const store = (zip: Uint8Array) =>
      storeUpload(t.deps.store.db, defaultSymbolKinds(), target, [zip], t.clock.now(), limits);
    // One entry declaring 1 KB that inflates to 2 MB.
    await expect(
      store(handMadeZip([{ name: 'z.bin', content: Buffer.alloc(2 * 1024 * 1024), declared: 1024 }])),
    ).rejects.toThrow('the zip entry "z.bin" is larger than 1048576 bytes (1 MB per file)');
    // Five entries of 900 KB declaring 1 KB each: 4.5 MB inflated in all.
    const many = handMadeZip(
      Array.from({ length: 5 }, (_, i) => ({ name: `z${i}.bin`, content: Buffer.alloc(900 * 1024), declared: 1024 })),
    );
    await expect(store(many)).rejects.toThrow('the zip unpacks to more than 4194304 bytes (4 MB)');
    // Recognised maps stored before the limit was passed are removed again.
    const map = strToU8(JSON.stringify({ version: 3, sources: ['a.js'], names: [], mappings: 'AAAA' }));
    const mixed = handMadeZip([
      { name: 'a.map', content: Buffer.from(map), declared: map.length },
      { name: 'z.bin', content: Buffer.alloc(5 * 1024 * 1024), declared: 10 },
    ]);
    await expect(store(mixed)).rejects.toThrow(/larger than/);
    expect(
      await t.deps.store.db.selectFrom('symbol_files').select('id').where('project_id', '=', project.id).execute(),
    ).toEqual([]);
  });
});
