// A least-recently-used cache bounded by the bytes its values say they hold (parsed
// symbol files), and a small map of entries that expire (lookups, project flags).

export class ByteLru<K, V extends { memoryBytes: number }> {
  private readonly entries = new Map<K, V>();
  private used = 0;

  constructor(readonly maxBytes: number) {}

  get(key: K): V | undefined {
    const v = this.entries.get(key);
    if (v !== undefined) {
      // Re-insert: a Map iterates in insertion order, so the first key is the least recently used.
      this.entries.delete(key);
      this.entries.set(key, v);
    }
    return v;
  }

  set(key: K, value: V): void {
    const old = this.entries.get(key);
    if (old) {
      this.used -= old.memoryBytes;
      this.entries.delete(key);
    }
    this.entries.set(key, value);
    this.used += value.memoryBytes;
    for (const [k, v] of this.entries) {
      if (this.used <= this.maxBytes || k === key) break;
      this.entries.delete(k);
      this.used -= v.memoryBytes;
    }
  }

  delete(key: K): void {
    const v = this.entries.get(key);
    if (!v) return;
    this.entries.delete(key);
    this.used -= v.memoryBytes;
  }

  get bytes(): number {
    return this.used;
  }

  get size(): number {
    return this.entries.size;
  }
}

/** Entries that expire `ttlMs` after they were set; at most `maxEntries` (oldest dropped). */
export class TtlMap<K, V> {
  private readonly entries = new Map<K, { value: V; until: number }>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries = 10_000,
  ) {}

  get(key: K, now: number): V | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.until <= now) {
      this.entries.delete(key);
      return undefined;
    }
    return e.value;
  }

  set(key: K, value: V, now: number): void {
    this.entries.delete(key);
    this.entries.set(key, { value, until: now + this.ttlMs });
    if (this.entries.size > this.maxEntries) {
      const first = this.entries.keys().next();
      if (!first.done) this.entries.delete(first.value);
    }
  }

  delete(key: K): void {
    this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }
}
