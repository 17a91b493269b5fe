// Windows and macOS minidumps, written by the committed generator
// (test/fixtures/minidump/synth.mjs) from a description: the reader (system info, platform
// ids, CodeView PDB70 records), the walker (Breakpad STACK WIN FRAME_DATA and FPO records
// on x86 Windows, STACK CFI on macOS amd64, frame pointers, scanning) and the event (OS
// name, architecture, debug images with Sentry's debug ids: a PDB's GUID and age for
// Windows, the UUID for macOS), and through the real server's minidump route with an
// uploaded .sym (STACK WIN) and an uploaded Mach-O executable (compact unwind).
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readMachO } from '../../src/symbols/native/macho.js';
import { breakpadIndex } from '../../src/symbols/breakpad.js';
import { NativeIndex } from '../../src/symbols/native/lookup-index.js';
import { breakpadUnwindInfo, processMinidump, readBreakpadUnwind } from '../../src/minidump/process.js';
import { readMinidump } from '../../src/minidump/reader.js';
import { words, writeMinidump, type SynthMinidump } from '../fixtures/minidump/synth.mjs';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { makeProject } from '../ingest/helpers.js';
import { eventDetail, uploadOk } from '../symbols/helpers.js';

const APP_GUID = '3249d99d-0c40-4931-8610-f4e4fb0b6936';
const NTDLL_GUID = '971f98e5-ce60-41ff-b2d7-235bbeb34578';

/** Stack words at `start` from sparse [address, value] pairs. */
function stack(
  start: number,
  size: number,
  width: 4 | 8,
  pairs: Array<[number, number]>,
): { start: number; bytes: Uint8Array } {
  const values = new Map(pairs);
  const list = Array.from({ length: size / width }, (_, i) => values.get(start + i * width) ?? 0);
  return { start, bytes: words(list, width) };
}

const frames = (event: Record<string, unknown>, thread = 0) =>
  [...(event.threads as any).values[thread].stacktrace.frames].reverse().map((f: any) => [f.instruction_addr, f.trust]);

const sym = (text: string) =>
  new TextEncoder().encode(
    `${text
      .trim()
      .split('\n')
      .map((l) => l.trim())
      .join('\n')}\n`,
  );

// ---- Windows x86: STACK WIN --------------------------------------------------------------

// crash (FRAME_DATA: %ebp-based program string) ← caller_fpo (FPO, 4 bytes of parameters,
// 4 of saved registers, 8 of locals, %ebp kept) ← main (FPO that saves %ebp) ← ntdll (no
// symbols: the frame pointer main restored) ← ntdll again.
const WINDOWS_X86: SynthMinidump = {
  arch: 'x86',
  os: 'windows',
  osVersion: '10.0.19045',
  osBuild: 'Service Pack 0',
  cpuCount: 8,
  processId: 4242,
  timestamp: 1_700_000_000,
  threads: [
    {
      id: 7,
      regs: { eip: 0x401010, esp: 0x8008, ebp: 0x8010 },
      stack: stack(0x8000, 0x100, 4, [
        [0x8010, 0x8040],
        [0x8014, 0x402020],
        [0x8024, 0x403030],
        [0x8028, 0x8060],
        [0x8030, 0x405000],
        [0x8060, 0x80f0],
        [0x8064, 0x405100],
      ]),
    },
    {
      id: 8,
      regs: { eip: 0x405010, esp: 0x9000, ebp: 0x9000 },
      stack: stack(0x9000, 0x40, 4, [
        [0x9000, 0x9020],
        [0x9004, 0x403040],
      ]),
    },
  ],
  modules: [
    {
      base: 0x400000,
      size: 0x5000,
      name: 'C:\\app\\app.exe',
      timestamp: 0x5ab38077,
      pdb: { guid: APP_GUID, age: 2, file: 'C:\\build\\app.pdb' },
    },
    {
      base: 0x405000,
      size: 0x2000,
      name: 'C:\\Windows\\System32\\ntdll.dll',
      pdb: { guid: NTDLL_GUID, age: 0x1a, file: 'ntdll.pdb' },
    },
  ],
  exception: { threadId: 7, code: 0xc0000005, params: [1, 0x10] },
};

const APP_SYM = sym(`
  MODULE windows x86 ${APP_GUID.replace(/-/g, '').toUpperCase()}2 app.pdb
  FUNC 1000 100 0 crash
  FUNC 2000 100 4 caller_fpo
  FUNC 3000 100 0 main
  STACK WIN 4 1000 100 3 0 0 0 0 0 1 $T0 $ebp = $eip $T0 4 + ^ = $ebp $T0 ^ = $esp $T0 8 + =
  STACK WIN 0 2000 100 0 0 4 4 8 0 0 0
  STACK WIN 0 3000 100 0 0 0 4 0 0 0 1
  STACK WIN 0 1000 100 0 0 0 0 0 0 0 0
`);

