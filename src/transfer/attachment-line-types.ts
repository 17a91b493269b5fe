// Event attachments (src/attachments) in the export: an `attachment` line per file (its
// event's event_id, its digest, name, types, size) after the event lines, and
// `attachment_chunk` lines with its stored chunks as base64 (each at most half a MiB).
// Both are keyed by event_id and digest, so importing twice adds nothing. A chunk whose
// bytes are in the edition's bucket is exported with them (the same line), and an import
// with a bucket writes its chunks' bytes there, as ingest does. User feedback
// travels beside them as `user_feedback` lines.
import { attachmentObjectKey, putObjects, readObject } from '../store/blobs.js';
import { lineColumns } from './format.js';
import { type ImportContext, partsOf } from './line-type.js';
import { type ParentSpec, tableLineType } from './table-line-type.js';

const ATTACHMENT_KEY = lineColumns('attachments', ['event_id', 'digest']);

const ATTACHMENT_PARENT: ParentSpec = {
  name: 'attachment',
  table: 'attachments',
  column: 'attachment_id',
  key: ATTACHMENT_KEY,
};

export const attachmentLineType = tableLineType({
  type: 'attachment',
  table: 'attachments',
  parent: 'project',
  key: ['event_id', 'digest'],
  order: ['id'],
});

export const attachmentChunkLineType = tableLineType({
  type: 'attachment_chunk',
  table: 'attachment_chunks',
  parent: ATTACHMENT_PARENT,
  key: ['seq'],
  order: ['attachment_id', 'seq'],
  // Eight chunks (4 MiB) per read, whatever the export's page size.
  pageRows: 8,
  beforeWrite: attachmentChunksIntoBucket,
  // A chunk in the bucket (src/store/blobs.ts) is exported with its object's bytes.
  async resolve(ctx, rows) {
    const blobs = ctx.runtime.blobs;
    if (!blobs) return;
    await Promise.all(
      rows.map(async (row) => {
        if (typeof row.r2_key === 'string') row.data = (await readObject(blobs, row.r2_key)) ?? new Uint8Array(0);
      }),
    );
  },
});

/**
 * With a bucket, the chunks a batch adds become objects before their rows are written
 * (src/store/blobs.ts), keyed by the day of the import (no earlier than the event's, so
 * retention's sweep of old days never takes an object whose row it keeps). Chunks already
 * stored are left as they are, so a second import writes no object.
 */
async function attachmentChunksIntoBucket(ctx: ImportContext, rows: Record<string, unknown>[]): Promise<void> {
  const blobs = ctx.runtime.blobs;
  if (!blobs || rows.length === 0) return;
  const key = (r: Record<string, unknown>) => `${Number(r.attachment_id)}:${Number(r.seq)}`;
  // Ids a few at a time: D1 binds at most 100 parameters.
  const stored = new Set<string>();
  for (const part of partsOf([...new Set(rows.map((r) => Number(r.attachment_id)))], 90))
    for (const r of await ctx.db
      .selectFrom('attachment_chunks')
      .select(['attachment_id', 'seq'])
      .where('attachment_id', 'in', part)
      .execute())
      stored.add(key(r));
  const now = Date.now();
  const objects: { key: string; data: Uint8Array }[] = [];
  for (const row of rows) {
    // Every row names the same columns (one insert statement takes them all).
    row.r2_key = null;
    if (stored.has(key(row)) || !(row.data instanceof Uint8Array)) continue;
    const object = { key: attachmentObjectKey(now), data: row.data };
    objects.push(object);
    row.data = new Uint8Array(0);
    row.r2_key = object.key;
  }
  await putObjects(blobs, objects);
}

// User feedback (src/feedback): keyed by its digest; it names its event by event_id, so
// it links to the imported event as it did to the exported one.
export const userFeedbackLineType = tableLineType({
  type: 'user_feedback',
  table: 'user_feedback',
  parent: 'project',
  key: ['digest'],
  order: ['id'],
});
