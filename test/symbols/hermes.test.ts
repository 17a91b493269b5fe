// React Native Hermes source maps on both databases, from a real Hermes build
// (test/fixtures/hermes, rebuilt by its build.mjs with hermes-compiler): the composed map
// (packager map ∘ Hermes map, with `x_hermes_function_offsets` and `debugId`) symbolicates
// frames as React Native sends them for Hermes bytecode (line 1, the column the bytecode
// offset), matched by release and file name or by debug id; Hermes' own map alone leads to
// the bundle; a malformed map is refused with a 400. The fixture is checked against a
// fresh build when hermes-compiler is installed.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { TraceMap, eachMapping } from '@jridgewell/trace-mapping';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { makeProject } from '../ingest/helpers.js';
import { decodeFunctionMap, functionMapsOf } from '../../src/symbols/sourcemap-functions.js';
import { eventDetail, sendEvent, uploadOk, uploadSymbols } from './helpers.js';

const FIXTURE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/hermes');
const read = (name: string) => fs.readFileSync(path.join(FIXTURE, name));
const composed = JSON.parse(read('index.android.bundle.map').toString()) as {
  debugId: string;
  x_hermes_function_offsets: Record<string, number[]>;
  x_facebook_sources: unknown;
};

/** The bytecode column of the first segment the composed map puts on `line` of src/app.js (at 0-based column `from` when given). */
function columnFor(line: number, from?: number): number {
  let column = -1;
  eachMapping(new TraceMap(read('index.android.bundle.map').toString()), (m) => {
    if (column < 0 && m.originalLine === line && (from === undefined || m.originalColumn === from))
      column = m.generatedColumn;
  });
  expect(column, `a segment on line ${line}`).toBeGreaterThanOrEqual(0);
  return column;
}

/** An event as sentry-react-native sends a Hermes crash: frames at line 1, column = bytecode offset + 1. */
function hermesEvent(release: string, withDebugId: boolean) {
  const frame = (fn: string, line: number) => ({
    filename: 'app:///index.android.bundle',
    abs_path: 'app:///index.android.bundle',
    function: fn,
    lineno: 1,
    colno: columnFor(line) + 1,
    in_app: true,
  });
  return {
    platform: 'javascript',
    release,
    dist: '420',
    sdk: { name: 'sentry.javascript.react-native', version: '6.4.0' },
    contexts: { react_native_context: { js_engine: 'hermes' }, os: { name: 'Android', version: '14' } },
    exception: {
      values: [
        {
          type: 'Error',
          value: 'negative price: -400',
          mechanism: { type: 'onerror', handled: false },
          stacktrace: { frames: [frame('checkout', 11), frame('formatPrice', 3)] },
        },
      ],
    },
    ...(withDebugId
      ? {
          debug_meta: {
            images: [{ type: 'sourcemap', code_file: 'app:///index.android.bundle', debug_id: composed.debugId }],
          },
        }
      : {}),
  };
}

