// The source-map side without a server: indexed maps (`sections`), maps without
// `sourcesContent`, positions past the end, the served-file ranking, and the checks an
// upload goes through.
import { describe, expect, it } from 'vitest';
import { SymbolInputError } from '../../src/symbols/kinds.js';
import { displayPath, inspectSourceMap, LoadedSourceMap, mapJsFrame, servesRank } from '../../src/symbols/sourcemap.js';

const encode = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));

const INDEXED = {
  version: 3,
  file: 'bundle.min.js',
  sections: [
    {
      offset: { line: 0, column: 0 },
      map: {
        version: 3,
        sources: ['src/a.js'],
        sourcesContent: ['function foo() {\n  throw new Error("a");\n}'],
        names: ['foo'],
        mappings: 'AACEA',
      },
    },
    {
      offset: { line: 1, column: 0 },
      map: { version: 3, sources: ['webpack://app/./src/b.js'], names: [], mappings: 'AAAA;AACA' },
    },
  ],
};

describe('source maps', () => {
  it('maps through an indexed map, with context where sourcesContent has it', () => {
    const map = LoadedSourceMap.fromBytes(encode(INDEXED), 'bundle.min.js.map');
    const a = mapJsFrame(map, { abs_path: 'https://x/bundle.min.js', function: 'o', lineno: 1, colno: 1 })!;
    expect(a).toMatchObject({
      abs_path: 'src/a.js',
      filename: 'src/a.js',
      lineno: 2,
      colno: 3,
      context_line: '  throw new Error("a");',
      pre_context: ['function foo() {'],
      post_context: ['}'],
    });
    const b = mapJsFrame(map, { abs_path: 'https://x/bundle.min.js', function: 'o', lineno: 3, colno: 5 })!;
    // Without sources content no definition is found: the SDK's name stays.
    expect(b).toMatchObject({ abs_path: 'webpack://app/src/b.js', filename: 'src/b.js', lineno: 2, function: 'o' });
    expect(b.context_line).toBeUndefined();
    expect(mapJsFrame(map, { abs_path: 'x', lineno: 99, colno: 1 })).toBeNull();
    expect(mapJsFrame(map, { abs_path: 'x', lineno: 0, colno: 0 })).toBeNull();
  });

  it('ranks the served file: full URL, then ~/path, then basename', () => {
    const url = 'https://shop.example.com/static/app.min.js?v=3';
    expect(servesRank('https://shop.example.com/static/app.min.js', url)).toBe(0);
    expect(servesRank('~/static/app.min.js', url)).toBe(1);
    expect(servesRank('app.min.js', url)).toBe(2);
    expect(servesRank('~/other/app.min.js', url)).toBe(2);
    expect(servesRank('vendor.min.js', url)).toBe(-1);
    expect(displayPath('webpack://shop/./src/cart.ts')).toBe('src/cart.ts');
    expect(displayPath('../../src/a.js')).toBe('src/a.js');
  });

  it('checks uploads: debug id and served file kept, broken maps refused', async () => {
    const ok = inspectSourceMap('~/static/app.min.js.map');
    ok.push(
      encode({
        version: 3,
        sources: ['a.js'],
        names: [],
        mappings: 'AAAA',
        debugId: '8446668B-DD38-5B06-B77F-194EF18B63FB',
      }),
    );
    expect(await ok.finish()).toEqual([
      { debugId: '8446668b-dd38-5b06-b77f-194ef18b63fb', serves: '~/static/app.min.js' },
    ]);
    const indexed = inspectSourceMap('bundle.map');
    indexed.push(encode(INDEXED));
    expect((await indexed.finish())[0].serves).toBe('bundle.min.js');
    const bad = [
      { version: 3, sources: ['a.js'], names: [], mappings: 'AAAA,CCCC' },
      { version: 3, sources: ['a.js'], names: [], mappings: 'AAAAC' },
      {
        version: 3,
        sections: [{ offset: { line: 0, column: 0 }, map: { version: 3, sources: [], names: [], mappings: 'AAAA' } }],
      },
    ];
    for (const map of bad) {
      const i = inspectSourceMap('x.map');
      // finish may answer a promise (FileInspector): a refusal either way counts.
      await expect(
        (async () => {
          i.push(encode(map));
          await i.finish();
        })(),
        JSON.stringify(map),
      ).rejects.toThrow(SymbolInputError);
    }
    expect(() => inspectSourceMap('x.map').push(new Uint8Array([0xff, 0xfe, 0x00]))).toThrow(SymbolInputError);
  });
});
