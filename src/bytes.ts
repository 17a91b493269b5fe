// Byte arrays joined: what every streaming reader of the shared code (ingest bodies,
// multipart parts, payload chunks, symbol files) does with the pieces it collected.
// Web APIs only.

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
