// How event payloads are packed into payload chunks (see payloads.ts), with the
// compressor passed in: the Node edition packs with its Brotli codec (payloads.ts), the
// serverless edition with a pure-JS zlib (src/editions/workers/transfer-runtime.ts);
// the store's readers decode both. Web APIs only.

/** Uncompressed bytes a chunk holds at most; a larger payload gets a chunk of its own. */
export const PAYLOAD_CHUNK_MAX_BYTES = 256 * 1024;

export interface PayloadToPack {
  projectId: number;
  receivedAt: number;
  payload: Uint8Array;
}

export interface PackedChunk<Blob extends Uint8Array = Uint8Array> {
  projectId: number;
  /** The newest receive time of its events: retention deletes the chunk after them. */
  receivedAt: number;
  /** Codec blob of the payloads one after another. */
  data: Blob;
  /** Indexes (into the packed list) of the payloads it holds, in order. */
  members: number[];
}

export interface PayloadSlot {
  /** Index into the chunk list. */
  chunk: number;
  start: number;
  length: number;
}

function concat(parts: Uint8Array[], bytes: number): Uint8Array {
  if (parts.length === 1) return parts[0];
  const out = new Uint8Array(bytes);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

/**
 * Packs payloads into compressed chunks, one project per chunk, keeping each project's
 * payloads in the given order. Returns the chunks and, per payload, where it went.
 */
export function packPayloadsWith<Blob extends Uint8Array>(
  items: PayloadToPack[],
  compress: (bytes: Uint8Array) => Blob,
): { chunks: PackedChunk<Blob>[]; slots: PayloadSlot[] } {
  const byProject = new Map<number, number[]>();
  items.forEach((item, i) => {
    const list = byProject.get(item.projectId);
    if (list) list.push(i);
    else byProject.set(item.projectId, [i]);
  });
  const chunks: PackedChunk<Blob>[] = [];
  const slots: PayloadSlot[] = new Array(items.length);
  for (const [projectId, indexes] of byProject) {
    let members: number[] = [];
    let bytes = 0;
    const close = () => {
      if (members.length === 0) return;
      chunks.push({
        projectId,
        receivedAt: Math.max(...members.map((i) => items[i].receivedAt)),
        data: compress(concat(members.map((i) => items[i].payload), bytes)),
        members,
      });
      members = [];
      bytes = 0;
    };
    for (const i of indexes) {
      const length = items[i].payload.byteLength;
      if (members.length > 0 && bytes + length > PAYLOAD_CHUNK_MAX_BYTES) close();
      slots[i] = { chunk: chunks.length, start: bytes, length };
      members.push(i);
      bytes += length;
    }
    close();
  }
  return { chunks, slots };
}