describe.each(dialects)('Hermes source maps on %s', (dialect) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(dialect);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('symbolicates Hermes bytecode frames with the composed map, by release and file name', async () => {
    const p = await makeProject(t);
    await uploadOk(t, p, {
      kind: 'sourcemap',
      release: 'shop@4.2.0',
      dist: '420',
      files: [{ name: 'index.android.bundle.map', data: read('index.android.bundle.map') }],
    });
    const detail = await eventDetail(t, p, await sendEvent(t, p, hermesEvent('shop@4.2.0', false)));
    const frames = detail.exceptions[0].symbolicated_frames;
    expect(frames).toMatchObject([
      { filename: 'src/app.js', lineno: 11 },
      { filename: 'src/app.js', lineno: 3, context_line: "    throw new Error('negative price: ' + cents);" },
    ]);
    expect(detail.error_location ?? detail.location).toMatch(/app\.js:3$/);
  });

  it('finds the map by the debugId the bundle carries, whatever the release', async () => {
    const p = await makeProject(t);
    const [file] = await uploadOk(t, p, {
      kind: 'sourcemap',
      files: [{ name: 'index.android.bundle.map', data: read('index.android.bundle.map') }],
    });
    expect(file.debug_id).toBe(composed.debugId);
    const detail = await eventDetail(t, p, await sendEvent(t, p, hermesEvent('other@1', true)));
    expect(detail.exceptions[0].symbolicated_frames?.[1]).toMatchObject({ filename: 'src/app.js', lineno: 3 });
  });

  it('with only Hermes own map, leads back to the minified bundle', async () => {
    const p = await makeProject(t);
    await uploadOk(t, p, {
      kind: 'sourcemap',
      release: 'shop@1',
      dist: '420',
      files: [{ name: 'index.android.bundle.map', data: read('index.android.bundle.hbc.map') }],
    });
    const detail = await eventDetail(t, p, await sendEvent(t, p, hermesEvent('shop@1', false)));
    // The packager map was not composed in: the frames point into the bundle itself.
    const frames = detail.exceptions[0].symbolicated_frames ?? [];
    expect(frames).toHaveLength(2);
    for (const f of frames) expect(f.filename).toBe('index.android.bundle');
  });

  it('names frames after the function map (x_facebook_sources), anonymous functions included', async () => {
    const p = await makeProject(t);
    await uploadOk(t, p, {
      kind: 'sourcemap',
      release: 'shop@4.3.0',
      dist: '420',
      files: [{ name: 'index.android.bundle.map', data: read('index.android.bundle.map') }],
    });
    const source = fs.readFileSync(path.join(FIXTURE, 'src/app.js'), 'utf8').split('\n');
    // Hermes names bytecode frames of minified or anonymous functions `anonymous` or `?`.
    const frame = (fn: string, line: number, from?: number) => ({
      filename: 'app:///index.android.bundle',
      abs_path: 'app:///index.android.bundle',
      function: fn,
      lineno: 1,
      colno: columnFor(line, from) + 1,
      in_app: true,
    });
    const event = hermesEvent('shop@4.3.0', false);
    event.exception.values[0].stacktrace.frames = [
      frame('anonymous', 15),
      frame('anonymous', 18, source[17].indexOf('formatPrice(-')),
      frame('?', 3),
    ];
    const detail = await eventDetail(t, p, await sendEvent(t, p, event));
    expect(detail.exceptions[0].symbolicated_frames?.map((f: { function?: string }) => f.function)).toEqual([
      'onPress',
      'order.items.map$argument_0',
      'formatPrice',
    ]);
  });

  it('puts the frames a real Hermes VM printed for bytecode where the same VM puts them when it runs the source', async () => {
    // test/fixtures/hermes-runtime (rebuilt by its build.mjs with hermes-engine-cli's VM): the
    // VM prints a bytecode frame as `address at app.hbc:1:<0-based bytecode offset>`, and
    // sentry-react-native's frame rewrite adds 1 to make the column 1-based like V8's.
    const runtime = path.resolve(FIXTURE, '../hermes-runtime');
    const stacks = JSON.parse(fs.readFileSync(path.join(runtime, 'stacks.json'), 'utf8')) as {
      bytecode: string[];
      source: string[];
    };
    const position = (line: string) => {
      const m = /^at (\S+) \((?:address at )?([^:]+):(\d+):(\d+)\)$/.exec(line);
      expect(m, line).not.toBeNull();
      return { fn: m![1], file: m![2], line: Number(m![3]), column: Number(m![4]) };
    };
    const p = await makeProject(t);
    await uploadOk(t, p, {
      kind: 'sourcemap',
      release: 'vm@1',
      files: [{ name: 'app.hbc.map', data: fs.readFileSync(path.join(runtime, 'app.hbc.map')) }],
    });
    // Sentry orders frames outermost first; the VM prints the innermost first.
    const frames = stacks.bytecode
      .map(position)
      .reverse()
      .map((f) => ({ filename: 'app:///app.hbc', function: f.fn, lineno: f.line, colno: f.column + 1, in_app: true }));
    const event = {
      platform: 'javascript',
      release: 'vm@1',
      contexts: { react_native_context: { js_engine: 'hermes' } },
      exception: { values: [{ type: 'Error', value: 'negative price: -400', stacktrace: { frames } }] },
    };
    const detail = await eventDetail(t, p, await sendEvent(t, p, event));
    const got = (detail.exceptions[0].symbolicated_frames ?? []).map(
      (f: { filename?: string; lineno?: number; colno?: number }) => `${f.filename}:${f.lineno}:${f.colno}`,
    );
    const want = stacks.source
      .map(position)
      .reverse()
      .map((f) => `${f.file}:${f.line}:${f.column}`);
    expect(want).toHaveLength(3);
    expect(got).toEqual(want);
  });

  it('refuses a malformed Hermes map with a 400', async () => {
    const p = await makeProject(t);
    for (const bad of [
      '{"version":3,"sources":["a"],"mappings":"!!!"',
      '{"version":3,"x_hermes_function_offsets":{"0":"x"},"mappings":7}',
    ]) {
      const res = await uploadSymbols(t, p, {
        kind: 'sourcemap',
        release: 'r',
        files: [{ name: 'index.android.bundle.map', data: bad }],
      });
      expect(res.status, bad).toBe(400);
    }
  });
});

describe('function maps', () => {
  it('decodes Metro scopes and ignores malformed ones', () => {
    const [map] = functionMapsOf(composed.x_facebook_sources, 1) ?? [];
    expect(map?.names).toContain('order.items.map$argument_0');
    for (const bad of [
      { names: ['a'], mappings: 'AAA;!!' },
      { names: ['a'], mappings: 'ACA' },
      { names: [1], mappings: 'AAA' },
      { names: ['a', 'b'], mappings: 'AAC;ACD' },
      null,
    ]) {
      expect(decodeFunctionMap(bad), JSON.stringify(bad)).toBeNull();
    }
    expect(functionMapsOf({ 0: 'x' }, 1)).toBeNull();
  });
});

describe.skipIf(
  !fs.existsSync(path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../node_modules/hermes-compiler')),
)('the Hermes fixture', () => {
  it('is what hermes-compiler builds from src/app.js today', async () => {
    const out = fs.mkdtempSync(path.join(os.tmpdir(), 'hermes-'));
    try {
      // @ts-expect-error: a plain ES module script without types
      const { build } = await import('../fixtures/hermes/build.mjs');
      build(out);
      for (const name of ['index.android.bundle.hbc', 'index.android.bundle.hbc.map', 'index.android.bundle.map']) {
        expect(fs.readFileSync(path.join(out, name)).equals(read(name)), name).toBe(true);
      }
    } finally {
      fs.rmSync(out, { recursive: true, force: true });
    }
  });
});
