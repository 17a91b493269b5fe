// Mach-O compact unwind (src/minidump/compact-unwind.ts): the committed arm64 executable
// (test/fixtures/native/exe, linked by ld64.lld) against llvm-objdump --unwind-info, and
// crafted sections for what it lacks: regular and compressed pages with page-local
// encodings, x86_64 RBP frames and frameless functions with saved registers, encodings that
// defer to DWARF, and a walk through a frameless arm64 leaf; and an x86_64 executable built
// here (clang, ld64.lld) whose function's stack is too large for its encoding (STACK_IND:
// the size is the immediate of its `sub`, read from the executable's code).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { bytesSource } from '../../src/bytes.js';
import {
  compactEncodingRules,
  compactUnwindInfo,
  decodePermutation,
  readStackSizeImmediates,
  stackSizeSites,
} from '../../src/minidump/compact-unwind.js';
import type { Minidump } from '../../src/minidump/reader.js';
import { walkThread } from '../../src/minidump/unwind.js';
import { readMachO } from '../../src/symbols/native/macho.js';
import { lacks } from '../helpers/tools.js';
import { contextOf, words } from '../fixtures/minidump/synth.mjs';

const EXE = path.resolve('test/fixtures/native/exe/App-arm64');

function unwindSection(file: string) {
  const bytes = new Uint8Array(fs.readFileSync(file));
  const [slice] = readMachO(bytes);
  const s = slice.sections.find((x) => x.segment === '__TEXT' && x.name === '__unwind_info')!;
  return { slice, bytes: bytes.subarray(s.fileOffset, s.fileOffset + s.size) };
}

/** A little-endian section from 32-bit words and 16-bit halves: [value, bytes]. */
function le(fields: Array<[number, 2 | 4]>): number[] {
  const out: number[] = [];
  for (const [v, n] of fields) for (let i = 0; i < n; i++) out.push((v >>> (8 * i)) & 0xff);
  return out;
}

/** An __unwind_info with `common` encodings and one second-level page per [functionOffset, page bytes]; `end` the sentinel. */
function section(common: number[], pages: Array<[number, number[]]>, end: number): Uint8Array {
  const headerSize = 28;
  const commonAt = headerSize;
  const indexAt = commonAt + common.length * 4;
  let pageAt = indexAt + (pages.length + 1) * 12;
  const index: number[] = [];
  const body: number[] = [];
  for (const [fn, page] of pages) {
    index.push(
      ...le([
        [fn, 4],
        [pageAt, 4],
        [0, 4],
      ]),
    );
    body.push(...page);
    pageAt += page.length;
  }
  index.push(
    ...le([
      [end, 4],
      [0, 4],
      [0, 4],
    ]),
  );
  return new Uint8Array([
    ...le([
      [1, 4],
      [commonAt, 4],
      [common.length, 4],
      [indexAt, 4],
      [0, 4],
      [indexAt, 4],
      [pages.length + 1, 4],
    ]),
    ...le(common.map((c) => [c, 4] as [number, 4])),
    ...index,
    ...body,
  ]);
}

const regularPage = (entries: Array<[number, number]>) => [
  ...le([
    [2, 4],
    [8, 2],
    [entries.length, 2],
  ]),
  ...le(
    entries.flatMap(
      ([f, e]) =>
        [
          [f, 4],
          [e, 4],
        ] as Array<[number, 4]>,
    ),
  ),
];
const compressedPage = (base: number, entries: Array<[number, number]>, local: number[]) => {
  const entriesAt = 12;
  const encodingsAt = entriesAt + entries.length * 4;
  return [
    ...le([
      [3, 4],
      [entriesAt, 2],
      [entries.length, 2],
      [encodingsAt, 2],
      [local.length, 2],
    ]),
    ...le(entries.map(([f, i]) => [((i << 24) | (f - base)) >>> 0, 4] as [number, 4])),
    ...le(local.map((e) => [e, 4] as [number, 4])),
  ];
};

// RBP frame, rbx and r12 saved 2 words below %rbp; frameless with 0x28 bytes of stack and r15, rbx pushed.
const RBP_FRAME = 0x01000000 | (2 << 16) | 1 | (2 << 3);
const permutationOf = (regs: number[]) => {
  // The inverse of decodePermutation: each register's rank among those not yet used.
  const divisors = [[], [1], [5, 1], [20, 4, 1], [60, 12, 3, 1], [120, 24, 6, 2, 1], [120, 24, 6, 2, 1]][regs.length];
  const left = [1, 2, 3, 4, 5, 6];
  let p = 0;
  regs.forEach((r, i) => {
    const rank = left.indexOf(r);
    left.splice(rank, 1);
    if (i < divisors.length) p += rank * divisors[i];
  });
  return p;
};
const FRAMELESS = 0x02000000 | (5 << 16) | (2 << 10) | permutationOf([5, 1]);

