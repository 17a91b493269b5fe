// The committed fixtures' builders against this machine's tools (test/fixtures/build.mjs
// into a temporary folder): the native program built afresh by clang, ld64.lld, dsymutil
// and llvm-lipo is symbolicated by our reader as llvm-symbolizer answers on it, at every
// __text address of every file; the Java program built afresh by javac and ProGuard, its
// real trace remapped by our ProGuard reader, gives retrace.jar's answer; the ELF builds
// (clang, ld.lld, llvm-objcopy) answer as llvm-symbolizer; the builds without unwind tables
// have the .debug_frame rows llvm-dwarfdump prints. These tests drive
// the tools; every other test reads the committed builds and answers (test/fixtures/).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadNodeDemangler } from '../../src/editions/node/demangle.js';
import { ProguardMapping, remapExceptionType, remapJavaFrame } from '../../src/symbols/proguard.js';
import { lacks } from '../helpers/tools.js';
import { compareWithLlvm, dsym, nativeAnswers } from '../symbols/native/native-fixture.js';
import { buildElfIndex } from '../../src/symbols/elf.js';
import { NativeIndex } from '../../src/symbols/native/lookup-index.js';
import { compareElfWithLlvm, ELF_NAMES, type ElfName } from '../symbols/native/elf-fixture.js';
import { buildJavaFixture, type JavaFixture } from '../symbols/java-fixture.js';
import { compareDebugFrameWithDwarfdump, DEBUG_FRAME_NAMES } from '../minidump/cfi-fixture.js';

const BUILD = path.resolve('test/fixtures/build.mjs');

function buildFresh(family: 'native' | 'java' | 'elf-native' | 'debug-frame'): string {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), `faultline-fresh-${family}-`));
  execFileSync(process.execPath, [BUILD, '--out', out, family], { stdio: 'pipe' });
  return out;
}

describe.skipIf(lacks('clang'))('native fixtures rebuilt by this machine’s LLVM', () => {
  let out: string;
  beforeAll(() => {
    out = buildFresh('native');
  }, 180_000);
  afterAll(() => {
    if (out) fs.rmSync(out, { recursive: true, force: true });
  });

  it('our reader answers as llvm-symbolizer at every address of every fresh dSYM, object and universal file', () => {
    const root = path.join(out, 'native');
    const files = Object.keys(nativeAnswers(root).answers);
    expect(files.length).toBeGreaterThanOrEqual(12);
    // Inline chains three deep in the arm64 dSYM prove the comparison covers inlining.
    for (const rel of files)
      expect(compareWithLlvm(path.join(root, rel), { root })).toBeGreaterThanOrEqual(rel.startsWith('dsym/') ? 3 : 1);
  });

  it('and with C++ names demangled as llvm-symbolizer demangles them', async () => {
    const root = path.join(out, 'native');
    compareWithLlvm(dsym('arm64', root).dwarfFile, { root, demangle: await loadNodeDemangler() });
  });
});

describe.skipIf(lacks('clang'))('ELF fixtures rebuilt by this machine’s clang and ld.lld', () => {
  let out: string;
  beforeAll(() => {
    out = buildFresh('elf-native');
  }, 180_000);
  afterAll(() => {
    if (out) fs.rmSync(out, { recursive: true, force: true });
  });

  it('our reader answers as llvm-symbolizer at every .text address of every fresh ELF file', async () => {
    const root = path.join(out, 'elf-native');
    for (const name of ELF_NAMES) {
      // The stripped object's answers come from its debug file (llvm-symbolizer follows .gnu_debuglink).
      const from: ElfName = name === 'aarch64-split.so' ? 'aarch64-split.so.debug' : name;
      const index = new NativeIndex(
        (await buildElfIndex(new Uint8Array(fs.readFileSync(path.join(root, from))))).index,
      );
      compareElfWithLlvm(index, name, { root });
    }
  });
});

describe.skipIf(lacks('clang'))('.debug_frame fixtures rebuilt by this machine’s clang', () => {
  let out: string;
  beforeAll(() => {
    out = buildFresh('debug-frame');
  }, 180_000);
  afterAll(() => {
    if (out) fs.rmSync(out, { recursive: true, force: true });
  });

  it('our CFI reader answers as llvm-dwarfdump at every row of every fresh build', async () => {
    for (const name of DEBUG_FRAME_NAMES)
      expect(await compareDebugFrameWithDwarfdump(name, path.join(out, 'debug-frame'))).toBeGreaterThan(10);
  });
});

describe.skipIf(lacks('java', 'proguard'))('the Java fixture rebuilt by this machine’s javac and ProGuard', () => {
  let out: string;
  let fx: JavaFixture;
  beforeAll(() => {
    out = buildFresh('java');
    fx = buildJavaFixture(path.join(out, 'java'));
  }, 180_000);
  afterAll(() => {
    if (fx) fs.rmSync(fx.dir, { recursive: true, force: true });
    if (out) fs.rmSync(out, { recursive: true, force: true });
  });

  it('our remapping of the real obfuscated trace is retrace.jar’s answer', () => {
    expect(fx.exceptionType).not.toBe(fx.retracedType);
    expect(fx.retracedFrames.length).toBeGreaterThan(fx.frames.length);
    const mapping = new ProguardMapping(new Uint8Array(fx.mapping));
    expect(remapExceptionType(mapping, fx.exceptionType, undefined)).toEqual({ type: fx.retracedType });
    const frames = fx.frames.flatMap((f) => remapJavaFrame(mapping, { ...f }) ?? [{ ...f }]);
    expect(
      frames.map((f) => ({ module: f.module, function: f.function, filename: f.filename, lineno: f.lineno })),
    ).toEqual(fx.retracedFrames);
  });
});
