// .debug_frame through the one DWARF CFI reader (src/minidump/eh-frame.ts) against
// llvm-dwarfdump's rows for the committed builds without unwind tables
// (test/fixtures/debug-frame; test/packaging/fixtures.test.ts rebuilds them with this
// machine's clang), and the two sections' differences on crafted bytes.
import { describe, expect, it } from 'vitest';
import { dwarfCfiUnwindInfo } from '../../src/minidump/eh-frame.js';
import { compareDebugFrameWithDwarfdump, DEBUG_FRAME_NAMES, record, sleb, u32, u64 } from './cfi-fixture.js';

describe('.debug_frame', () => {
  for (const name of DEBUG_FRAME_NAMES) {
    it(`${name}: the rules at every row of llvm-dwarfdump --debug-frame`, async () => {
      expect(await compareDebugFrameWithDwarfdump(name)).toBeGreaterThan(10);
    });
  }

  it('a version 4 CIE (address size in the CIE, id all ones) and an FDE naming it by section offset', () => {
    // CIE: id 0xffffffff, version 4, "", address size 8, segment size 0, code 1, data -8, RA 16; def_cfa rsp+8, offset rip.
    const cie = record([...u32(0xffffffff), 4, 0, 8, 0, 1, ...sleb(-8), 16, 0x0c, 7, 8, 0x80 | 16, 1]);
    // Padding a .debug_frame may have between records.
    const padding = u32(0);
    // FDE at 0x1000..0x1010: advance 1, def_cfa_offset 16, offset rbp at cfa-16.
    const fde = record([...u32(0), ...u64(0x1000), ...u64(0x10), 0x41, 0x0e, 16, 0x80 | 6, 2]);
    const bytes = new Uint8Array([...cie, ...padding, ...fde]);
    const info = dwarfCfiUnwindInfo(bytes, 0, 'x86_64', true, 0, 'debug_frame')!;
    expect(info.cfiAt(0x1000)).toBe('.cfa: $rsp 8 + .ra: .cfa -8 + ^');
    expect(info.cfiAt(0x100f)).toBe('.cfa: $rsp 16 + .ra: .cfa -8 + ^ $rbp: .cfa -16 + ^');
    expect(info.cfiAt(0x1010)).toBeNull();
    // The same bytes read as .eh_frame: a CIE id of all ones is an FDE there, pointing nowhere.
    expect(dwarfCfiUnwindInfo(bytes, 0, 'x86_64', true, 0, 'eh_frame')!.cfiAt(0x1000)).toBeNull();
  });

  it('64-bit DWARF records (length escape, 8-byte CIE id and pointer)', () => {
    const cie = record([...u64(2 ** 64 - 1).map(() => 0xff), 1, 0, 1, ...sleb(-8), 16, 0x0c, 7, 8, 0x80 | 16, 1], true);
    const fde = record([...u64(0), ...u64(0x2000), ...u64(0x20), 0x44, 0x0e, 32], true);
    const info = dwarfCfiUnwindInfo(new Uint8Array([...cie, ...fde]), 0, 'x86_64', true, 0, 'debug_frame')!;
    expect(info.cfiAt(0x2003)).toBe('.cfa: $rsp 8 + .ra: .cfa -8 + ^');
    expect(info.cfiAt(0x2004)).toBe('.cfa: $rsp 32 + .ra: .cfa -8 + ^');
  });

  it('a 32-bit file: 4-byte addresses from the CIE', () => {
    const cie = record([...u32(0xffffffff), 3, 0, 1, ...sleb(-4), 8, 0x0c, 4, 4, 0x80 | 8, 1]);
    const fde = record([...u32(0), ...u32(0x3000), ...u32(0x8), 0x41, 0x0e, 8, 0x80 | 5, 2]);
    const info = dwarfCfiUnwindInfo(new Uint8Array([...cie, ...fde]), 0, 'x86', false, 0, 'debug_frame')!;
    expect(info.cfiAt(0x3001)).toBe('.cfa: $esp 8 + .ra: .cfa -4 + ^ $ebp: .cfa -8 + ^');
  });
});
