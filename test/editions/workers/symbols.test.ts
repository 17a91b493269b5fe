// The Symbols routes on the serverless edition (the Worker as deployed, on a local D1):
// upload, list and delete answer as on the server edition; a source map larger than the
// edition parses within an isolate's memory is refused with 400 and nothing stored; an
// upload's files become ready together on D1 too (no interactive transactions there); an
// upload re-symbolicates the release's stored events in bounded steps, the first after
// the upload's answer, the rest by the every-minute cron.
import { transformSync } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RESYMBOLICATE_CRON } from '../../../src/editions/workers/crons.js';
import { WORKER_RESYMBOLICATE_STEP_EVENTS } from '../../../src/limits.js';
import { openD1Store, type D1Binding } from '../../../src/store/d1.js';
import { commitSymbolFiles, listSymbolFiles, saveSymbolFile, writePendingFile } from '../../../src/symbols/storage.js';
import { envelope, errorEvent, eventId } from '../../ingest/helpers.js';
import { startTestWorker, type TestWorker } from './harness.js';

const KEY = 'worker-symbols-key';

function form(kind: string, release: string, name: string, content: string | Uint8Array): FormData {
  const body = new FormData();
  body.set('kind', kind);
  body.set('release', release);
  body.set('file', new Blob([content as BlobPart]), name);
  return body;
}