function appInfo() {
  const reader = readBreakpadUnwind(APP_SYM);
  return { reader, info: breakpadUnwindInfo(reader, new NativeIndex(breakpadIndex(reader))) };
}

describe('Windows minidumps', () => {
  it('x86: the reader, and a walk through STACK WIN FRAME_DATA and FPO records, then frame pointers', () => {
    const bytes = writeMinidump(WINDOWS_X86);
    const dump = readMinidump(bytes);
    expect(dump.system).toEqual({
      arch: 'x86',
      os: 'Windows NT',
      osVersion: '10.0.19045',
      osBuild: 'Service Pack 0',
      cpuCount: 8,
    });
    expect(dump.processId).toBe(4242);
    const { reader, info } = appInfo();
    expect(reader.module!.debugId).toBe(APP_GUID);
    expect(reader.win.type).toEqual([4, 0, 0, 0]);
    const { event } = processMinidump(bytes, (m) => (m.debugId === APP_GUID ? info : null));
    expect(frames(event)).toEqual([
      ['0x401010', 'context'],
      ['0x402020', 'cfi'],
      ['0x403030', 'cfi'],
      ['0x405000', 'cfi'],
      ['0x405100', 'fp'],
    ]);
    // The other thread: ntdll has no symbols, its frame pointer leads into main.
    expect(frames(event, 1)).toEqual([
      ['0x405010', 'context'],
      ['0x403040', 'fp'],
    ]);
    expect((event.exception as any).values[0]).toMatchObject({
      type: 'EXCEPTION_ACCESS_VIOLATION_WRITE',
      value: 'Fatal Error: EXCEPTION_ACCESS_VIOLATION_WRITE at 0x0',
      thread_id: 7,
    });
    expect((event.contexts as any).os).toMatchObject({
      name: 'Windows',
      version: '10.0.19045',
      build: 'Service Pack 0',
    });
    expect((event.contexts as any).device).toMatchObject({ arch: 'x86', processor_count: 8 });
    expect((event.debug_meta as any).images).toEqual([
      {
        type: 'pe',
        code_file: 'C:\\app\\app.exe',
        code_id: '5ab380775000',
        debug_id: `${APP_GUID}-2`,
        debug_file: 'C:\\build\\app.pdb',
        image_addr: '0x400000',
        image_size: 0x5000,
        arch: 'x86',
      },
      {
        type: 'pe',
        code_file: 'C:\\Windows\\System32\\ntdll.dll',
        debug_id: `${NTDLL_GUID}-1a`,
        debug_file: 'ntdll.pdb',
        image_addr: '0x405000',
        image_size: 0x2000,
        arch: 'x86',
      },
    ]);
  });

  it('x86 without the .sym: the frame pointer chain and scanning, not the STACK WIN walk', () => {
    const { event } = processMinidump(writeMinidump(WINDOWS_X86), () => null);
    const walked = frames(event);
    expect(walked[0]).toEqual(['0x401010', 'context']);
    expect(walked[1]).toEqual(['0x402020', 'fp']);
    expect(walked.slice(1).map(([, trust]) => trust)).not.toContain('cfi');
  });

  it('x86: a program string that reads unmapped memory: the return address scanned for from %esp, as Breakpad does', () => {
    const broken = readBreakpadUnwind(
      sym(`
      MODULE windows x86 ${APP_GUID.replace(/-/g, '').toUpperCase()}2 app.pdb
      FUNC 1000 100 0 crash
      STACK WIN 4 1000 100 0 0 0 0 0 0 1 $T0 $ebp = $eip $T0 65536 + ^ = $esp $T0 8 + =
    `),
    );
    const info = breakpadUnwindInfo(broken, null);
    const { event } = processMinidump(writeMinidump(WINDOWS_X86), (m) => (m.debugId === APP_GUID ? info : null));
    expect(frames(event)[1]).toEqual(['0x402020', 'scan']);
  });

  // Breakpad's searches around `.raSearchStart` (GetCallerByWindowsFrameInfo): an FPO record
  // whose return address slot holds no code address (MSVC's /LTCG frame sizes can be
  // wrong), one whose stack was aligned (the address 2 words up), and a program that gives
  // %ebp an unreadable value (recovered from the saved-register area).
  it('x86: STACK WIN return addresses scanned for above .raSearchStart, and %ebp recovered', () => {
    const appSym = readBreakpadUnwind(
      sym(`
      MODULE windows x86 ${APP_GUID.replace(/-/g, '').toUpperCase()}2 app.pdb
      FUNC 1000 100 0 crash
      FUNC 1800 100 0 crash_ebp
      FUNC 2000 100 0 caller
      FUNC 3000 100 0 main
      STACK WIN 0 1000 100 0 0 0 0 8 0 0 0
      STACK WIN 4 1800 100 0 0 0 8 0 0 1 $eip .raSearchStart ^ = $esp .raSearchStart 4 + = $ebp 77 =
    `),
    );
    const info = breakpadUnwindInfo(appSym, new NativeIndex(breakpadIndex(appSym)));
    const dump: SynthMinidump = {
      ...WINDOWS_X86,
      threads: [
        {
          // .raSearchStart = %esp + 8 locals holds 0x12345 (no module), the next 3 words nothing:
          // the scan from .raSearchStart + 4 finds the return address 6 words up.
          id: 1,
          regs: { eip: 0x401010, esp: 0x8000, ebp: 0x8080 },
          stack: stack(0x8000, 0x100, 4, [
            [0x8008, 0x12345],
            [0x8020, 0x402010],
            [0x8080, 0x80a0],
            [0x8084, 0x403010],
          ]),
        },
        {
          // The return address 2 words above .raSearchStart: the alignment scan moves it there.
          id: 2,
          regs: { eip: 0x401010, esp: 0xa000, ebp: 0xa080 },
          stack: stack(0xa000, 0x100, 4, [
            [0xa008, 0x12345],
            [0xa010, 0x402010],
            [0xa080, 0xa0a0],
            [0xa084, 0x403010],
          ]),
        },
        {
          // The program sets %ebp to 77: the saved-register area's highest word that points
          // into readable memory (0x9004 → 0x9040) is the caller's %ebp, and its chain goes on.
          id: 3,
          regs: { eip: 0x401810, esp: 0x9000, ebp: 0x9100 },
          stack: stack(0x9000, 0x100, 4, [
            [0x9004, 0x9040],
            [0x9008, 0x402010],
            [0x9040, 0x9060],
            [0x9044, 0x403020],
          ]),
        },
      ],
      exception: { threadId: 1, code: 0xc0000005, params: [1, 0x10] },
    };
    const { event } = processMinidump(writeMinidump(dump), (m) => (m.debugId === APP_GUID ? info : null));
    expect(frames(event, 0)).toEqual([
      ['0x401010', 'context'],
      ['0x402010', 'cfi_scan'],
      ['0x403010', 'fp'],
    ]);
    expect(frames(event, 1)).toEqual([
      ['0x401010', 'context'],
      ['0x402010', 'cfi'],
      ['0x403010', 'fp'],
    ]);
    expect(frames(event, 2)).toEqual([
      ['0x401810', 'context'],
      ['0x402010', 'cfi'],
      ['0x403020', 'fp'],
    ]);
  });

  it('amd64: PDB debug ids (no age appendix for age 0), the frame pointer chain', () => {
    const bytes = writeMinidump({
      arch: 'amd64',
      os: 'windows',
      osVersion: '10.0.22631',
      threads: [
        {
          id: 1,
          regs: { rip: 0x7ff600001010, rsp: 0x50000, rbp: 0x50010 },
          stack: stack(0x50000, 0x80, 8, [
            [0x50010, 0x50040],
            [0x50018, 0x7ff600002020],
            [0x50040, 0x50070],
            [0x50048, 0x7ffa00003030],
          ]),
        },
      ],
      modules: [
        {
          base: 0x7ff600000000,
          size: 0x10000,
          name: 'C:\\app\\game.exe',
          pdb: { guid: APP_GUID, age: 0, file: 'game.pdb' },
        },
        {
          base: 0x7ffa00000000,
          size: 0x10000,
          name: 'C:\\Windows\\System32\\kernel32.dll',
          pdb: { guid: NTDLL_GUID, age: 1, file: 'kernel32.pdb' },
        },
      ],
      exception: { threadId: 1, code: 0xc0000094 },
    });
    const { event } = processMinidump(bytes, () => null);
    expect(frames(event)).toEqual([
      ['0x7ff600001010', 'context'],
      ['0x7ff600002020', 'fp'],
      ['0x7ffa00003030', 'fp'],
    ]);
    expect((event.debug_meta as any).images.map((i: any) => [i.type, i.debug_id, i.arch])).toEqual([
      ['pe', APP_GUID, 'x86_64'],
      ['pe', `${NTDLL_GUID}-1`, 'x86_64'],
    ]);
    expect((event.exception as any).values[0].type).toBe('EXCEPTION_INT_DIVIDE_BY_ZERO');
  });
});

