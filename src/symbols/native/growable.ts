// Append-only typed arrays: the index builder keeps millions of rows without one JS object each.

type TypedArrayKind = Float64Array | Int32Array | Uint32Array;

class Growable<T extends TypedArrayKind> {
  data: T;
  length = 0;
  constructor(
    private readonly make: (n: number) => T,
    capacity = 1024,
  ) {
    this.data = make(capacity);
  }
  push(v: number): void {
    if (this.length === this.data.length) {
      const next = this.make(this.data.length * 2);
      next.set(this.data);
      this.data = next;
    }
    this.data[this.length++] = v;
  }
  get(i: number): number {
    return this.data[i];
  }
  set(i: number, v: number): void {
    this.data[i] = v;
  }
  /** A right-sized copy. */
  finish(): T {
    return this.data.slice(0, this.length) as T;
  }
  /** The values without a copy (the spare capacity stays allocated until the view goes). */
  view(): T {
    return this.data.subarray(0, this.length) as T;
  }
}

export class GrowableF64 extends Growable<Float64Array> {
  constructor(capacity = 1024) {
    super((n) => new Float64Array(n), capacity);
  }
}
export class GrowableI32 extends Growable<Int32Array> {
  constructor(capacity = 1024) {
    super((n) => new Int32Array(n), capacity);
  }
}
