// Event attachments (src/attachments) in the export: an `attachment` line per file (its
// event's event_id, its digest, name, types, size) after the event lines, and
// `attachment_chunk` lines with its stored chunks as base64 (each at most half a MiB).
// Both are keyed by event_id and digest, so importing twice adds nothing. A chunk whose
// bytes are in the edition's bucket is exported with them (the same line). User feedback
// travels beside them as `user_feedback` lines.
import { readObject } from '../store/blobs.js';
import type { ColumnSpec } from './format.js';
import { type ParentSpec, tableLineType } from './table-line-type.js';

const ATTACHMENT_KEY: ColumnSpec[] = [
  { column: 'event_id', kind: 'text' },
  { column: 'digest', kind: 'text' },
];

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
  columns: [
    ...ATTACHMENT_KEY,
    { column: 'name', kind: 'text' },
    { column: 'content_type', kind: 'text' },
    { column: 'attachment_type', kind: 'text' },
    { column: 'size', kind: 'count' },
    { column: 'received_at', kind: 'time' },
  ],
});

export const attachmentChunkLineType = tableLineType({
  type: 'attachment_chunk',
  table: 'attachment_chunks',
  parent: ATTACHMENT_PARENT,
  key: ['seq'],
  order: ['attachment_id', 'seq'],
  // Eight chunks (4 MiB) per read, whatever the export's page size.
  pageRows: 8,
  columns: [
    { column: 'seq', kind: 'count' },
    { column: 'data', kind: 'bytes' },
  ],
  // A chunk in the bucket (src/store/blobs.ts) is exported with its object's bytes; an
  // import writes them to the chunk table.
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
  columns: [
    { column: 'digest', kind: 'text' },
    { column: 'event_id', kind: 'text' },
    { column: 'name', kind: 'text' },
    { column: 'email', kind: 'text' },
    { column: 'comments', kind: 'text' },
    { column: 'url', kind: 'text' },
    { column: 'source', kind: 'text' },
    { column: 'created_at', kind: 'time' },
    { column: 'received_at', kind: 'time' },
  ],
});
