// The parsed-file cache: bounded by the bytes its entries report, least recently used
// out first; and the expiring map behind the "has symbols" flags and lookups.
import { describe, expect, it } from 'vitest';
import { ByteLru, TtlMap } from '../../src/symbols/cache.js';

describe('symbol caches', () => {
  it('evicts the least recently used entries once over its byte bound', () => {
    const lru = new ByteLru<string, { memoryBytes: number }>(100);
    lru.set('a', { memoryBytes: 40 });
    lru.set('b', { memoryBytes: 40 });
    expect(lru.get('a')).toBeDefined(); // a is now the most recent
    lru.set('c', { memoryBytes: 40 });
    expect(lru.get('b')).toBeUndefined();
    expect(lru.get('a')).toBeDefined();
    expect(lru.bytes).toBe(80);
    // An entry bigger than the bound stays alone rather than not at all.
    lru.set('huge', { memoryBytes: 500 });
    expect(lru.size).toBe(1);
    expect(lru.get('huge')).toBeDefined();
    lru.delete('huge');
    expect(lru.bytes).toBe(0);
  });

  it('forgets entries after their time', () => {
    const m = new TtlMap<number, string>(1000, 2);
    m.set(1, 'one', 0);
    expect(m.get(1, 999)).toBe('one');
    expect(m.get(1, 1000)).toBeUndefined();
    m.set(1, 'a', 0);
    m.set(2, 'b', 0);
    m.set(3, 'c', 0);
    expect(m.get(1, 1)).toBeUndefined();
    expect(m.get(3, 1)).toBe('c');
  });
});
