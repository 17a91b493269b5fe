// The pure rules that pick a frame's image and read SDK addresses (no files involved).
import { describe, expect, it } from 'vitest';
import { imageForFrame, machoImages, normaliseDebugId, parseAddress } from '../../../src/symbols/native/frames.js';

describe('native frame rules', () => {
  it('reads addresses as SDKs send them', () => {
    expect(parseAddress('0x0000000100a3c1f4')).toBe(0x100a3c1f4);
    expect(parseAddress('0X1F')).toBe(31);
    expect(parseAddress('4305698292')).toBe(4305698292);
    expect(parseAddress(4096)).toBe(4096);
    for (const bad of ['', '0x', 'zz', '0xfffffffffffffffff', '-1', -5, 1.5, null, undefined, {}])
      expect(parseAddress(bad)).toBeNull();
  });

  it('normalises debug ids: any case, with or without dashes, an age appendix dropped', () => {
    const id = '4c4c44ae-5555-3144-a11d-b7079f013572';
    expect(normaliseDebugId('4C4C44AE-5555-3144-A11D-B7079F013572')).toBe(id);
    expect(normaliseDebugId('4c4c44ae55553144a11db7079f013572')).toBe(id);
    expect(normaliseDebugId('4C4C44AE-5555-3144-A11D-B7079F013572-0')).toBe(id);
    expect(normaliseDebugId('not-a-uuid')).toBeNull();
    expect(normaliseDebugId(42)).toBeNull();
  });

  it('keeps only macho images with a debug id (or the older uuid) and an address', () => {
    const images = machoImages([
      { type: 'macho', debug_id: 'AAAAAAAA-0000-0000-0000-000000000001', image_addr: '0x100000000', image_size: 4096 },
      { type: 'macho', uuid: 'aaaaaaaa-0000-0000-0000-000000000002', image_addr: '0x200000000' },
      { type: 'elf', debug_id: 'aaaaaaaa-0000-0000-0000-000000000003', image_addr: '0x300000000' },
      { type: 'macho', debug_id: 'aaaaaaaa-0000-0000-0000-000000000004' },
      'junk',
      null,
    ]);
    expect(images.map((i) => [i.debugId, i.imageAddr, i.imageSize])).toEqual([
      ['aaaaaaaa-0000-0000-0000-000000000001', 0x100000000, 4096],
      ['aaaaaaaa-0000-0000-0000-000000000002', 0x200000000, null],
    ]);
  });

  it("finds a frame's image by its own image_addr, else by the address range", () => {
    const images = machoImages([
      {
        type: 'macho',
        debug_id: 'aaaaaaaa-0000-0000-0000-000000000001',
        image_addr: '0x100000000',
        image_size: 0x1000,
      },
      { type: 'macho', debug_id: 'aaaaaaaa-0000-0000-0000-000000000002', image_addr: '0x180000000' },
    ]);
    const id = (frame: Record<string, unknown>) => imageForFrame(frame, images)?.debugId.slice(-1) ?? null;
    expect(id({ instruction_addr: '0x100000010' })).toBe('1');
    expect(id({ instruction_addr: '0x100001000' })).toBeNull(); // past the first image's size, before the second
    expect(id({ instruction_addr: '0x190000000' })).toBe('2'); // no size: the nearest image below
    expect(id({ instruction_addr: '0x0ffffffff' })).toBeNull();
    expect(id({ instruction_addr: '0x190000000', image_addr: '0x100000000' })).toBe('1');
    expect(id({ function: 'no address' })).toBeNull();
  });
});
