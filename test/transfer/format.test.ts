// The file format's value conversions, each way: what a column holds and what its line
// field says must survive a round trip exactly, and a wrong field must be refused.
import { describe, expect, it } from 'vitest';
import { type ColumnKind, fieldSchema, toField } from '../../src/transfer/format.js';
import { encodeLines } from '../../src/transfer/export.js';
import { readLines } from '../../src/transfer/import.js';

const roundTrips: [ColumnKind, unknown][] = [
  ['int', 9_007_199_254_740_991],
  ['number', 0.125],
  ['text', 'caf\u00e9 \u{1F600}'],
  ['text?', null],
  ['time', Date.UTC(2026, 10, 25, 18, 30, 49, 745)],
  ['time?', null],
  ['bool', 1],
  ['bool', 0],
  ['json', '{"a":[1,"x",null]}'],
  ['json?', null],
  ['bytes', new Uint8Array([0, 1, 2, 253, 254, 255, 0x0a, 0x22])],
];

describe('column values in export lines', () => {
  it.each(roundTrips)('%s: %j comes back as it was', (kind, value) => {
    const field = JSON.parse(JSON.stringify(toField(kind, value)));
    const back = fieldSchema(kind).parse(field);
    expect(back).toEqual(value);
  });

  it('writes times as RFC 3339 with milliseconds, blobs as base64, 0/1 as booleans', () => {
    expect(toField('time', Date.UTC(2026, 0, 2, 3, 4, 5, 6))).toBe('2026-01-02T03:04:05.006Z');
    expect(toField('bytes', new Uint8Array([104, 105]))).toBe('aGk=');
    expect(toField('bool', 1)).toBe(true);
  });

  it.each<[ColumnKind, unknown]>([
    ['int', 1.5],
    ['int', 2 ** 53],
    ['int', '3'],
    ['time', '2026-11-25'],
    ['time', 'yesterday'],
    ['time', 1_795_000_000_000],
    ['bool', 1],
    ['bytes', 'not base64!'],
    ['text', null],
    ['json', undefined],
  ])('refuses %s %j', (kind, field) => {
    expect(fieldSchema(kind).safeParse(field).success).toBe(false);
  });
});

describe('reading an import stream as lines', () => {
  const text =
    '{"type":"meta"}\r\n{"a":"caf\u00e9 \u{1F600} \u4e2d"}\n\n{"b":"\u00fc"}\n{"last":"no newline \u{1F600}"}';
  const expected = text.split('\n').map((line, i) => ({ number: i + 1, text: line }));
  const collect = async (chunks: (Uint8Array | string)[]) => {
    const out = [];
    for await (const line of readLines(
      (async function* () {
        yield* chunks;
      })(),
    ))
      out.push(line);
    return out;
  };

  it('gives the same numbered lines for bytes cut at every offset, multi-byte characters included', async () => {
    const bytes = new TextEncoder().encode(text);
    for (let cut = 0; cut <= bytes.length; cut++) {
      expect(await collect([bytes.slice(0, cut), bytes.slice(cut)]), `cut at byte ${cut}`).toEqual(expected);
    }
    const oneByOne = Array.from(bytes, (b) => new Uint8Array([b]));
    expect(await collect(oneByOne)).toEqual(expected);
    expect(await collect([text])).toEqual(expected);
    expect(await collect([text.slice(0, 20), bytes.slice(new TextEncoder().encode(text.slice(0, 20)).length)])).toEqual(
      expected,
    );
  });

  it('does not see a chunk change after it was read (a source may reuse its buffer)', async () => {
    const reused = new Uint8Array(8);
    const source = async function* () {
      for (const part of ['{"x":', '1}\n{"y"', ':2}\n']) {
        reused.fill(32);
        const b = new TextEncoder().encode(part);
        reused.set(b);
        yield reused.subarray(0, b.length);
      }
    };
    const out = [];
    for await (const line of readLines(source())) out.push(line);
    expect(out).toEqual([
      { number: 1, text: '{"x":1}' },
      { number: 2, text: '{"y":2}' },
    ]);
  });
});

describe('encodeLines', () => {
  const decode = (bytes: Uint8Array) => new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  const expected = (lines: unknown[]) => lines.map((l) => JSON.stringify(l) + '\n').join('');

  it('writes each line as JSON.stringify does, one per line, whatever the characters', () => {
    const lines = [
      { type: 'event', payload: '{"message":"tab\\there","quote":"\\""}\n\u0000\u001f' },
      { type: 'event', payload: 'caf\u00e9 \u{1F600} \u6f22\u5b57 \u2028' },
      {},
      'ascii',
    ];
    expect(decode(encodeLines(lines))).toBe(expected(lines));
  });

  it('grows its buffer for lines that take three or four bytes a character', () => {
    // The first guess of the size counts a byte a character: these lines need 3-4 times that.
    const lines = [{ cjk: '\u6f22'.repeat(10_000) }, { emoji: '\u{1F600}'.repeat(5_000) }, { ascii: 'x'.repeat(100) }];
    expect(decode(encodeLines(lines))).toBe(expected(lines));
  });

  it('ends with the newline when the line fills the first buffer exactly', () => {
    // 71 characters of JSON, 140 bytes: the first buffer's size (72 + 4 + 64).
    const lines = ['\u00e9'.repeat(69)];
    const bytes = encodeLines(lines);
    expect(bytes.length).toBe(141);
    expect(decode(bytes)).toBe(expected(lines));
  });

  it('writes nothing for no lines', () => {
    expect(encodeLines([]).length).toBe(0);
  });
});
