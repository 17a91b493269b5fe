// The committed .debug_frame fixtures (test/fixtures/debug-frame, rebuilt by `npm run
// fixtures`): shared objects built without unwind tables and llvm-dwarfdump's rows for
// them. `compareDebugFrameWithDwarfdump` reads a build's .debug_frame with our CFI reader
// and checks the rules in force at every address of every row llvm-dwarfdump prints.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { dwarfCfiUnwindInfo } from '../../src/minidump/eh-frame.js';
import { readElf } from '../../src/symbols/native/elf.js';

export const DEBUG_FRAME_FIXTURES = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../fixtures/debug-frame',
);
export const DEBUG_FRAME_NAMES = ['x86_64.so', 'aarch64.so', 'i686.so'] as const;

/** llvm-dwarfdump's register names for ours (`$x29` → W29, `$sp` → WSP on aarch64; upper case elsewhere). */
function dwarfdumpName(ours: string, arch: string): string {
  const name = ours.replace(/^\$/, '');
  if (arch === 'arm64') return name === 'sp' ? 'WSP' : `W${name.slice(1)}`;
  return name.toUpperCase();
}

/** Our rule text → llvm-dwarfdump's row form (`CFA=RSP+16: RBX=[CFA-24], RIP=[CFA-8]`). */
export function asDwarfdumpRow(rules: string, arch: string, raName: string): string {
  const parsed = new Map<string, string[]>();
  let current = '';
  for (const token of rules.split(/\s+/)) {
    if (token.endsWith(':')) parsed.set((current = token.slice(0, -1)), []);
    else parsed.get(current)!.push(token);
  }
  const [reg, offset] = parsed.get('.cfa')!;
  const cfa = `CFA=${dwarfdumpName(reg, arch)}${Number(offset) === 0 ? '' : `${Number(offset) >= 0 ? '+' : ''}${offset}`}`;
  const saved: string[] = [];
  for (const [name, expr] of parsed) {
    if (name === '.cfa') continue;
    const target = name === '.ra' ? raName : dwarfdumpName(name, arch);
    // `.ra: $x30` (the return address still in its register) is no row entry in llvm-dwarfdump.
    if (expr.length === 1 && name === '.ra') continue;
    expect(expr.slice(0, 1).concat(expr.slice(2))).toEqual(['.cfa', '+', '^']);
    saved.push(`${target}=[CFA${Number(expr[1]) >= 0 ? '+' : ''}${expr[1]}]`);
  }
  saved.sort();
  return saved.length > 0 ? `${cfa}: ${saved.join(', ')}` : cfa;
}

/** Compares every row of llvm-dwarfdump's answer, at its first and last address; returns the rows compared. */
export async function compareDebugFrameWithDwarfdump(name: string, root = DEBUG_FRAME_FIXTURES): Promise<number> {
  const bytes = new Uint8Array(fs.readFileSync(path.join(root, name)));
  const elf = await readElf(bytes);
  const section = elf.sections.find((s) => s.name === '.debug_frame')!;
  expect(elf.sections.some((s) => s.name === '.eh_frame')).toBe(false);
  const info = dwarfCfiUnwindInfo(
    bytes.subarray(section.fileOffset, section.fileOffset + section.size),
    section.addr,
    elf.arch,
    elf.is64,
    elf.loadAddress,
    'debug_frame',
  )!;
  const raName = elf.arch === 'x86_64' ? 'RIP' : elf.arch === 'x86' ? 'EIP' : 'W30';
  const text = fs.readFileSync(path.join(root, `${name}.txt`), 'utf8');
  let compared = 0;
  for (const fde of text.split(/\n(?=[0-9a-f]{8} )/)) {
    const range = / FDE cie=[0-9a-f]+ pc=([0-9a-f]+)\.\.\.([0-9a-f]+)/.exec(fde);
    if (!range) continue;
    const end = parseInt(range[2], 16);
    const rows = [...fde.matchAll(/^ {2}0x([0-9a-f]+): (.*)$/gm)].map(
      (m) => [parseInt(m[1], 16), m[2].trim()] as const,
    );
    rows.forEach(([at, row], i) => {
      const last = (i + 1 < rows.length ? rows[i + 1][0] : end) - 1;
      for (const addr of new Set([at, last])) {
        const rules = info.cfiAt(addr - elf.loadAddress);
        expect(rules, `${name} at 0x${addr.toString(16)}`).not.toBeNull();
        expect(asDwarfdumpRow(rules!, elf.arch, raName), `${name} at 0x${addr.toString(16)}: ${rules}`).toBe(
          row
            .split(': ')
            .map((p, j) => (j === 0 ? p : p.split(', ').sort().join(', ')))
            .join(': '),
        );
      }
      compared++;
    });
  }
  return compared;
}

// Crafted CFI bytes.

export const uleb = (n: number): number[] => {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n) b |= 0x80;
    out.push(b);
  } while (n);
  return out;
};
export const sleb = (n: number): number[] => {
  const out: number[] = [];
  for (;;) {
    const b = n & 0x7f;
    n >>= 7;
    if ((n === 0 && !(b & 0x40)) || (n === -1 && b & 0x40)) return [...out, b];
    out.push(b | 0x80);
  }
};
export const u32 = (n: number): number[] => [n & 0xff, (n >>> 8) & 0xff, (n >>> 16) & 0xff, n >>> 24];
export const u64 = (n: number): number[] => [...u32(n % 2 ** 32), ...u32(Math.floor(n / 2 ** 32))];

/** One record: its length, then the body padded to 8 bytes with DW_CFA_nop. */
export function record(body: number[], dwarf64 = false): number[] {
  while ((body.length + (dwarf64 ? 12 : 4)) % 8 !== 0) body.push(0);
  return dwarf64 ? [...u32(0xffffffff), ...u64(body.length), ...body] : [...u32(body.length), ...body];
}
