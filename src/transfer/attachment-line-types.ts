// Event attachments (src/attachments) in the export: an `attachment` line per file (its
// event's event_id, its digest, name, types, size) after the event lines, and
// `attachment_chunk` lines with its stored chunks as base64 (each at most half a MiB).
// Both are keyed by event_id and digest, so importing twice adds nothing. A chunk whose
// bytes are in the edition's bucket is exported with them (the same line), and an import
// with a bucket writes its chunks' bytes there, as ingest does. User feedback
// travels beside them as `user_feedback` lines.
import { attachmentObjectKey, readObject } from '../store/blobs.js';
import { chunksIntoBucket } from './chunk-objects.js';
import { lineColumns } from './format.js';
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
  beforeWrite: chunksIntoBucket({
    table: 'attachment_chunks',
    parent: 'attachment_id',
    position: ['seq'],
    objectKey: attachmentObjectKey,
    recordsLength: false,
  }),
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

// User feedback (src/feedback): keyed by its digest; it names its event by event_id, so
// it links to the imported event as it did to the exported one.
export const userFeedbackLineType = tableLineType({
  type: 'user_feedback',
  table: 'user_feedback',
  parent: 'project',
  key: ['digest'],
  order: ['id'],
});
