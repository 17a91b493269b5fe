// Chunk lines (attachment and symbol-file chunks) imported into an edition with a bucket:
// the chunks a batch adds become objects before their rows are written (src/store/blobs.ts),
// so D1 keeps the rows and keys and the bucket the bytes, as ingest and uploads leave them.
// Chunks already stored are left as they are (their insert does nothing), so a second
// import writes no object; an object of a batch that fails, or of a concurrent import's
// equal chunk, is an orphan retention sweeps. Objects are keyed by the day of the import
// (no earlier than the row's own day), so retention's sweep of old days never takes an
// object whose row it keeps.
import { putObjects } from '../store/blobs.js';
import { type ImportContext, partsOf } from './line-type.js';

type Row = Record<string, unknown>;

/** Where a chunk table's rows come from and how their objects are named. */
export interface ChunkObjectsSpec {
  table: 'attachment_chunks' | 'symbol_chunks';
  /** The column naming the chunk's file (the parent row). */
  parent: 'attachment_id' | 'file_id';
  /** The columns that, with `parent`, name one chunk. */
  position: readonly ('seq' | 'part')[];
  objectKey(now: number): string;
  /** Whether the table records the object's length (`object_bytes`). */
  recordsLength: boolean;
}

/** The `beforeWrite` of a chunk line type: moves the batch's new chunks' bytes into the bucket. */
export function chunksIntoBucket(spec: ChunkObjectsSpec): (ctx: ImportContext, rows: Row[]) => Promise<void> {
  const columns = [spec.parent, ...spec.position];
  const keyOf = (r: Row) => columns.map((c) => Number(r[c])).join(':');
  return async (ctx, rows) => {
    const blobs = ctx.runtime.blobs;
    if (!blobs || rows.length === 0) return;
    const stored = new Set<string>();
    // Parent ids a few at a time: D1 binds at most 100 parameters.
    for (const part of partsOf([...new Set(rows.map((r) => Number(r[spec.parent])))], 90)) {
      // The table is one of two chunk tables, named by the spec: the rows are read by column name.
      const found = (await (ctx.db as any)
        .selectFrom(spec.table)
        .select(columns)
        .where(spec.parent, 'in', part)
        .execute()) as Row[];
      for (const r of found) stored.add(keyOf(r));
    }
    const now = Date.now();
    const objects: { key: string; data: Uint8Array }[] = [];
    for (const row of rows) {
      // Every row names the same columns (one insert statement takes them all).
      row.r2_key = null;
      if (spec.recordsLength) row.object_bytes = null;
      if (stored.has(keyOf(row)) || !(row.data instanceof Uint8Array)) continue;
      const object = { key: spec.objectKey(now), data: row.data };
      objects.push(object);
      row.data = new Uint8Array(0);
      row.r2_key = object.key;
      if (spec.recordsLength) row.object_bytes = object.data.byteLength;
    }
    await putObjects(blobs, objects);
  };
}
