// The file and function names of frames mapped through a source map (pure rules).
import { describe, expect, it } from 'vitest';
import {
  definesFunctionAt,
  displayPath,
  enclosingFunctionName,
  frameFiles,
  mappedFunctionName,
  minifiedName,
  namedMappingsBefore,
  type MapLookup,
} from '../../src/symbols/sourcemap-frames.js';

describe('frame files', () => {
  it.each([
    ['webpack:///./src/x.js', 'src/x.js'],
    ['webpack://shop/./src/cart.ts', 'src/cart.ts'],
    ['webpack:///src/x.js', 'src/x.js'],
    ['/./src/x.js', 'src/x.js'],
    ['webpack:///../../node_modules/react/index.js', 'node_modules/react/index.js'],
    ['../../src/a.js', 'src/a.js'],
    ['src/./lib/a.js', 'src/lib/a.js'],
    ['https://cdn.example.com/src/a.js', 'cdn.example.com/src/a.js'],
    ['app:///src/a.js', 'src/a.js'],
    ['/srv/app/src/a.js', '/srv/app/src/a.js'],
  ])('%s reads as %s', (source, filename) => {
    expect(displayPath(source)).toBe(filename);
    expect(frameFiles(source)).toEqual({ abs_path: source, filename });
  });
});

describe('function names', () => {
  it.each([
    ['HTMLButtonElement.Is', 'Is'],
    ['Is', 'Is'],
    ['new Xs', 'Xs'],
    ['Object.t [as onClick]', 't'],
    ['?', ''],
    ['<anonymous>', ''],
    [undefined, ''],
    ['Array.map', 'map'],
  ])('minified name of %s is %s', (sdk, name) => {
    expect(minifiedName(sdk)).toBe(name);
  });

  const SOURCE = [
    'function onBuyClick(event) {', // 1
    '  const onDone = (total) => show(total);', // 2
    '  checkout(event.items);', // 3
    '}', // 4
    'class Cart {', // 5
    '  add(item: Item): void {', // 6
    '    if (item) { this.items.push(item); }', // 7
    '  }', // 8
    '}', // 9
    'export const handlers = { save: function (x) {}, load: async () => {} };', // 10
    'window.onerror = function report() {};', // 11
  ].join('\n');
  it.each([
    [1, 10, 'onBuyClick', true],
    [2, 9, 'onDone', true],
    [3, 3, 'checkout', false], // a call, not a definition
    [6, 3, 'add', true], // a method with a return type
    [7, 5, 'if', false],
    [10, 27, 'save', true],
    [10, 50, 'load', true],
    [11, 27, 'report', true],
    [1, 1, 'function', false],
    [1, 10, 'onBuy', false], // a prefix of the name at that place
    [99, 1, 'x', false],
  ])('line %i column %i defines %s: %s', (line, column, name, yes) => {
    expect(definesFunctionAt(SOURCE, line, column, name)).toBe(yes);
  });

  // A minified line `function Ts(t){…}function Is(t){…throw…}` and its named mappings.
  const MAPPINGS: { column: number; source: number; line: number; column0: number; name: string | null }[] = [
    { column: 1, source: 0, line: 1, column0: 1, name: null },
    { column: 10, source: 0, line: 6, column0: 10, name: 'parseLine' }, // Ts
    { column: 13, source: 0, line: 6, column0: 20, name: 'item' },
    { column: 20, source: 0, line: 3, column0: 3, name: 'checkout' }, // a call inlined, named
    { column: 40, source: 1, line: 1, column0: 10, name: 'onBuyClick' }, // Is
    { column: 43, source: 1, line: 1, column0: 21, name: 'event' },
    { column: 50, source: 1, line: 2, column0: 3, name: null },
  ];
  const lookup: MapLookup = (line, column) => {
    if (line !== 1) return null;
    let found: (typeof MAPPINGS)[number] | undefined;
    for (const m of MAPPINGS) if (m.column <= column) found = m;
    return found ? { source: found.source, line: found.line, column: found.column0, name: found.name } : null;
  };
  const CART = 'x\nx\n  checkout(a);\nx\nx\nfunction parseLine(item) {\n';
  const APP = 'function onBuyClick(event) {\n  boom();\n}\n';
  const contents = [CART, APP];

  it('walks the mappings before a position, nearest first, with their widths', () => {
    expect([...namedMappingsBefore(lookup, 1, 55)].map((m) => [m.column, m.width, m.name])).toEqual([
      [43, 7, 'event'],
      [40, 3, 'onBuyClick'],
      [20, 20, 'checkout'],
      [13, 7, 'item'],
      [10, 3, 'parseLine'],
    ]);
  });

  it('skips to where each segment starts when the lookup says so, with the same mappings and fewer lookups', () => {
    let calls = 0;
    const counted: MapLookup = (line, column) => {
      calls++;
      return lookup(line, column);
    };
    const stepped = [...namedMappingsBefore(counted, 1, 55)];
    const steppedCalls = calls;
    calls = 0;
    const jumping: MapLookup = (line, column) => {
      calls++;
      const found = lookup(line, column);
      const starts = MAPPINGS.filter((m) => m.column <= column).at(-1)?.column;
      return found && { ...found, generatedColumn: starts };
    };
    expect([...namedMappingsBefore(jumping, 1, 55)]).toEqual(stepped);
    expect(calls).toBeLessThan(steppedCalls / 4);
  });

  it('names a frame after the function that encloses it, never after a call site', () => {
    const name = (sdk: string | undefined, column: number, content: (string | null)[] = contents) =>
      mappedFunctionName(
        sdk,
        enclosingFunctionName(sdk, namedMappingsBefore(lookup, 1, column), (s) => content[s] ?? null),
      );
    expect(name('HTMLButtonElement.Is', 55)).toBe('onBuyClick');
    expect(name('Ts', 30)).toBe('parseLine'); // `checkout` at column 20 is a call in the original
    // A minified name longer than the definition's token cannot be it.
    expect(name('longName', 55)).toBe('longName');
    // Anonymous or unnamed frames, or no sources content: the SDK's name stays.
    expect(name('?', 55)).toBe('?');
    expect(name(undefined, 55)).toBeUndefined();
    expect(name('Is', 55, [null, null])).toBe('Is');
  });
});
