// An iOS-shaped crash over the committed arm64 build (test/symbols/native/native-fixture.ts):
// a fat dSYM (arm64 + x86_64) in a .dSYM bundle, the event an SDK sends for it
// (debug_meta.images of type macho, addresses slid by ASLR: callers are return addresses
// right after `bl` instructions, the crashing frame sits in C code inlined three deep, or in
// C++ code with an inlined template for the demangler), and the frames llvm-symbolizer says
// it should become.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'vitest';
import { DSYM_INFO_PLIST, dsym, nativeAnswers, symbolize, universal, type SymbolizerFrame } from './native-fixture.js';

export const IMAGE_ADDR = 0x1_0460_0000;
export const VMADDR = 0x1_0000_0000;
export const CODE_FILE = '/private/var/containers/Bundle/Application/0C1D/App.app/App';

export interface IosFixture {
  dir: string;
  /** The bundle's files (relative paths → bytes), its DWARF file a fat arm64 + x86_64 Mach-O. */
  bundle: Record<string, Uint8Array>;
  debugIds: Record<string, string>;
  arm64Dwarf: string;
  callerAddrs: number[];
  crashAddr: number;
  /** A crash address in C++ (geo::total with geo::scale<int> inlined): mangled names to demangle. */
  cxxCrashAddr: number;
}

/** The fixture, with `dir` a fresh temporary folder the caller may write in and remove. */
export function buildIosFixture(): IosFixture {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-ios-'));
  const fat = universal('App');
  const { ios, uuids } = nativeAnswers();
  const bundle = {
    'App.app.dSYM/Contents/Info.plist': new Uint8Array(fs.readFileSync(DSYM_INFO_PLIST)),
    'App.app.dSYM/Contents/Resources/DWARF/App': new Uint8Array(fs.readFileSync(fat)),
  };
  return {
    dir,
    bundle,
    debugIds: uuids['fat/App'],
    arm64Dwarf: dsym('arm64').dwarfFile,
    callerAddrs: ios.callerAddrs.map(Number),
    crashAddr: Number(ios.crashAddr),
    cxxCrashAddr: Number(ios.cxxCrashAddr),
  };
}

/** Writes the fixture's .dSYM bundle under `dir` (as sentry-cli finds it in a build folder); returns `dir`. */
export function writeIosBundle(fx: IosFixture, dir: string): string {
  for (const [name, bytes] of Object.entries(fx.bundle)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), bytes);
  }
  return dir;
}

const hex = (n: number): string => `0x${n.toString(16)}`;
export const slid = (addr: number): string => hex(addr - VMADDR + IMAGE_ADDR);

/** The event a Cocoa SDK sends for the crash at `crashAddr` (frames oldest call first). */
export function iosEvent(fx: IosFixture, release: string, crashAddr = fx.crashAddr): Record<string, unknown> {
  return {
    platform: 'cocoa',
    release,
    exception: {
      values: [
        {
          type: 'EXC_BAD_ACCESS',
          value: 'KERN_INVALID_ADDRESS at 0x0000000000000010',
          mechanism: { type: 'mach', handled: false },
          stacktrace: {
            frames: [
              ...fx.callerAddrs.map((a) => ({
                instruction_addr: slid(a),
                image_addr: hex(IMAGE_ADDR),
                package: CODE_FILE,
                in_app: true,
              })),
              {
                instruction_addr: slid(crashAddr),
                image_addr: hex(IMAGE_ADDR),
                package: CODE_FILE,
                function: '<redacted>',
                in_app: true,
              },
            ],
          },
        },
      ],
    },
    debug_meta: {
      images: [
        {
          type: 'macho',
          debug_id: fx.debugIds.arm64.toUpperCase(),
          image_addr: hex(IMAGE_ADDR),
          image_size: 0x10000,
          image_vmaddr: hex(VMADDR),
          code_file: CODE_FILE,
          arch: 'arm64',
        },
        {
          type: 'macho',
          debug_id: '11111111-2222-3333-4444-555555555555',
          image_addr: '0x180000000',
          image_size: 0x100000,
          code_file: '/usr/lib/system/libsystem_kernel.dylib',
        },
      ],
    },
  };
}

function sentryOrder(chain: SymbolizerFrame[]) {
  return [...chain].reverse().map((f) => ({
    function: f.FunctionName,
    filename: f.FileName.split('/').pop(),
    abs_path: f.FileName,
    lineno: f.Line,
  }));
}

/**
 * llvm-symbolizer's frames for the event (callers looked up one byte back), in Sentry's
 * order and fields, checked against `got`. LLVM prints template functions' return types;
 * the demangler, like Sentry's, leaves them out, so that alone is not a difference.
 */
export function expectLlvmFrames(fx: IosFixture, got: Array<Record<string, unknown>>, crashAddr = fx.crashAddr): void {
  const callers = symbolize(
    fx.arm64Dwarf,
    fx.callerAddrs.map((a) => a - 1),
  );
  const [crash] = symbolize(fx.arm64Dwarf, [crashAddr]);
  expect(crash.length).toBeGreaterThanOrEqual(2);
  const expected = [...callers.flatMap(sentryOrder), ...sentryOrder(crash)];
  const ours = got.map((f) => ({ function: f.function, filename: f.filename, abs_path: f.abs_path, lineno: f.lineno }));
  expected.forEach((e, i) => {
    const name = ours[i]?.function;
    if (typeof name === 'string' && e.function.endsWith(` ${name}`)) e.function = name;
  });
  expect(ours).toEqual(expected);
}