// ---- macOS ---------------------------------------------------------------------------------

const MAC_UUID = 'a1b2c3d4-e5f6-4711-8899-aabbccddeeff';
const LIBSYSTEM_UUID = '0f1e2d3c-4b5a-4968-8776-655443322110';

describe('macOS minidumps', () => {
  it('arm64: UUID debug ids (the PDB70 record Crashpad writes, age 0), the x29 chain, then scanning', () => {
    const bytes = writeMinidump({
      arch: 'arm64',
      os: 'macos',
      osVersion: '14.5.0',
      osBuild: '23F79',
      threads: [
        {
          id: 0x103,
          regs: { pc: 0x100004000, sp: 0x16f000000, x29: 0x16f000010, x30: 0x100004100 },
          stack: stack(0x16f000000, 0x100, 8, [
            [0x16f000010, 0x16f000040],
            [0x16f000018, 0x100005000],
            [0x16f000040, 0x16f000080],
            [0x16f000048, 0x180001000],
          ]),
        },
      ],
      modules: [
        {
          base: 0x100000000,
          size: 0x10000,
          name: '/Applications/App.app/Contents/MacOS/App',
          pdb: { guid: MAC_UUID, age: 0, file: 'App' },
        },
        {
          base: 0x180000000,
          size: 0x10000,
          name: '/usr/lib/system/libsystem_c.dylib',
          pdb: { guid: LIBSYSTEM_UUID, age: 0, file: 'libsystem_c.dylib' },
        },
      ],
      exception: { threadId: 0x103, code: 1, flags: 1, address: 0x8 },
    });
    const dump = readMinidump(bytes);
    expect(dump.system).toMatchObject({ arch: 'arm64', os: 'Mac OS X', osVersion: '14.5.0', osBuild: '23F79' });
    const { event } = processMinidump(bytes, () => null);
    expect(frames(event).slice(0, 3)).toEqual([
      ['0x100004000', 'context'],
      ['0x100005000', 'fp'],
      ['0x180001000', 'fp'],
    ]);
    expect((event.debug_meta as any).images.map((i: any) => [i.type, i.debug_id, i.code_id, i.arch])).toEqual([
      ['macho', MAC_UUID, MAC_UUID.replace(/-/g, ''), 'arm64'],
      ['macho', LIBSYSTEM_UUID, LIBSYSTEM_UUID.replace(/-/g, ''), 'arm64'],
    ]);
    expect((event.contexts as any).os).toMatchObject({ name: 'macOS', version: '14.5.0', build: '23F79' });
    expect((event.exception as any).values[0]).toMatchObject({
      type: 'EXC_BAD_ACCESS',
      value: 'Fatal Error: EXC_BAD_ACCESS / 0x1 at 0x8',
    });
  });

  it('amd64: the Breakpad file’s STACK CFI walks a frameless function the frame pointer would skip', () => {
    // leaf (frameless: rsp + 8 is its CFA) ← run ← start; rbp still holds run's frame.
    const stackBytes = stack(0x7ff7b000, 0x100, 8, [
      [0x7ff7b000, 0x100001200],
      [0x7ff7b010, 0x7ff7b040],
      [0x7ff7b018, 0x100001300],
    ]);
    const desc: SynthMinidump = {
      arch: 'amd64',
      os: 'macos',
      osVersion: '13.6.0',
      threads: [{ id: 1, regs: { rip: 0x100001010, rsp: 0x7ff7b000, rbp: 0x7ff7b010 }, stack: stackBytes }],
      modules: [
        {
          base: 0x100000000,
          size: 0x10000,
          name: '/usr/local/bin/tool',
          pdb: { guid: MAC_UUID, age: 0, file: 'tool' },
        },
      ],
      exception: { threadId: 1, code: 6, flags: 0 },
    };
    const reader = readBreakpadUnwind(
      sym(`
      MODULE mac x86_64 ${MAC_UUID.replace(/-/g, '').toUpperCase()}0 tool
      FUNC 1000 100 0 leaf
      FUNC 1200 100 0 run
      FUNC 1300 100 0 start
      STACK CFI INIT 1000 100 .cfa: $rsp 8 + .ra: .cfa -8 + ^
    `),
    );
    const info = breakpadUnwindInfo(reader, new NativeIndex(breakpadIndex(reader)));
    const { event } = processMinidump(writeMinidump(desc), () => info);
    expect(frames(event)).toEqual([
      ['0x100001010', 'context'],
      ['0x100001200', 'cfi'],
      ['0x100001300', 'fp'],
    ]);
    // Without it, the frame pointer goes straight to run's caller and leaf's caller is lost.
    const { event: bare } = processMinidump(writeMinidump(desc), () => null);
    expect(frames(bare)[1]).toEqual(['0x100001300', 'fp']);
    expect((event.exception as any).values[0].type).toBe('EXC_BREAKPOINT');
  });
});

