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
  return { size: bytes.byteLength, read: async (offset, length) => bytes.subarray(offset, Math.min(bytes.byteLength, offset + length)) };
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
