// The ProGuard/R8 mapping parser and remapper on hand-written R8 mappings: line
// ranges, inline chains (also from other classes), `sourceFile` metadata, ambiguous
// and overloaded methods, exception types, and lines that do not parse.
import { describe, expect, it } from 'vitest';
import {
  inspectProguard,
  parseMappingLine,
  ProguardMapping,
  remapExceptionType,
  remapJavaFrame,
  uuid5Hasher,
  PROGUARD_NAMESPACE,
} from '../../src/symbols/proguard.js';
import { SymbolInputError } from '../../src/symbols/kinds.js';

const R8 = `# compiler: R8
# compiler_version: 8.2.47
# {"id":"com.android.tools.r8.mapping","version":"2.2"}
com.example.shop.CartViewModel -> a.b:
# {"id":"sourceFile","fileName":"CartViewModel.kt"}
    java.util.List items -> a
    1:4:void <init>():12:15 -> <init>
    5:5:int com.example.shop.Prices.total(java.util.List):40:40 -> b
    5:5:void checkout():22 -> b
    6:9:void checkout():23:26 -> b
    1:1:void clear() -> c
    2:2:void clear(int) -> c
    void retry() -> d
    void reset() -> d
com.example.shop.Prices -> a.c:
# {"id":"sourceFile","fileName":"Prices.kt"}
    1:3:int total(java.util.List):38:40 -> a
com.example.shop.CartViewModel$Companion -> a.b$a:
    1:1:void create():50:50 -> a
com.example.shop.EmptyCartException -> a.d:
`;

const mapping = new ProguardMapping(new TextEncoder().encode(R8));

describe('ProGuard mapping', () => {
  it('parses every kind of line and refuses garbage', () => {
    expect(parseMappingLine('com.a.B -> x.y:')).toEqual({ type: 'class', original: 'com.a.B', obfuscated: 'x.y' });
    expect(parseMappingLine('    1:2:void m(int,java.lang.String):10:11 -> a')).toMatchObject({
      type: 'method',
      obfuscated: 'a',
      entry: { start: 1, end: 2, origStart: 10, origEnd: 11, name: 'm', className: null },
    });
    expect(parseMappingLine('    int f -> b')).toEqual({ type: 'field' });
    expect(parseMappingLine('# comment')).toMatchObject({ type: 'comment' });
    expect(parseMappingLine('')).toEqual({ type: 'blank' });
    for (const bad of ['not a mapping', '    what is this', 'com.a.B -> x.y', '    1:2:void m( -> a'])
      expect(parseMappingLine(bad), bad).toBeNull();
  });

  it('remaps an inline chain, innermost first, with the inlined method from another class and sourceFile metadata', () => {
    const frames = remapJavaFrame(mapping, { module: 'a.b', function: 'b', lineno: 5, filename: 'SourceFile' })!;
    expect(frames.map((f) => [f.module, f.function, f.filename, f.lineno])).toEqual([
      ['com.example.shop.Prices', 'total', 'Prices.kt', 40],
      ['com.example.shop.CartViewModel', 'checkout', 'CartViewModel.kt', 22],
    ]);
    expect(
      remapJavaFrame(mapping, { module: 'a.b', function: 'b', lineno: 8 })!.map((f) => [f.function, f.lineno]),
    ).toEqual([['checkout', 25]]);
  });

  it('picks an overload by its line, and names every alternative when there is no line to choose by', () => {
    expect(remapJavaFrame(mapping, { module: 'a.b', function: 'c', lineno: 2 })!.map((f) => f.function)).toEqual([
      'clear',
    ]);
    expect(remapJavaFrame(mapping, { module: 'a.b', function: 'c' })!.map((f) => f.function)).toEqual(['clear']);
    // Two different methods behind one name without line information: both alternatives.
    expect(remapJavaFrame(mapping, { module: 'a.b', function: 'd', lineno: 0 })!.map((f) => f.function)).toEqual([
      'retry',
      'reset',
    ]);
    // Without a line, an inline chain stands for its outer method.
    expect(remapJavaFrame(mapping, { module: 'a.b', function: 'b' })!.map((f) => f.function)).toEqual(['checkout']);
  });

  it('derives the source file from the class when there is no metadata, and keeps unknown names', () => {
    expect(remapJavaFrame(mapping, { module: 'a.b$a', function: 'a', lineno: 1 })![0]).toMatchObject({
      module: 'com.example.shop.CartViewModel$Companion',
      filename: 'CartViewModel.java',
      lineno: 50,
    });
    expect(remapJavaFrame(mapping, { module: 'a.b', function: 'zz', lineno: 3 })![0]).toMatchObject({
      module: 'com.example.shop.CartViewModel',
      function: 'zz',
      lineno: 3,
    });
    expect(remapJavaFrame(mapping, { module: 'java.lang.Thread', function: 'run', lineno: 3 })).toBeNull();
  });

  it('remaps exception types, qualified or split into module and type', () => {
    expect(remapExceptionType(mapping, 'a.d', undefined)).toEqual({ type: 'com.example.shop.EmptyCartException' });
    expect(remapExceptionType(mapping, 'd', 'a')).toEqual({ module: 'com.example.shop', type: 'EmptyCartException' });
    expect(remapExceptionType(mapping, 'IllegalStateException', 'java.lang')).toBeNull();
  });

  it('checks an upload line by line across chunk boundaries, and computes the uuid5 debug id', async () => {
    const bytes = new TextEncoder().encode(R8);
    const inspector = inspectProguard('mapping.txt');
    for (let i = 0; i < bytes.length; i += 7) inspector.push(bytes.subarray(i, i + 7));
    const [file] = await inspector.finish();
    const h = uuid5Hasher(PROGUARD_NAMESPACE);
    h.update(bytes);
    expect(file.debugId).toBe(h.digest());
    expect(file.debugId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const bad = inspectProguard('mapping.txt');
    expect(() => bad.push(new TextEncoder().encode(R8 + '    1:2:broken line ->\n'))).toThrow(SymbolInputError);
    const early = inspectProguard('m.txt');
    expect(() => early.push(new TextEncoder().encode('    void m() -> a\n'))).toThrow(/member before any class/);
  });
});
