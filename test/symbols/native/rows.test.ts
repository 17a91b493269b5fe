// Line sequences become the index's rows: laid out in address order they are used as the
// reader left them (no copy); out of order or overlapping they are merged, a later-starting
// sequence winning where two overlap. Either way the index is the same for the same rows.
import { describe, expect, it } from 'vitest';
import { emptyTables, type DwarfSections, type DwarfTables } from '../../../src/symbols/native/dwarf.js';
import { indexFromTables, NativeIndex, type IndexSource } from '../../../src/symbols/native/lookup-index.js';

type Row = [addr: number, file: number, line: number];

/** Tables holding `sequences` in the given order (each ends with its end row, file -1). */
function tables(sequences: Row[][]): DwarfTables {
  const t = emptyTables();
  t.files = ['a.c', 'b.c'];
  for (const seq of sequences) {
    t.seqFirstRow.push(t.rowAddr.length);
    for (const [addr, file, line] of seq) {
      t.rowAddr.push(addr);
      t.rowFile.push(file);
      t.rowLine.push(line);
    }
    t.seqEndRow.push(t.rowAddr.length);
  }
  return t;
}

function index(sequences: Row[][]): Uint8Array {
  const empty = { start: 0, end: 0 };
  const sections: DwarfSections = {
    bytes: new Uint8Array(0),
    info: empty,
    abbrev: empty,
    line: empty,
    str: empty,
    lineStr: empty,
    strOffsets: empty,
    addr: empty,
    ranges: empty,
    rngLists: empty,
  };
  const source: IndexSource = { arch: 'x86_64', debugId: 'id', textVmaddr: 0, sections, symbols: [] };
  return indexFromTables(source, tables(sequences));
}

const first: Row[] = [
  [0x100, 0, 1],
  [0x110, 0, 2],
  [0x120, -1, 0],
];
const second: Row[] = [
  [0x200, 1, 10],
  [0x230, -1, 0],
];

describe('line rows of the index', () => {
  it('are the same whether the sequences come in address order or not', () => {
    const inOrder = Buffer.from(index([first, second]));
    expect(Buffer.from(index([second, first])).equals(inOrder)).toBe(true);
    const idx = new NativeIndex(inOrder);
    expect(idx.lookup(0x114)).toEqual([{ function: '', file: 'a.c', line: 2 }]);
    expect(idx.lookup(0x204)).toEqual([{ function: '', file: 'b.c', line: 10 }]);
    expect(idx.lookup(0x150)).toEqual([]);
  });

  it('let a later-starting sequence win where it overlaps an earlier one, in either order', () => {
    const inside: Row[] = [
      [0x108, 1, 7],
      [0x10c, -1, 0],
    ];
    for (const order of [
      [first, inside],
      [inside, first],
    ]) {
      const idx = new NativeIndex(index(order));
      expect(idx.lookup(0x102)).toEqual([{ function: '', file: 'a.c', line: 1 }]);
      expect(idx.lookup(0x108)).toEqual([{ function: '', file: 'b.c', line: 7 }]);
      // The earlier sequence's rows from where the later starts are dropped.
      expect(idx.lookup(0x114)).toEqual([]);
    }
  });
});
