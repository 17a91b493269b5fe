// The dsym kind inside the symbols pipeline, on both databases: a fat dSYM stored as one
// file per slice with its index, loaded back from storage by the symbolication service,
// and an iOS-shaped event (debug_meta.images of type macho, ASLR-slid addresses) whose
// frames come back as llvm-symbolizer names them: the crashing frame at its address,
// callers one byte back, one frame per inlined function, caller first.
import fs from 'node:fs';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { loadNodeDemangler } from '../../src/editions/node-demangle.js';
import { symbolicationInputOf } from '../../src/ingest/normalize.js';
import { migrate, openStore, type Store } from '../../src/store/database.js';
import { dsymHandler } from '../../src/symbols/dsym.js';
import { SymbolService } from '../../src/symbols/service.js';
import { saveDerivedIndex, saveSymbolFile } from '../../src/symbols/storage.js';
import { createTestDatabase, dialects, type TestDatabase } from '../helpers/server.js';
import { buildDsym, lipo, run, sourceDir, symbolize, type BuiltDsym, type SymbolizerFrame } from './build-dsym.js';

const IMAGE_ADDR = 0x1_0460_0000; // where the app was loaded (ASLR slide)
const VMADDR = 0x1_0000_0000; // __TEXT vmaddr of the arm64 slice

let dir: string;
let arm64: BuiltDsym;
let fatBytes: Uint8Array;
let debugId: string;
/** Return addresses right after `bl` instructions, and one crashing address inside inlined code. */
let callerAddrs: number[];
let crashAddr: number;

beforeAll(async () => {
  await loadNodeDemangler();
  dir = sourceDir();
  arm64 = buildDsym(dir, 'arm64-apple-macos11', 'arm64', ['macos', '11.0', '11.0']);
  const x86 = buildDsym(dir, 'x86_64-apple-macos11', 'x86_64', ['macos', '11.0', '11.0']);
  fatBytes = new Uint8Array(fs.readFileSync(lipo(dir, [arm64.dwarfFile, x86.dwarfFile], 'App')));
  debugId = /UUID: ([0-9A-F-]+) \(arm64\)/.exec(run('llvm-dwarfdump', ['--uuid', arm64.dwarfFile], dir))![1].toLowerCase();
  const exe = arm64.dwarfFile.replace(/\.dSYM\/.*$/, '');
  const disasm = run('llvm-objdump', ['-d', exe], dir).split('\n');
  callerAddrs = disasm.filter((l) => /\tbl\t/.test(l)).map((l) => parseInt(l.trim().split(':')[0], 16) + 4);
  expect(callerAddrs.length).toBeGreaterThanOrEqual(4);
  // The crash: the first address whose llvm answer is an inline chain three deep.
  const text = disasm.filter((l) => /^\s*1[0-9a-f]+:/.test(l)).map((l) => parseInt(l.trim().split(':')[0], 16));
  const answers = symbolize(arm64.dwarfFile, text);
  crashAddr = text[answers.findIndex((a) => a.length >= 3)];
});

const hex = (n: number): string => `0x${n.toString(16)}`;

/** What a frame should become: llvm-symbolizer's chain, caller first, in Sentry's fields. */
function expectedFrames(chain: SymbolizerFrame[]) {
  return [...chain].reverse().map((f) => ({ function: f.FunctionName, filename: f.FileName.split('/').pop(), abs_path: f.FileName, lineno: f.Line }));
}

