// Byte arrays joined: what every streaming reader of the shared code (ingest bodies,
// multipart parts, payload chunks, symbol files) does with the pieces it collected; and
// random access to bytes wherever they are kept (a stored file's chunks, a buffer), for
// the readers that jump (ZIP directories, Mach-O load commands). Web APIs only.

/** Random access to the bytes of a file. */
export interface ByteRangeSource {
  size: number;
  /** Exactly `length` bytes from `offset` (fewer only at the end). */
  read(offset: number, length: number): Promise<Uint8Array>;
}

/** A source over bytes already in memory. */
export function bytesSource(bytes: Uint8Array): ByteRangeSource {
  return {
    size: bytes.byteLength,
    read: async (offset, length) => bytes.subarray(offset, Math.min(bytes.byteLength, offset + length)),
  };
}

/** The parts one after another in one array (`total`: their summed length, when known); a single part as it is. */
export function concatBytes(parts: readonly Uint8Array[], total?: number): Uint8Array {
  if (parts.length === 1) return parts[0];
  let size = total;
  if (size === undefined) {
    size = 0;
    for (const part of parts) size += part.byteLength;
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.byteLength;
  }
  return out;
}

/**
 * Random access over consecutive pieces (stored chunks) loaded one at a time: a read
 * holds its answer and one piece. `starts[i]` is where piece i begins; the last piece
 * loaded is kept, as readers go in steps smaller than a piece. A piece shorter than
 * its place (a file cut short) ends the read there.
 */
export function piecesSource(
  starts: readonly number[],
  size: number,
  load: (index: number) => Promise<Uint8Array>,
): ByteRangeSource {
  let cached: { index: number; data: Uint8Array } | null = null;
  const piece = async (index: number) => {
    if (cached?.index !== index) cached = { index, data: await load(index) };
    return cached.data;
  };
  return {
    size,
    async read(offset, length) {
      const end = Math.min(size, offset + length);
      if (offset >= end) return new Uint8Array(0);
      const out = new Uint8Array(end - offset);
      let index = Math.max(0, upperBound(starts, offset) - 1);
      let at = offset;
      while (at < end && index < starts.length) {
        const data = await piece(index);
        const from = at - starts[index];
        const n = Math.min(data.byteLength - from, end - at);
        if (n <= 0) break;
        out.set(data.subarray(from, from + n), at - offset);
        at += n;
        index++;
      }
      return at === end ? out : out.subarray(0, at - offset);
    },
  };
}

/** How many of the ascending `sorted` are ≤ value. */
function upperBound(sorted: readonly number[], value: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid] <= value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
