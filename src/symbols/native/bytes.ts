// Bounds-checked little/big-endian reading over a Uint8Array (Web APIs only, shared with
// the Workers edition). Every read past the window throws BadNativeFile, so a truncated or
// lying file ends as one clean error instead of garbage or a crash.

export class BadNativeFile extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BadNativeFile';
  }
}

const utf8 = new TextDecoder('utf-8');

export function decodeUtf8(bytes: Uint8Array, start: number, end: number): string {
  return utf8.decode(bytes.subarray(start, end));
}

/** Names longer than this are cut: no real symbol is, and scans stay short on hostile files. */
export const MAX_STRING_BYTES = 64 * 1024;

/** Reads the NUL-terminated string starting at `pos`, never past `limit` nor MAX_STRING_BYTES. */
export function cString(bytes: Uint8Array, pos: number, limit: number = bytes.length): string {
  if (pos < 0 || pos >= limit) throw new BadNativeFile(`string offset ${pos} out of bounds`);
  const window = bytes.subarray(pos, Math.min(limit, pos + MAX_STRING_BYTES));
  const nul = window.indexOf(0);
  return utf8.decode(nul === -1 ? window : window.subarray(0, nul));
}

export class ByteReader {
  readonly bytes: Uint8Array;
  readonly view: DataView;
  pos: number;
  /** Absolute end of the readable window. */
  end: number;
  littleEndian: boolean;

  constructor(bytes: Uint8Array, start = 0, end = bytes.length, littleEndian = true) {
    if (start < 0 || end > bytes.length || start > end) throw new BadNativeFile('window out of bounds');
    this.bytes = bytes;
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.pos = start;
    this.end = end;
    this.littleEndian = littleEndian;
  }

  remaining(): number {
    return this.end - this.pos;
  }

  need(n: number): void {
    if (n < 0 || this.pos + n > this.end) {
      throw new BadNativeFile(`read of ${n} bytes at ${this.pos} runs past ${this.end}`);
    }
  }

  seek(pos: number): void {
    if (pos < 0 || pos > this.end) throw new BadNativeFile(`offset ${pos} out of bounds`);
    this.pos = pos;
  }

  skip(n: number): void {
    this.need(n);
    this.pos += n;
  }

  u8(): number {
    if (this.pos >= this.end) throw new BadNativeFile(`read at ${this.pos} runs past ${this.end}`);
    return this.bytes[this.pos++];
  }

  i8(): number {
    const v = this.u8();
    return v >= 0x80 ? v - 0x100 : v;
  }

  u16(): number {
    this.need(2);
    const v = this.view.getUint16(this.pos, this.littleEndian);
    this.pos += 2;
    return v;
  }

  u24(): number {
    this.need(3);
    const b = this.bytes;
    const p = this.pos;
    this.pos += 3;
    return this.littleEndian ? b[p] | (b[p + 1] << 8) | (b[p + 2] << 16) : (b[p] << 16) | (b[p + 1] << 8) | b[p + 2];
  }

  u32(): number {
    this.need(4);
    const v = this.view.getUint32(this.pos, this.littleEndian);
    this.pos += 4;
    return v;
  }

  /** A 64-bit value as a number: exact below 2^53, which covers every real address and offset. */
  u64(): number {
    this.need(8);
    const lo = this.view.getUint32(this.pos, this.littleEndian);
    const hi = this.view.getUint32(this.pos + 4, this.littleEndian);
    this.pos += 8;
    return this.littleEndian ? hi * 0x1_0000_0000 + lo : lo * 0x1_0000_0000 + hi;
  }

  /** Reads an unsigned value of 1, 2, 4 or 8 bytes. */
  uN(size: number): number {
    switch (size) {
      case 1:
        return this.u8();
      case 2:
        return this.u16();
      case 4:
        return this.u32();
      case 8:
        return this.u64();
      default:
        throw new BadNativeFile(`unsupported value size ${size}`);
    }
  }

  uleb(): number {
    let result = 0;
    let mul = 1;
    const b = this.bytes;
    for (;;) {
      if (this.pos >= this.end) throw new BadNativeFile('LEB128 runs past the end');
      const byte = b[this.pos++];
      if (mul < 0x20_0000_0000_0000) result += (byte & 0x7f) * mul;
      if ((byte & 0x80) === 0) return result;
      mul *= 128;
    }
  }

  sleb(): number {
    let result = 0;
    let mul = 1;
    let byte = 0;
    const b = this.bytes;
    do {
      if (this.pos >= this.end) throw new BadNativeFile('LEB128 runs past the end');
      byte = b[this.pos++];
      if (mul < 0x20_0000_0000_0000) result += (byte & 0x7f) * mul;
      mul *= 128;
    } while (byte & 0x80);
    if (byte & 0x40 && mul <= 0x20_0000_0000_0000) result -= mul;
    return result;
  }

  cstring(): string {
    const start = this.skipCString();
    return decodeUtf8(this.bytes, start, this.pos - 1);
  }

  /** Skips a NUL-terminated string (searched for inside the window only); its start position. */
  skipCString(): number {
    const start = this.pos;
    const nul = start < this.end ? this.bytes.subarray(start, this.end).indexOf(0) : -1;
    if (nul === -1) throw new BadNativeFile('string runs past the end');
    this.pos = start + nul + 1;
    return start;
  }
}