describe('a Windows minidump through the minidump route', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer('sqlite');
  });
  afterAll(async () => {
    await t?.close();
  });

  it('walked with the uploaded .sym’s STACK WIN records and symbolicated by it', async () => {
    const project = await makeProject(t);
    await uploadOk(t, project, { kind: 'breakpad', files: [{ name: 'app.sym', data: APP_SYM }] });
    const form = new FormData();
    form.append('upload_file_minidump', new Blob([Buffer.from(writeMinidump(WINDOWS_X86))]), 'crash.dmp');
    const res = await fetch(`${t.url}/api/${project.id}/minidump/?sentry_key=${project.dsn_key}`, {
      method: 'POST',
      body: form,
    });
    expect(res.status).toBe(200);
    const detail = await eventDetail(t, project, ((await res.json()) as { id: string }).id);
    const exception = detail.exceptions[0];
    expect(exception.type).toBe('EXCEPTION_ACCESS_VIOLATION_WRITE');
    const walked = [...(exception.stacktrace?.frames ?? exception.frames)]
      .reverse()
      .map((f: any) => [f.instruction_addr, f.trust]);
    expect(walked.slice(0, 3)).toEqual([
      ['0x401010', 'context'],
      ['0x402020', 'cfi'],
      ['0x403030', 'cfi'],
    ]);
    const names = exception.symbolicated_frames.map((f: any) => f.function).filter(Boolean);
    expect(names.slice(-3)).toEqual(['main', 'caller_fpo', 'crash']);
  });

  it('a macOS arm64 dump walked with the uploaded executable’s compact unwind (a frameless function’s caller from x30)', async () => {
    const exe = new Uint8Array(fs.readFileSync(path.resolve('test/fixtures/native/exe/App-arm64')));
    const [slice] = readMachO(exe);
    const project = await makeProject(t);
    await uploadOk(t, project, { kind: 'dsym', files: [{ name: 'App', data: exe }] });
    // 0x5f8 is frameless in its __unwind_info (0x02000000: no stack, return address in x30); x29 points at a record that lies.
    const base = slice.textVmaddr;
    const dump = writeMinidump({
      arch: 'arm64',
      os: 'macos',
      osVersion: '14.5.0',
      threads: [
        {
          id: 1,
          regs: { pc: base + 0x600, sp: 0x16f000000, x29: 0x16f000010, x30: base + 0x5c0 },
          stack: stack(0x16f000000, 0x40, 8, [
            [0x16f000010, 0x16f000030],
            [0x16f000018, base + 0x640],
          ]),
        },
      ],
      modules: [
        {
          base,
          size: 0x10000,
          name: '/Applications/App.app/Contents/MacOS/App',
          pdb: { guid: slice.debugId, age: 0, file: 'App' },
        },
      ],
      exception: { threadId: 1, code: 1, address: 0 },
    });
    const form = new FormData();
    form.append('upload_file_minidump', new Blob([Buffer.from(dump)]), 'crash.dmp');
    const res = await fetch(`${t.url}/api/${project.id}/minidump/?sentry_key=${project.dsn_key}`, {
      method: 'POST',
      body: form,
    });
    expect(res.status).toBe(200);
    const detail = await eventDetail(t, project, ((await res.json()) as { id: string }).id);
    const exception = detail.exceptions[0];
    const walked = [...(exception.stacktrace?.frames ?? exception.frames)]
      .reverse()
      .map((f: any) => [f.instruction_addr, f.trust]);
    expect(walked.slice(0, 2)).toEqual([
      [`0x${(base + 0x600).toString(16)}`, 'context'],
      [`0x${(base + 0x5c0).toString(16)}`, 'cfi'],
    ]);
    // Without the upload the frame pointer answers instead.
    const { event } = processMinidump(dump, () => null);
    expect(frames(event)[1]).toEqual([`0x${(base + 0x640).toString(16)}`, 'fp']);
  });
});
