// Hostile and damaged source maps, and the lookup index against @jridgewell/trace-mapping:
// generated maps (segments of 1, 4 and 5 fields, lines out of order, repeated columns,
// sections), the same maps mutated byte by byte or cut short, and random bytes. The
// upload scan ends every one with a clean SymbolInputError or accepts it; what it accepts
// the load accepts too, whatever the chunking; and on every map both accept, every
// lookup answers as trace-mapping's does. Fixed seed and bounded runs (fuzz-config.ts).
import { encode, type SourceMapSegment } from '@jridgewell/sourcemap-codec';
import { AnyMap, TraceMap, traceSegment } from '@jridgewell/trace-mapping';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SymbolInputError } from '../../src/symbols/kinds.js';
import { LoadedSourceMap, parseSourceMap } from '../../src/symbols/sourcemap.js';
import { CHECKPOINT_BYTES, indexMappings, lookupSegment } from '../../src/symbols/sourcemap-index.js';
import { SourceMapScanner } from '../../src/symbols/sourcemap-scan.js';
import { FUZZ } from '../helpers/fuzz-config.js';

const utf8 = (s: string) => new TextEncoder().encode(s);

/** Decoded lines: columns in a small range so repeats and disorder are common. */
function linesArb(sources: number, names: number, maxLines: number, maxSegs: number) {
  const seg = fc.oneof(
    fc.tuple(fc.nat(40)).map(([c]) => [c] as SourceMapSegment),
    fc.tuple(fc.nat(40), fc.nat(sources - 1), fc.nat(30), fc.nat(30)).map((t) => t as SourceMapSegment),
    ...(names > 0
      ? [
          fc
            .tuple(fc.nat(40), fc.nat(sources - 1), fc.nat(30), fc.nat(30), fc.nat(names - 1))
            .map((t) => t as SourceMapSegment),
        ]
      : []),
  );
  const line = fc.oneof(
    fc.array(seg, { maxLength: maxSegs }),
    // In column order, as bundlers write them.
    fc.array(seg, { maxLength: maxSegs }).map((l) => [...l].sort((a, b) => a[0] - b[0])),
  );
  return fc.array(line, { minLength: 1, maxLength: maxLines });
}

const mapArb = fc
  .record({ sources: fc.integer({ min: 1, max: 4 }), names: fc.integer({ min: 0, max: 3 }), big: fc.boolean() })
  .chain(({ sources, names, big }) =>
    linesArb(sources, names, big ? 12 : 5, big ? 400 : 8).map((lines) => ({
      version: 3 as const,
      file: 'app.min.js',
      sources: Array.from({ length: sources }, (_, i) => `src/s${i}.js`),
      sourcesContent: Array.from({ length: sources }, (_, i) => `line one of ${i}\r\nline two\rline three\n\nfive`),
      names: Array.from({ length: names }, (_, i) => `n${i}`),
      mappings: encode(lines),
    })),
  );

/** Scans `bytes` in the given split; the facts, or the SymbolInputError. Anything else fails the test. */
function scan(bytes: Uint8Array, cuts: number[] = []): { ok: true } | { ok: false; error: SymbolInputError } {
  const scanner = new SourceMapScanner('x.map');
  try {
    let at = 0;
    for (const cut of [...cuts.filter((c) => c > 0 && c < bytes.length)].sort((a, b) => a - b)) {
      scanner.push(bytes.subarray(at, cut));
      at = cut;
    }
    scanner.push(bytes.subarray(at));
    scanner.finish();
    return { ok: true };
  } catch (err) {
    if (!(err instanceof SymbolInputError)) throw err;
    return { ok: false, error: err };
  }
}

/** Every lookup of lines 0..lines and columns 0..45 through the index agrees with trace-mapping. */
function agrees(map: Record<string, unknown>, trace: TraceMap): void {
  const loaded = new LoadedSourceMap(parseSourceMap(utf8(JSON.stringify(map)), 'x.map'));
  const lines = (map.mappings as string | undefined)?.split(';').length ?? 40;
  for (let line = 0; line <= lines; line++) {
    for (let col = 0; col <= 45; col++) {
      const seg = traceSegment(trace, line, col);
      const want =
        !seg || seg.length === 1
          ? null
          : {
              source: trace.resolvedSources[seg[1]],
              line: seg[2] + 1,
              column: seg[3] + 1,
              name: seg.length === 5 ? trace.names[seg[4]] : null,
            };
      const got = loaded.lookup(line + 1, col + 1);
      const gotView = got && {
        source: loaded.sourcePath(got.source),
        line: got.line,
        column: got.column,
        name: got.name,
      };
      expect(gotView, `line ${line} column ${col}`).toEqual(want);
    }
  }
}

