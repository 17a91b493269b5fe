// The hygiene rules on their own: which JSON texts need cleaning (the fast path must
// not miss one), and what cleaning gives, at depths that would overflow the stack of
// any recursive walk.
import { describe, expect, it } from 'vitest';
import {
  cleanJsonValue,
  cleanText,
  DEPTH_LIMIT_MARK,
  jsonNeedsCleaning,
  nestedDeeperThan,
  parseCleanJson,
} from '../../src/ingest/hygiene.js';
import { MAX_JSON_DEPTH } from '../../src/limits.js';

const nested = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);

describe('jsonNeedsCleaning', () => {
  it.each([
    ['plain event', '{"a":"b","c":[1,2,{"d":null}]}', false],
    ['exactly 64 levels', nested(MAX_JSON_DEPTH), false],
    ['65 levels', nested(MAX_JSON_DEPTH + 1), true],
    ['brackets inside strings do not count', `{"a":"${'['.repeat(200)}"}`, false],
    ['escaped NUL', '{"a":"x\\u0000"}', true],
    ['escaped lone surrogate', '{"a":"\\ud800"}', true],
    ['upper-case escape', '{"a":"\\uDC00"}', true],
    ['an escaped backslash before u0000 is not an escape', '{"a":"\\\\u0000"}', false],
    ['escaped quote then more', '{"a":"x\\"y","b":"\\u0041"}', false],
    ['NUL in a key', '{"\\u0000":1}', true],
    ['many siblings are not depth', `[${'[],'.repeat(200)}[]]`, false],
    ['a surrogate escape after many brackets', `[${'[],'.repeat(100)}"\\udfff"]`, true],
    ['65 levels of objects past many siblings', `[${'{},'.repeat(100)}${'{"a":'.repeat(65)}1${'}'.repeat(65)}]`, true],
    ['64 levels of objects past many siblings', `[${'{},'.repeat(100)}${'{"a":'.repeat(63)}1${'}'.repeat(63)}]`, false],
    ['65 levels under "__proto__" keys', `[${'[],'.repeat(100)}${'{"__proto__":'.repeat(64)}1${'}'.repeat(64)}]`, true],
    ['a \\u escape that is neither NUL nor a surrogate, deep', `[${'[],'.repeat(100)}"\\u00e9",${nested(65)}]`, true],
  ])('%s', (_name, json, expected) => {
    JSON.parse(json);
    expect(jsonNeedsCleaning(json)).toBe(expected);
  });
});

describe('nestedDeeperThan', () => {
  // Depth counts containers: the value itself is level 1.
  it.each([
    ['a scalar', 1, 0, false],
    ['an empty array', [], 1, false],
    ['an empty array at max 0', [], 0, true],
    ['arrays at the limit', JSON.parse(nested(5)), 5, false],
    ['arrays past the limit', JSON.parse(nested(6)), 5, true],
    ['objects past the limit, the deep one last', JSON.parse('{"a":1,"b":[],"c":{"d":{"e":{"f":{"g":{}}}}}}'), 5, true],
    ['objects at the limit, among siblings', JSON.parse('{"a":1,"b":[],"c":{"d":{"e":{"f":{"g":1}}}}}'), 5, false],
    ['an own "__proto__" key is walked', JSON.parse('{"__proto__":{"__proto__":{"__proto__":[]}}}'), 3, true],
    ['nulls are not containers', JSON.parse('[[[null,null]]]'), 3, false],
  ])('%s', (_name, value, max, expected) => {
    expect(nestedDeeperThan(value, max)).toBe(expected);
  });

  it('walks 100 000 levels without recursion', () => {
    expect(nestedDeeperThan(JSON.parse(nested(100_000)), 99_999)).toBe(true);
    expect(nestedDeeperThan(JSON.parse(nested(100_000)), 100_000)).toBe(false);
  });
});

describe('cleaning', () => {
  it('replaces NUL and lone surrogates, keeps pairs', () => {
    expect(cleanText('a\u0000b\ud800c\udc00\ud83d\ude00')).toBe('a\ufffdb\ufffdc\ufffd\ud83d\ude00');
  });

  it('cuts 100 000 levels at 64 without recursion, and the result serialises', () => {
    const { value, cleaned } = parseCleanJson(`{"deep":${nested(100_000)},"k\\u0000":"v"}`);
    expect(cleaned).toBe(true);
    let v: any = (value as any).deep;
    let depth = 2;
    while (Array.isArray(v)) {
      v = v[0];
      depth++;
    }
    expect(v).toBe(DEPTH_LIMIT_MARK);
    expect(depth).toBe(MAX_JSON_DEPTH + 1);
    expect(Object.keys(value as object)).toEqual(['deep', 'k\ufffd']);
    expect(() => JSON.stringify(value)).not.toThrow();
  });

  it('reports nothing cleaned for well-formed surrogate-pair escapes or a plain deep-looking text, so their bytes are kept', () => {
    expect(parseCleanJson('{"a":"\\ud83d\\ude00"}')).toEqual({ value: { a: '\ud83d\ude00' }, cleaned: false });
    expect(parseCleanJson(`{"a":[${'{},'.repeat(100)}{}]}`).cleaned).toBe(false);
    expect(parseCleanJson('{"a":"\\ud83d"}').cleaned).toBe(true);
  });

  it('keeps a "__proto__" key as data', () => {
    const out = cleanJsonValue(JSON.parse('{"__proto__":{"x":"\\u0000"}}')) as Record<string, unknown>;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(JSON.stringify(out)).toBe('{"__proto__":{"x":"\ufffd"}}');
  });
});
