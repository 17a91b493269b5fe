// Symbol files on the serverless edition, inside workerd on D1: the SymbolService the
// Worker builds (src/editions/workers/deps.ts) stores uploads in D1 (chunks of 512 KiB,
// each one bound value well under D1's 2 MB) and symbolicates events with them, as
// ingest does before its sink: source maps, ProGuard and Breakpad .sym files (with their
// derived lookup index). And the C++/Rust demangler the
// Worker loads for native (dSYM) frames, its WebAssembly imported as a module, running in
// workerd (the dSYM upload and its frames: test/editions/workers/sentry-cli.test.ts).
import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadWorkerDemangler } from '../../../../src/editions/workers/demangle.js';
import { buildWorkerDeps, type WorkerEnv } from '../../../../src/editions/workers/deps.js';
import { withoutQueue } from './direct-path.js';
import type { AppDeps } from '../../../../src/context.js';
import { symbolicationInputOf } from '../../../../src/ingest/normalize.js';
import { migrate } from '../../../../src/store/migrate.js';
import { createProject, PROJECT_DEFAULTS } from '../../../../src/store/projects.js';
import { listSymbolFiles, readSymbolBytes } from '../../../../src/symbols/storage.js';
import armSym from '../../../fixtures/breakpad/aarch64-dwarf4.so.sym?raw';

let deps: AppDeps;
let projectId: number;

beforeAll(async () => {
  deps = buildWorkerDeps({ ...withoutQueue(env as unknown as WorkerEnv), LOG_LEVEL: 'silent' });
  await migrate(deps.store);
  projectId = (
    await createProject(deps.store.db, { ...PROJECT_DEFAULTS, slug: 'symbols-on-d1', name: 'Symbols' }, Date.now())
  ).id;
});

const encoder = new TextEncoder();

describe('symbol files on D1', () => {
  it('waits for the end of every sentry-cli assembly (a Worker cancels what is left once it answered)', () => {
    expect(deps.assembleWaitMs).toBe(Number.POSITIVE_INFINITY);
  });

  it('stores a source map larger than a chunk and symbolicates a minified frame with it', async () => {
    // A map of about 1.5 MB (three chunks): the sources' text carries the bulk.
    const map = {
      version: 3,
      file: 'app.min.js',
      sources: ['src/app.ts'],
      names: ['main'],
      mappings: 'AAAAA,SAASA',
      sourcesContent: ['export function main() {}\n' + '// padding\n'.repeat(140_000)],
    };
    const bytes = encoder.encode(JSON.stringify(map));
    expect(bytes.byteLength).toBeGreaterThan(3 * 512 * 1024 - 200_000);
    const [row] = await deps.symbols!.upload(
      { projectId, kind: 'sourcemap', release: 'web@1.0', filename: 'app.min.js.map' },
      [bytes],
    );
    expect(Number(row.size)).toBe(bytes.byteLength);
    const stored = await readSymbolBytes(deps.store.db, Number(row.id));
    // Compared as text: a deep equality over 1.5 million bytes takes vitest seconds.
    expect(new TextDecoder().decode(stored!)).toBe(new TextDecoder().decode(bytes));

    const input = symbolicationInputOf({
      platform: 'javascript',
      release: 'web@1.0',
      exception: {
        values: [
          {
            type: 'Error',
            value: 'boom',
            stacktrace: {
              frames: [
                {
                  filename: 'https://shop.example/app.min.js',
                  abs_path: 'https://shop.example/app.min.js',
                  lineno: 1,
                  colno: 1,
                  function: 'a',
                },
              ],
            },
          },
        ],
      },
    });
    const out = await deps.symbols!.symbolicate(projectId, input);
    expect(out?.frames[0]?.[0]).toMatchObject({ filename: 'src/app.ts', lineno: 1 });
  });

  it('stores a ProGuard mapping and deobfuscates a Java frame and the exception type with it', async () => {
    const mapping =
      ['com.example.shop.Checkout -> a.b:', '    void pay(int) -> c', 'com.example.shop.PaymentFailed -> a.d:'].join(
        '\n',
      ) + '\n';
    await deps.symbols!.upload({ projectId, kind: 'proguard', release: 'android@2.0', filename: 'mapping.txt' }, [
      encoder.encode(mapping),
    ]);
    const input = symbolicationInputOf({
      platform: 'java',
      release: 'android@2.0',
      exception: {
        values: [
          {
            type: 'd',
            module: 'a',
            value: 'declined',
            stacktrace: { frames: [{ module: 'a.b', function: 'c', filename: 'SourceFile', lineno: 7, in_app: true }] },
          },
        ],
      },
    });
    const out = await deps.symbols!.symbolicate(projectId, input);
    expect(out?.frames[0]?.[0]).toMatchObject({ module: 'com.example.shop.Checkout', function: 'pay' });
    expect(out?.types[0]).toMatchObject({ type: 'PaymentFailed', module: 'com.example.shop' });
    expect((await listSymbolFiles(deps.store.db, projectId)).map((r) => r.kind).sort()).toEqual([
      'proguard',
      'sourcemap',
    ]);
  });

  it('stores a Breakpad .sym with its lookup index and symbolicates an Android frame with it', async () => {
    const [file] = await deps.symbols!.upload(
      { projectId, kind: 'breakpad', release: 'ndk@1', filename: 'libapp.so.sym' },
      [encoder.encode(armSym)],
    );
    expect(file.debug_id).toBe('451c4bf6-3bff-84e8-56e0-8e63217f680d');
    const input = symbolicationInputOf({
      platform: 'native',
      release: 'ndk@1',
      exception: {
        values: [{ type: 'SIGSEGV', value: 'x', stacktrace: { frames: [{ instruction_addr: '0x7000010708' }] } }],
      },
      debug_meta: {
        images: [{ type: 'elf', debug_id: file.debug_id, image_addr: '0x7000000000', image_size: 0x20000 }],
      },
    });
    const out = await deps.symbols!.symbolicate(projectId, input);
    expect(out?.frames[0]?.map((f) => f.function)).toEqual(['main', 'twice_clamped', 'clamp_add']);
  });
});

describe('the Worker demangler', () => {
  it('demangles C++ and Rust names in workerd and keeps what it does not understand', async () => {
    const demangle = await loadWorkerDemangler();
    expect(demangle('_ZN3geo5totalERKNS_5ShapeEi')).toBe('geo::total(geo::Shape const&, int)');
    expect(demangle('__ZN3geo5totalERKNS_5ShapeEi')).toBe('geo::total(geo::Shape const&, int)');
    expect(demangle('_RNvCs1234_7mycrate3foo')).toBe('mycrate::foo');
    expect(demangle('$s4main3FooV3baryyF')).toBe('$s4main3FooV3baryyF');
    expect(demangle('main')).toBe('main');
  });
});