describe.each(dialects)('dsym symbolication through storage on %s', (dialect) => {
  let database: TestDatabase;
  let store: Store;
  let projectId: number;
  let service: SymbolService;

  beforeAll(async () => {
    database = await createTestDatabase(dialect);
    store = await openStore(database.url);
    await migrate(store);
    const row = await store.db
      .insertInto('projects')
      .values({ slug: 'ios', name: 'iOS', platform: 'cocoa', dsn_key: 'd'.repeat(32), sample_keep_first: 10, sample_rate: 1, daily_quota: 0, created_at: 1 })
      .returning('id')
      .executeTakeFirstOrThrow();
    projectId = Number(row.id);
    // What the upload does with a fat dSYM: one stored file per slice, each with its index.
    const inspector = dsymHandler.inspect('App');
    inspector.push(fatBytes.subarray(0, 1000));
    inspector.push(fatBytes.subarray(1000));
    const files = await inspector.finish();
    expect(files.map((f) => f.meta?.arch).sort()).toEqual(['arm64', 'x86_64']);
    for (const f of files) {
      const [start, end] = f.range!;
      const saved = await saveSymbolFile(store.db, { projectId, kind: 'dsym', release: 'app@1.0', filename: f.filename!, debugId: f.debugId }, [fatBytes.slice(start, end)], Date.now());
      await saveDerivedIndex(store.db, Number(saved.id), [f.index!]);
    }
    service = new SymbolService({ store, clock: systemClock, logger: pino({ level: 'silent' }) });
  });

  afterAll(async () => {
    await store.close();
    await database.drop();
  });

  it('symbolicates an iOS crash: the crashing frame at its address, callers one byte back, inlined functions expanded', async () => {
    const slide = (addr: number): string => hex(addr - VMADDR + IMAGE_ADDR);
    const frames = [
      ...callerAddrs.slice(0, 4).map((a) => ({ instruction_addr: slide(a), package: '/var/containers/Bundle/Application/App.app/App', in_app: true })),
      { instruction_addr: slide(crashAddr), function: '<redacted>', in_app: true },
    ];
    const event = {
      platform: 'cocoa',
      release: 'app@1.0',
      exception: { values: [{ type: 'EXC_BAD_ACCESS', value: 'KERN_INVALID_ADDRESS', stacktrace: { frames } }] },
      debug_meta: {
        images: [
          { type: 'macho', debug_id: debugId.toUpperCase(), image_addr: hex(IMAGE_ADDR), image_size: 0x10000, image_vmaddr: hex(VMADDR), code_file: '/var/containers/Bundle/Application/App.app/App', arch: 'arm64' },
          { type: 'macho', debug_id: '11111111-2222-3333-4444-555555555555', image_addr: '0x180000000', image_size: 0x100000, code_file: '/usr/lib/system/libsystem_kernel.dylib' },
        ],
      },
    };
    const out = await service.symbolicate(projectId, symbolicationInputOf(event));
    expect(out).not.toBeNull();
    const got = out!.frames[0]!.map((f) => ({ function: f.function, filename: f.filename, abs_path: f.abs_path, lineno: f.lineno }));

    const callerAnswers = symbolize(arm64.dwarfFile, callerAddrs.slice(0, 4).map((a) => a - 1));
    const [crashAnswer] = symbolize(arm64.dwarfFile, [crashAddr]);
    const expected = [...callerAnswers.flatMap(expectedFrames), ...expectedFrames(crashAnswer)];
    // The demangler leaves out template return types, as Sentry does; LLVM prints them.
    for (const e of expected) {
      const ours = got.find((g) => g.function && e.function.endsWith(` ${g.function}`));
      if (ours) e.function = ours.function!;
    }
    expect(got).toEqual(expected);
    expect(expectedFrames(crashAnswer).length).toBeGreaterThanOrEqual(3);
    // The SDK's own fields stay on every frame an address expanded into.
    expect(out!.frames[0]!.at(-1)!.instruction_addr).toBe(slide(crashAddr));
    expect(out!.frames[0]![0].package).toBe('/var/containers/Bundle/Application/App.app/App');
  });

  it('frames of images without a dSYM, and events without macho images, stay as sent', async () => {
    const frame = { instruction_addr: '0x180001234', package: '/usr/lib/system/libsystem_kernel.dylib' };
    const event = {
      platform: 'cocoa',
      exception: { values: [{ type: 'SIGABRT', stacktrace: { frames: [frame] } }] },
      debug_meta: { images: [{ type: 'macho', debug_id: '11111111-2222-3333-4444-555555555555', image_addr: '0x180000000', image_size: 0x100000 }] },
    };
    expect(await service.symbolicate(projectId, symbolicationInputOf(event))).toBeNull();
    expect(await service.symbolicate(projectId, symbolicationInputOf({ ...event, debug_meta: undefined }))).toBeNull();
  });
});