describe('source map scan and index, fuzzed', () => {
  it('answers every lookup as trace-mapping does, on maps of any segment order', () => {
    fc.assert(
      fc.property(mapArb, fc.array(fc.nat(), { maxLength: 8 }), (map, cuts) => {
        const bytes = utf8(JSON.stringify(map));
        expect(scan(bytes)).toEqual({ ok: true });
        // Pieces cut anywhere, inside values of several digits too.
        expect(
          scan(
            bytes,
            cuts.map((c) => c % bytes.length),
          ),
        ).toEqual({ ok: true });
        agrees(map, new TraceMap(map));
      }),
      { ...FUZZ, numRuns: 150 },
    );
  });

  it('finds segments across checkpoints exactly as a whole decode does', () => {
    // Long lines and many lines, so lookups start from checkpoints well inside the mappings.
    fc.assert(
      fc.property(linesArb(3, 2, 30, 300), (lines) => {
        const mappings = encode(lines);
        const { index } = indexMappings(utf8(mappings), 'x.map');
        if (mappings.length > 4 * CHECKPOINT_BYTES) expect(index.checkpoints.length).toBeGreaterThan(0);
        const trace = new TraceMap({ version: 3, sources: ['a', 'b', 'c'], names: ['x', 'y'], mappings });
        for (let line = 0; line < lines.length; line++) {
          for (let col = 0; col <= 42; col += 3) {
            const want = traceSegment(trace, line, col);
            const got = lookupSegment(index, line, col);
            const gotSeg = got && [got.col, got.src, got.line, got.column, got.name].slice(0, got.fields);
            expect(gotSeg, `line ${line} column ${col}`).toEqual(want);
          }
        }
      }),
      { ...FUZZ, numRuns: 60 },
    );
  });

  it('agrees with trace-mapping on indexed maps whose sections follow one another', () => {
    const sectioned = fc.array(mapArb, { minLength: 1, maxLength: 4 }).chain((maps) =>
      fc.array(fc.nat(3), { minLength: maps.length, maxLength: maps.length }).map((gaps) => {
        let line = 0;
        const sections = maps.map((map, i) => {
          const offset = { line, column: i === 0 ? 0 : gaps[i] * 7 };
          line += map.mappings.split(';').length + gaps[i];
          return { offset, map };
        });
        return { version: 3, sections };
      }),
    );
    fc.assert(
      fc.property(sectioned, (map) => {
        expect(scan(utf8(JSON.stringify(map)))).toEqual({ ok: true });
        agrees({ ...map, mappings: undefined }, new AnyMap(map as never) as TraceMap);
      }),
      { ...FUZZ, numRuns: 40 },
    );
  });

  it('ends damaged maps as a clean rejection, the same however the bytes arrive, and loads what it accepts', () => {
    const damaged = fc.tuple(
      mapArb,
      fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 4 }),
      fc.option(fc.nat()),
      fc.array(fc.nat(), { maxLength: 5 }),
    );
    fc.assert(
      fc.property(damaged, ([map, edits, cut, cuts]) => {
        let bytes = utf8(JSON.stringify(map));
        for (const [at, value] of edits) bytes[at % bytes.length] = value;
        if (cut !== null) bytes = bytes.subarray(0, cut % (bytes.length + 1));
        const whole = scan(bytes);
        const split = scan(
          bytes,
          cuts.map((c) => c % (bytes.length + 1)),
        );
        expect(split.ok).toBe(whole.ok);
        if (!whole.ok) return;
        // Accepted: the load takes it and agrees with trace-mapping.
        const json = JSON.parse(new TextDecoder().decode(bytes));
        agrees(json, new TraceMap(json));
      }),
      FUZZ,
    );
  });

  it('ends random bytes and hostile JSON as a clean rejection', () => {
    const hostile = fc.oneof(
      fc.uint8Array({ maxLength: 300 }),
      fc.string({ maxLength: 200 }).map(utf8),
      fc.json({ maxDepth: 4 }).map(utf8),
      fc
        .constantFrom(
          '{"version":3,"sources":[],"mappings":"B"}',
          '{"version":3,"sources":["a"],"mappings":"AAAAA,,AAAA"}',
          '{"version":3,"sources":["a"],"mappings":"AA"}',
          '{"version":3,"sources":["a"],"mappings":"AAAAAA"}',
          '{"version":3,"sources":["a"],"mappings":"gggggggggA"}',
          '{"version":3,"sources":["a"],"mappings":"AAAA\\u003bAAAA"}',
          '{"version":3,"sources":["a"],"mappings":"AAAA","mappings":"AAAA"}',
          '{"version":3,"sections":[{"offset":{"line":1,"column":0},"map":{"version":3,"sources":[],"mappings":""}},{"offset":{"line":0,"column":0},"map":{"version":3,"sources":[],"mappings":""}}]}',
          '{"version":3,"sections":[{"offset":{"line":0,"column":0},"map":{"version":3,"sections":[]}}]}',
          '{"version":3,"sections":[{"offset":{"line":0,"column":0},"url":"x.map"}]}',
          `${'['.repeat(100)}${']'.repeat(100)}`,
          '{"version":3,"sources":["a"],"mappings":"AAAA"} x',
        )
        .map(utf8),
    );
    fc.assert(
      fc.property(hostile, (bytes) => {
        const result = scan(bytes);
        if (!result.ok) return;
        const json = JSON.parse(new TextDecoder().decode(bytes).replace(/^\uFEFF/, ''));
        expect(() => parseSourceMap(bytes, 'x.map')).not.toThrow();
        if (!Array.isArray(json.sections)) agrees(json, new TraceMap(json));
      }),
      FUZZ,
    );
  });

  it('gives the context lines a split of the source at \\r\\n, \\r and \\n gives, cut at 300 characters', () => {
    const text = fc
      .array(fc.oneof(fc.constantFrom('\n', '\r', '\r\n', 'é', '😀', 'x'.repeat(310)), fc.string({ maxLength: 8 })), {
        maxLength: 40,
      })
      .map((p) => p.join(''));
    fc.assert(
      fc.property(text, (content) => {
        const loaded = new LoadedSourceMap(
          parseSourceMap(
            utf8(JSON.stringify({ version: 3, sources: ['a.js'], sourcesContent: [content], mappings: 'AAAA' })),
            'x.map',
          ),
        );
        const lines = content.split(/\r\n|\r|\n/).map((l) => l.slice(0, 300));
        for (let line = 0; line <= lines.length + 1; line++) {
          const want =
            line < 1 || line > lines.length
              ? null
              : {
                  pre_context: lines.slice(Math.max(0, line - 6), line - 1),
                  context_line: lines[line - 1],
                  post_context: lines.slice(line, line + 5),
                };
          expect(loaded.context(0, line)).toEqual(want);
        }
      }),
      FUZZ,
    );
  });

  it('scans a map cut in two anywhere, or pushed a byte at a time, as it scans it whole', () => {
    // Values of up to six digits, so pieces end inside them.
    const lines = [
      [
        [0, 0, 0, 0],
        [1_000_000, 1, 70_000, 900_000, 1],
        [1_000_001, 0, 5, 3],
      ],
      [],
      [[7, 1, 2, 3, 0]],
    ] as SourceMapSegment[][];
    const bytes = utf8(
      JSON.stringify({
        version: 3,
        sources: ['a', 'b'],
        names: ['x', 'y'],
        sourcesContent: ['a\\nb', null],
        mappings: encode(lines),
      }),
    );
    expect(
      scan(
        bytes,
        Array.from({ length: bytes.length }, (_, i) => i),
      ),
    ).toEqual({ ok: true });
    for (let cut = 1; cut < bytes.length; cut++) expect(scan(bytes, [cut]), `cut at ${cut}`).toEqual({ ok: true });
  });

  it('counts segments and lines against the limits while they stream', () => {
    const scanner = new SourceMapScanner('big.map', { maxSegments: 1000, maxLines: 100, maxSections: 2 });
    scanner.push(utf8('{"version":3,"sources":["a"],"mappings":"AAAA'));
    expect(() => scanner.push(utf8(',CAAC'.repeat(1001)))).toThrow(/more than 1000 mappings/);
    const lines = new SourceMapScanner('big.map', { maxSegments: 1000, maxLines: 100, maxSections: 2 });
    lines.push(utf8('{"version":3,"sources":["a"],"mappings":"'));
    expect(() => lines.push(utf8(';'.repeat(100)))).toThrow(/more than 100 generated lines/);
  });
});