describe('Mach-O compact unwind', () => {
  it.skipIf(lacks('clang'))(
    'the committed arm64 executable: every function’s rules are its encoding’s, as llvm-objdump --unwind-info lists them',
    () => {
      const listing = execFileSync('llvm-objdump', ['--unwind-info', EXE]).toString();
      const entries = [
        ...listing.matchAll(/\[\d+\]: function offset=0x([0-9a-f]+), encoding\[\d+\]=0x([0-9a-f]+)/g),
      ].map((m) => [parseInt(m[1], 16), parseInt(m[2], 16)]);
      expect(entries.length).toBeGreaterThanOrEqual(2);
      const { bytes } = unwindSection(EXE);
      const info = compactUnwindInfo(bytes, 'arm64', null)!;
      const sentinel = parseInt(
        /\[\d+\]: function offset=0x([0-9a-f]+), 2nd level page offset=0x00000000/.exec(listing)![1],
        16,
      );
      for (const [i, [fn, encoding]] of entries.entries()) {
        const next = i + 1 < entries.length ? entries[i + 1][0] : sentinel;
        for (const at of fn < sentinel ? [fn, next - 4] : [fn])
          expect(info.cfiAt(at), `0x${at.toString(16)}`).toBe(
            fn < sentinel ? compactEncodingRules(encoding, 'arm64') : null,
          );
      }
      expect(compactEncodingRules(entries[0][1], 'arm64')).toBe(
        '.cfa: $x29 16 + .ra: .cfa -8 + ^ $x29: .cfa -16 + ^ $x19: .cfa -24 + ^ $x20: .cfa -32 + ^',
      );
    },
  );

  it('x86_64 encodings: RBP frames with saved registers, frameless functions with their pushes, DWARF and none', () => {
    expect(compactEncodingRules(RBP_FRAME, 'x86_64')).toBe(
      '.cfa: $rbp 16 + .ra: .cfa -8 + ^ $rbp: .cfa -16 + ^ $rbx: .cfa -32 + ^ $r12: .cfa -24 + ^',
    );
    expect(decodePermutation(2, permutationOf([5, 1]))).toEqual([5, 1]);
    for (const regs of [[1], [6, 5, 4, 3, 2, 1], [2, 4, 6], [3, 1, 6, 2, 5]])
      expect(decodePermutation(regs.length, permutationOf(regs))).toEqual(regs);
    expect(compactEncodingRules(FRAMELESS, 'x86_64')).toBe(
      '.cfa: $rsp 40 + .ra: .cfa -8 + ^ $r15: .cfa -24 + ^ $rbx: .cfa -16 + ^',
    );
    expect(compactEncodingRules(0x04000123, 'x86_64')).toBe('dwarf');
    expect(compactEncodingRules(0x03000000, 'x86_64')).toBeNull(); // stack size in the code, not read
    // STACK_IND: the immediate 0x1000 at offset 3, plus 2 words (rbx pushed, the return address).
    const stackInd = 0x03000000 | (3 << 16) | (2 << 13) | (1 << 10) | permutationOf([1]);
    expect(compactEncodingRules(stackInd, 'x86_64', 0x1000)).toBe(
      '.cfa: $rsp 4112 + .ra: .cfa -8 + ^ $rbx: .cfa -16 + ^',
    );
    expect(compactEncodingRules(stackInd, 'x86', 0x1000)).toBe('.cfa: $esp 4104 + .ra: .cfa -4 + ^ $ebx: .cfa -8 + ^');
    // i386 frames: push %ebp; mov %esp, %ebp; esi saved one word below it.
    expect(compactEncodingRules(0x01000000 | (1 << 16) | 5, 'x86')).toBe(
      '.cfa: $ebp 8 + .ra: .cfa -4 + ^ $ebp: .cfa -8 + ^ $esi: .cfa -12 + ^',
    );
    expect(compactEncodingRules(0, 'x86_64')).toBeNull();
    expect(compactEncodingRules(0x02003000, 'arm64')).toBe('.cfa: $sp 48 + .ra: $x30');
  });

  it('regular and compressed pages, page-local encodings, the sentinel, and DWARF deferral', () => {
    const dwarf = { cfiAt: (rel: number) => (rel === 0x3010 ? '.cfa: $rsp 8 + .ra: .cfa -8 + ^' : null) };
    const bytes = section(
      [RBP_FRAME, FRAMELESS],
      [
        [
          0x1000,
          regularPage([
            [0x1000, RBP_FRAME],
            [0x1100, 0],
            [0x1200, FRAMELESS],
          ]),
        ],
        [
          0x3000,
          compressedPage(
            0x3000,
            [
              [0x3000, 1],
              [0x3010, 2],
              [0x3080, 3],
            ],
            [0x04000040, RBP_FRAME],
          ),
        ],
      ],
      0x4000,
    );
    const info = compactUnwindInfo(bytes, 'x86_64', dwarf)!;
    expect(info.cfiAt(0xfff)).toBeNull();
    expect(info.cfiAt(0x1000)).toBe(compactEncodingRules(RBP_FRAME, 'x86_64'));
    expect(info.cfiAt(0x10ff)).toBe(compactEncodingRules(RBP_FRAME, 'x86_64'));
    expect(info.cfiAt(0x1100)).toBeNull();
    expect(info.cfiAt(0x2fff)).toBe(compactEncodingRules(FRAMELESS, 'x86_64'));
    expect(info.cfiAt(0x3004)).toBe(compactEncodingRules(FRAMELESS, 'x86_64'));
    expect(info.cfiAt(0x3010)).toBe('.cfa: $rsp 8 + .ra: .cfa -8 + ^'); // the page's own encoding 2 says DWARF
    expect(info.cfiAt(0x3011)).toBeNull();
    expect(info.cfiAt(0x3080)).toBe(compactEncodingRules(RBP_FRAME, 'x86_64'));
    expect(info.cfiAt(0x4000)).toBeNull();
    // Lies: a page offset past the section, an encoding index past the page's list.
    expect(compactUnwindInfo(bytes.subarray(0, 60), 'x86_64', null)?.cfiAt(0x1000) ?? null).toBeNull();
    const lying = section([], [[0x1000, compressedPage(0x1000, [[0x1000, 9]], [])]], 0x2000);
    expect(compactUnwindInfo(lying, 'x86_64', null)!.cfiAt(0x1000)).toBeNull();
  });

  it('an arm64 frameless leaf: its caller from x30, then the frame chain', () => {
    const bytes = section(
      [0x02001000, 0x04000000],
      [
        [
          0x1000,
          regularPage([
            [0x1000, 0x02001000],
            [0x1100, 0x04000000],
          ]),
        ],
      ],
      0x2000,
    );
    const info = compactUnwindInfo(bytes, 'arm64', null)!;
    const mem = words([0x1000b0, 0x100001180], 8); // at 0x1000a0: the caller's frame record
    const dump: Minidump = {
      bytes: mem,
      timestamp: 0,
      system: null,
      threads: [],
      exception: null,
      processId: null,
      modules: [
        {
          base: 0x100000000,
          size: 0x10000,
          name: 'App',
          debugId: 'u',
          age: 0,
          codeId: '',
          debugFile: '',
          type: 'macho',
        },
      ],
      memory: [{ start: 0x1000a0, size: 16, rva: 0 }],
    };
    // The leaf at 0x1010 with 16 bytes of stack; it was called from 0x1104, whose frame record is at x29.
    const context = contextOf('arm64', { pc: 0x100001010, sp: 0x100080, x29: 0x1000a0, x30: 0x100001104 });
    const frames = walkThread(dump, 'arm64', context, () => info);
    expect(frames.map((f) => [f.pc.toString(16), f.trust])).toEqual([
      ['100001010', 'context'],
      ['100001104', 'cfi'],
      ['100001180', 'cfi'],
    ]);
  });

  it('STACK_IND pages: the sites are every such function start plus its offset, and only they take the immediate', () => {
    const ind = 0x03000000 | (3 << 16) | (1 << 13);
    const bytes = section(
      [ind, FRAMELESS],
      [
        [
          0x1000,
          compressedPage(
            0x1000,
            [
              [0x1000, 0],
              [0x1040, 1],
              [0x1080, 0],
            ],
            [],
          ),
        ],
      ],
      0x2000,
    );
    expect(stackSizeSites(bytes, 'x86_64').sort()).toEqual([0x1003, 0x1083]);
    expect(stackSizeSites(bytes, 'arm64')).toEqual([]);
    const info = compactUnwindInfo(bytes, 'x86_64', null, new Map([[0x1003, 0x2000]]))!;
    expect(info.cfiAt(0x1010)).toBe('.cfa: $rsp 8200 + .ra: .cfa -8 + ^');
    expect(info.cfiAt(0x1050)).toBe(compactEncodingRules(FRAMELESS, 'x86_64'));
    expect(info.cfiAt(0x1090)).toBeNull(); // its immediate was not read
    // A lying page (entries past the section) gives no sites and no exception.
    expect(stackSizeSites(bytes.subarray(0, bytes.byteLength - 8), 'x86_64').length).toBeLessThanOrEqual(2);
  });

  it.skipIf(lacks('clang'))(
    'an x86_64 executable with an 8 KB frame: its stack size read from its `sub`, and the walk goes through it',
    () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-stack-ind-'));
      try {
        fs.writeFileSync(
          path.join(dir, 'big.c'),
          [
            'void use(volatile char *p) { p[0] = 1; }',
            '__attribute__((noinline)) int bigframe(int n) { volatile char buf[8000]; use(buf); return buf[n]; }',
            '__attribute__((noinline)) int small(int n) { return bigframe(n) + 1; }',
            'int main(void) { return small(3) + 2; }',
          ].join('\n'),
        );
        const cc = ['--target=x86_64-apple-macos11', '-O1', '-fomit-frame-pointer', '-fno-stack-protector'];
        execFileSync('clang', [...cc, '-c', 'big.c', '-o', 'big.o'], { cwd: dir });
        const ld = fs.existsSync('/usr/bin/ld64.lld') ? 'ld64.lld' : 'ld64.lld-14';
        execFileSync(
          ld,
          ['-arch', 'x86_64', '-platform_version', 'macos', '11.0', '11.0', '-e', '_main', '-o', 'big', 'big.o'],
          {
            cwd: dir,
          },
        );
        const exe = path.join(dir, 'big');
        const disasm = execFileSync('llvm-objdump', ['-d', exe]).toString();
        const fn = (name: string) => parseInt(new RegExp(`^([0-9a-f]+) <_${name}>:`, 'm').exec(disasm)![1], 16);
        const sub = /^\s*([0-9a-f]+):\s+48 81 ec [0-9a-f ]+\ssubq\s+\$(\d+), %rsp/m.exec(disasm)!;
        const immediate = Number(sub[2]);
        expect(immediate).toBeGreaterThan(2040); // too large for the encoding
        const listing = execFileSync('llvm-objdump', ['--unwind-info', exe]).toString();
        const vmaddr = 0x100000000;
        const encodings = new Map(
          [...listing.matchAll(/function offset=0x([0-9a-f]+), encoding\[\d+\]=0x([0-9a-f]+)/g)].map((m) => [
            parseInt(m[1], 16),
            parseInt(m[2], 16),
          ]),
        );
        const bigStart = fn('bigframe') - vmaddr;
        expect(encodings.get(bigStart)! & 0x0f000000).toBe(0x03000000);

        const bytes = new Uint8Array(fs.readFileSync(exe));
        const [slice] = readMachO(bytes);
        const u = slice.sections.find((x) => x.segment === '__TEXT' && x.name === '__unwind_info')!;
        const unwindBytes = bytes.subarray(u.fileOffset, u.fileOffset + u.size);
        return readStackSizeImmediates(bytesSource(bytes), slice, unwindBytes).then((immediates) => {
          expect(immediates.get(parseInt(sub[1], 16) + 3 - vmaddr)).toBe(immediate);
          const info = compactUnwindInfo(unwindBytes, 'x86_64', null, immediates)!;
          expect(info.cfiAt(bigStart + 7)).toBe(`.cfa: $rsp ${immediate + 8} + .ra: .cfa -8 + ^`);
          // bigframe's frame (the immediate), then small's return address two words up (its push and its call).
          const retSmall = /callq\s+0x[0-9a-f]+ <_bigframe>\n\s*([0-9a-f]+):/.exec(disasm)![1];
          const retMain = /callq\s+0x[0-9a-f]+ <_small>\n\s*([0-9a-f]+):/.exec(disasm)![1];
          const sp = 0x7ff000000;
          const stack = new Uint8Array(immediate + 24);
          const view = new DataView(stack.buffer);
          view.setBigUint64(immediate, BigInt(`0x${retSmall}`), true);
          view.setBigUint64(immediate + 16, BigInt(`0x${retMain}`), true);
          const dump: Minidump = {
            bytes: stack,
            timestamp: 0,
            system: null,
            threads: [],
            exception: null,
            processId: null,
            modules: [
              {
                base: vmaddr,
                size: 0x10000,
                name: 'big',
                debugId: 'u',
                age: 0,
                codeId: '',
                debugFile: '',
                type: 'macho',
              },
            ],
            memory: [{ start: sp, size: stack.byteLength, rva: 0 }],
          };
          const context = contextOf('amd64', { rip: fn('bigframe') + 7, rsp: sp, rbp: 0 });
          const frames = walkThread(dump, 'amd64', context, () => info);
          expect(frames.map((f) => [f.pc.toString(16), f.trust])).toEqual([
            [(fn('bigframe') + 7).toString(16), 'context'],
            [retSmall, 'cfi'],
            [retMain, 'cfi'],
          ]);
          // Without the immediate, no rules: the walk cannot reach past the 7880 bytes.
          const without = walkThread(dump, 'amd64', context, () => compactUnwindInfo(unwindBytes, 'x86_64', null));
          expect(without.length).toBe(1);
        });
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