describe('symbol routes on the Worker', () => {
  let w: TestWorker;
  beforeAll(async () => {
    w = await startTestWorker({ API_KEYS: KEY });
    expect((await w.api('/api/projects', { method: 'POST', json: { slug: 'web' } })).status).toBe(201);
  }, 120_000);
  afterAll(async () => {
    await w?.close();
  });

  it('uploads a source map and a ProGuard mapping, lists them, and deletes one', async () => {
    const map = {
      version: 3,
      file: 'app.min.js',
      sources: ['src/app.ts'],
      names: ['main'],
      mappings: 'AAAAA,SAASA',
      sourcesContent: ['export function main() {}\n'],
    };
    const uploaded = await w.api('/api/projects/web/symbols', {
      method: 'POST',
      body: form('sourcemap', 'web@1.0', 'app.min.js.map', JSON.stringify(map)),
    });
    expect(uploaded.status, await uploaded.clone().text()).toBe(201);
    const [sourcemap] = (
      (await uploaded.json()) as {
        symbols: { id: number; kind: string; release: string; filename: string; size: number }[];
      }
    ).symbols;
    expect(sourcemap).toMatchObject({
      kind: 'sourcemap',
      release: 'web@1.0',
      filename: 'app.min.js.map',
      size: JSON.stringify(map).length,
    });

    const mapping = 'com.example.Checkout -> a.b:\n    void pay(int) -> c\n';
    const proguard = await w.api('/api/projects/web/symbols', {
      method: 'POST',
      body: form('proguard', 'android@2.0', 'mapping.txt', mapping),
    });
    expect(proguard.status, await proguard.clone().text()).toBe(201);

    const list = (await (await w.api('/api/projects/web/symbols')).json()) as {
      symbols: { id: number; kind: string }[];
    };
    expect(list.symbols.map((s) => s.kind)).toEqual(['proguard', 'sourcemap']); // newest first

    expect((await w.api(`/api/projects/web/symbols/${sourcemap.id}`, { method: 'DELETE' })).status).toBe(204);
    expect((await w.api(`/api/projects/web/symbols/${sourcemap.id}`, { method: 'DELETE' })).status).toBe(404);
    const after = (await (await w.api('/api/projects/web/symbols')).json()) as { symbols: { kind: string }[] };
    expect(after.symbols.map((s) => s.kind)).toEqual(['proguard']);
    expect((await fetch(`${w.url}/api/projects/web/symbols`)).status).toBe(401);
  });

  it('refuses a source map over 8 MB with 400 and stores nothing of it', async () => {
    const big = JSON.stringify({
      version: 3,
      file: 'big.min.js',
      sources: ['a.ts'],
      names: [],
      mappings: 'AAAA',
      sourcesContent: ['x'.repeat(8 * 1024 * 1024 + 10)],
    });
    const res = await w.api('/api/projects/web/symbols', {
      method: 'POST',
      body: form('sourcemap', 'web@2.0', 'big.min.js.map', big),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toMatch(/larger than 8388608 bytes \(8 MB per file\)/);
    const list = (await (await w.api('/api/projects/web/symbols')).json()) as { symbols: { filename: string }[] };
    expect(list.symbols.map((s) => s.filename)).not.toContain('big.min.js.map');
    const d1 = await w.d1();
    expect(
      (
        await d1
          .prepare("select count(*) as n from symbol_files where filename = 'big.min.js.map'")
          .first<{ n: number }>()
      )?.n,
    ).toBe(0);
  });

  it('removes uploads left half-written (older than an hour) in the daily cron', async () => {
    const d1 = await w.d1();
    const insert = `insert into symbol_files (project_id, kind, release, dist, debug_id, filename, serves, serves_basename, meta, uploaded_at, state, size, index_size)
      values (1, 'sourcemap', 'web@3.0', '', '', ?, '', '', '{}', ?, 'writing', 0, 0)`;
    await d1
      .prepare(insert)
      .bind('abandoned.js.map', Date.now() - 2 * 3_600_000)
      .run();
    await d1.prepare(insert).bind('in-progress.js.map', Date.now()).run();
    await w.runCron('17 3 * * *');
    const { results } = await d1
      .prepare("select filename from symbol_files where state = 'writing'")
      .all<{ filename: string }>();
    expect(results.map((r) => r.filename)).toEqual(['in-progress.js.map']);
  });

  it('commits the files of one upload together on D1: when one cannot be committed, none is and nothing is replaced', async () => {
    // The store the Worker builds, on the same D1 (its statements run in workerd).
    const store = openD1Store((await w.d1()) as unknown as D1Binding);
    const meta = {
      projectId: 1,
      kind: 'proguard' as const,
      release: 'android@9',
      filename: 'mapping.txt',
      debugId: 'abcdef00-0000-0000-0000-000000000001',
    };
    const mapping = new TextEncoder().encode('com.example.A -> a:\n');
    const old = await saveSymbolFile(store.db, meta, [mapping], 1);
    const pending = await writePendingFile(store.db, meta, [mapping], 2);
    // A second file of the upload that is gone by the commit (a sweep, a delete).
    await expect(commitSymbolFiles(store, [{ id: pending.id }, { id: pending.id + 1000 }])).rejects.toThrow();
    const ready = await listSymbolFiles(store.db, 1);
    expect(ready.filter((r) => r.release === 'android@9').map((r) => Number(r.id))).toEqual([Number(old.id)]);
    const d1 = await w.d1();
    expect(await d1.prepare('select state from symbol_files where id = ?').bind(pending.id).first()).toEqual({
      state: 'writing',
    });

    // Committed alone, it replaces the old file in the same batch.
    const replaced: number[] = [];
    const [row] = await commitSymbolFiles(store, [{ id: pending.id }], (ids) => replaced.push(...ids));
    expect(row).toMatchObject({ id: pending.id, state: 'ready', debug_id: meta.debugId });
    expect(replaced).toEqual([Number(old.id)]);
    expect(
      (await listSymbolFiles(store.db, 1)).filter((r) => r.release === 'android@9').map((r) => Number(r.id)),
    ).toEqual([pending.id]);
  });

  it('symbolicates an obfuscated exception type at ingest: the event detail reads the original type and module', async () => {
    const { dsn, id: projectId } = (await (await w.api('/api/projects/web')).json()) as { dsn: string; id: number };
    const key = new URL(dsn).username;
    const mapping = 'com.example.DeclinedException -> a.d:\ncom.example.Checkout -> a.b:\n    void pay(int) -> c\n';
    const uploaded = await w.api('/api/projects/web/symbols', {
      method: 'POST',
      body: form('proguard', 'android@6.0', 'mapping.txt', mapping),
    });
    expect(uploaded.status, await uploaded.clone().text()).toBe(201);
    const id = eventId();
    const event = {
      ...errorEvent({ id, timestamp: Date.now(), type: 'd', value: 'declined', release: 'android@6.0' }),
      platform: 'java',
      exception: {
        values: [
          {
            type: 'd',
            value: 'declined',
            module: 'a',
            stacktrace: { frames: [{ module: 'a.b', function: 'c', filename: 'SourceFile', in_app: true }] },
          },
        ],
      },
    };
    const res = await fetch(`${w.url}/api/${projectId}/envelope/?sentry_key=${key}`, {
      method: 'POST',
      body: new Uint8Array(envelope({}, [{ type: 'event', payload: event }])),
    });
    expect(res.status, await res.clone().text()).toBe(200);
    const detail = (await (await w.api(`/api/projects/web/events/${id}`)).json()) as {
      title: string;
      exceptions: { type: string; module: string }[];
    };
    expect(detail.title).toBe('DeclinedException: declined');
    expect(detail.exceptions[0]).toMatchObject({ type: 'DeclinedException', module: 'com.example' });
  });

  it("maps a minified frame to `filename` src/…, `abs_path` as the map writes it, and its enclosing function's name, not the call site's", async () => {
    const { dsn, id: projectId } = (await (await w.api('/api/projects/web')).json()) as { dsn: string; id: number };
    const key = new URL(dsn).username;
    const source =
      'export function checkout(items) {\n  return run(parseItems, items);\n}\n\nfunction run(fn, input) {\n  return fn.call(null, input);\n}\n\nfunction parseItems(text) {\n  if (!text.includes(":")) throw new Error("bad items");\n  return text.split(",");\n}\n';
    const built = transformSync(source, {
      loader: 'js',
      format: 'esm',
      minify: true,
      sourcemap: 'external',
      sourcefile: 'webpack:///./src/cart.js',
    });
    const uploaded = await w.api('/api/projects/web/symbols', {
      method: 'POST',
      body: form('sourcemap', 'web@7.0', 'cart.min.js.map', built.map),
    });
    expect(uploaded.status, await uploaded.clone().text()).toBe(201);
    const col = (needle: string) => built.code.indexOf(needle) + 1;
    const id = eventId();
    // As a browser reports it: parseItems (minified `u`) called through `fn.call`.
    const frames = [
      {
        abs_path: 'https://shop.example/cart.min.js',
        filename: 'https://shop.example/cart.min.js',
        function: 'e',
        lineno: 1,
        colno: col('return t(') + 7,
        in_app: true,
      },
      {
        abs_path: 'https://shop.example/cart.min.js',
        filename: 'https://shop.example/cart.min.js',
        function: 't',
        lineno: 1,
        colno: col('n.call(') + 2,
        in_app: true,
      },
      {
        abs_path: 'https://shop.example/cart.min.js',
        filename: 'https://shop.example/cart.min.js',
        function: 'u',
        lineno: 1,
        colno: col('throw new'),
        in_app: true,
      },
    ];
    const event = {
      ...errorEvent({ id, timestamp: Date.now(), type: 'Error', value: 'bad items', release: 'web@7.0' }),
      platform: 'javascript',
      exception: { values: [{ type: 'Error', value: 'bad items', stacktrace: { frames } }] },
    };
    const res = await fetch(`${w.url}/api/${projectId}/envelope/?sentry_key=${key}`, {
      method: 'POST',
      body: new Uint8Array(envelope({}, [{ type: 'event', payload: event }])),
    });
    expect(res.status, await res.clone().text()).toBe(200);
    const detail = (await (await w.api(`/api/projects/web/events/${id}`)).json()) as {
      exceptions: { symbolicated_frames: { function: string; filename: string; abs_path: string; lineno: number }[] }[];
    };
    expect(detail.exceptions[0].symbolicated_frames.map((f) => [f.function, f.filename, f.abs_path, f.lineno])).toEqual(
      [
        ['checkout', 'src/cart.js', 'webpack:///./src/cart.js', 2],
        ['run', 'src/cart.js', 'webpack:///./src/cart.js', 6],
        ['parseItems', 'src/cart.js', 'webpack:///./src/cart.js', 10],
      ],
    );
  });

  it('re-symbolicates the release stored events after an upload: one step after its answer, the rest by the cron', async () => {
    const { dsn, id: projectId } = (await (await w.api('/api/projects/web')).json()) as { dsn: string; id: number };
    const key = new URL(dsn).username;
    // Obfuscated frames of a release with no mapping yet: stored as they came.
    const javaEvent = (): Record<string, unknown> => ({
      ...errorEvent({
        id: eventId(),
        timestamp: Date.now(),
        type: 'IllegalStateException',
        value: 'declined',
        release: 'android@5.0',
      }),
      platform: 'java',
      exception: {
        values: [
          {
            type: 'IllegalStateException',
            value: 'declined',
            module: 'java.lang',
            stacktrace: { frames: [{ module: 'a.b', function: 'c', filename: 'SourceFile', in_app: true }] },
          },
        ],
      },
    });
    const total = WORKER_RESYMBOLICATE_STEP_EVENTS + 1;
    const ids: string[] = [];
    for (let sent = 0; sent < total; ) {
      const events = Array.from({ length: Math.min(100, total - sent) }, javaEvent);
      ids.push(...events.map((e) => e.event_id as string));
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
      sent += events.length;
    }
    const d1 = await w.d1();
    const symbolicated = async () =>
      (await d1
        .prepare("select count(*) as n from events where release = 'android@5.0' and symbolicated is not null")
        .first<{ n: number }>())!.n;
    expect(await symbolicated()).toBe(0);

    const mapping = 'com.example.Checkout -> a.b:\n    void pay(int) -> c\n';
    const uploaded = await w.api('/api/projects/web/symbols', {
      method: 'POST',
      body: form('proguard', 'android@5.0', 'mapping.txt', mapping),
    });
    expect(uploaded.status, await uploaded.clone().text()).toBe(201);

    // The step after the answer: one step's events, then the run waits for the cron, its lease given back.
    const job = async () =>
      (await d1
        .prepare("select state, done, lease_until from symbol_jobs where release = 'android@5.0'")
        .first<{ state: string; done: number; lease_until: number }>())!;
    const deadline = Date.now() + 10_000;
    while ((await job()).done < WORKER_RESYMBOLICATE_STEP_EVENTS && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await job()).toEqual({ state: 'pending', done: WORKER_RESYMBOLICATE_STEP_EVENTS, lease_until: 0 });
    expect(await symbolicated()).toBe(WORKER_RESYMBOLICATE_STEP_EVENTS);

    await w.runCron(RESYMBOLICATE_CRON);
    expect(await job()).toMatchObject({ state: 'done', done: total });
    expect(await symbolicated()).toBe(total);
    const detail = (await (await w.api(`/api/projects/web/events/${ids[total - 1]}`)).json()) as {
      symbolicated: boolean;
      exceptions: {
        frames: { module: string; function: string }[];
        symbolicated_frames: { module: string; function: string }[] | null;
      }[];
    };
    expect(detail.symbolicated).toBe(true);
    expect(detail.exceptions[0].frames[0]).toMatchObject({ module: 'a.b', function: 'c' });
    expect(detail.exceptions[0].symbolicated_frames?.[0]).toMatchObject({
      module: 'com.example.Checkout',
      function: 'pay',
    });

    // Nothing is pending now: the next run of the cron does nothing.
    await w.runCron(RESYMBOLICATE_CRON);
    expect(await job()).toMatchObject({ state: 'done', done: total });
  });
});
