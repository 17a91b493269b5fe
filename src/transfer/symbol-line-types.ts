// Symbol files (src/symbols) in the export: a `symbol` line per ready file (its facts,
// the key by which it replaces others) and `symbol_chunk` lines with its stored chunks
// as base64 (part 0 the file, part 1 its derived index), each well under a megabyte; a
// chunk whose bytes are in the edition's bucket is exported with them (the same line), and
// an import with a bucket writes its chunks' bytes there, as an upload does.
// Import writes a file as `importing`, which nothing lists, matches or sweeps, and makes
// it `ready` once its chunks add up to its sizes: a file is never visible half-written,
// and an interrupted import leaves it waiting for the next run. A ready file of the same
// kind and debug id (or, without one, kind, release and filename) in the target wins, as
// an existing row does: the imported copy is dropped.
import { sql } from 'kysely';
import { bucketOf, readObject, symbolObjectKey } from '../store/blobs.js';
import { chunksIntoBucket } from './chunk-objects.js';
import { lineColumns } from './format.js';
import type { ImportContext } from './line-type.js';
import { symbolKindProblem, symbolPartProblem } from './line-checks.js';
import { type ParentSpec, tableLineType } from './table-line-type.js';

const SYMBOL_KEY_COLUMNS = ['kind', 'release', 'dist', 'debug_id', 'filename'] as const;
const SYMBOL_KEY = lineColumns('symbol_files', SYMBOL_KEY_COLUMNS);

const SYMBOL_PARENT: ParentSpec = { name: 'symbol file', table: 'symbol_files', column: 'file_id', key: SYMBOL_KEY };

/** Import's state of a symbol file whose chunks are still coming. */
const IMPORTING = 'importing';

export const symbolLineType = tableLineType({
  type: 'symbol',
  table: 'symbol_files',
  parent: 'project',
  key: [...SYMBOL_KEY_COLUMNS],
  order: ['id'],
  where: sql`t.state = 'ready'`,
  existing: 'lookup',
  fixed: { state: IMPORTING },
  check: symbolKindProblem,
});

export const symbolChunkLineType = tableLineType({
  type: 'symbol_chunk',
  table: 'symbol_chunks',
  parent: SYMBOL_PARENT,
  key: ['part', 'seq'],
  order: ['file_id', 'part', 'seq'],
  where: sql`p.state = 'ready'`,
  check: symbolPartProblem,
  // Eight chunks (4 MiB) per read, whatever the export's page size.
  pageRows: 8,
  beforeWrite: chunksIntoBucket({
    table: 'symbol_chunks',
    parent: 'file_id',
    position: ['part', 'seq'],
    objectKey: symbolObjectKey,
    recordsLength: true,
  }),
  afterWrite: finishImportedFiles,
  // A chunk in the edition's bucket (src/store/blobs.ts) is exported with its object's bytes.
  async resolve(ctx, rows) {
    const blobs = ctx.runtime.blobs ?? bucketOf(ctx.db);
    if (!blobs) return;
    for (const row of rows)
      if (typeof row.r2_key === 'string') row.data = (await readObject(blobs, row.r2_key)) ?? new Uint8Array(0);
  },
});

/** Makes the importing files among `fileIds` whose chunks are complete ready (or drops them for a ready equal). */
async function finishImportedFiles(ctx: ImportContext, fileIds: number[]): Promise<void> {
  for (const id of fileIds) {
    const file = await ctx.db
      .selectFrom('symbol_files')
      .selectAll()
      .where('id', '=', id)
      .where('state', '=', IMPORTING)
      .executeTakeFirst();
    if (!file) continue;
    const { rows } = await sql<{ part: number; bytes: number | string }>`
      select part, sum(coalesce(object_bytes, length(data))) as bytes from symbol_chunks where file_id = ${id} group by part`.execute(
      ctx.db,
    );
    const bytes = (part: number) => Number(rows.find((r) => Number(r.part) === part)?.bytes ?? 0);
    if (bytes(0) !== Number(file.size) || bytes(1) !== Number(file.index_size)) continue;
    // Another import of the same file may be finishing it too (on D1, between this
    // plan's reads and its commit): the file itself is no equal, and the writes apply only
    // while it is still importing, so neither import drops a file the other made ready.
    let equal = ctx.db
      .selectFrom('symbol_files')
      .select('id')
      .where('project_id', '=', file.project_id)
      .where('kind', '=', file.kind)
      .where('state', '=', 'ready')
      .where('id', '!=', id);
    equal =
      file.debug_id !== ''
        ? equal.where('debug_id', '=', file.debug_id)
        : equal.where('debug_id', '=', '').where('release', '=', file.release).where('filename', '=', file.filename);
    if (await equal.executeTakeFirst()) {
      const stillImporting = ctx.db
        .selectFrom('symbol_files')
        .select('id')
        .where('id', '=', id)
        .where('state', '=', IMPORTING);
      await ctx.db.deleteFrom('symbol_chunks').where('file_id', 'in', stillImporting).execute();
      await ctx.db.deleteFrom('symbol_files').where('id', '=', id).where('state', '=', IMPORTING).execute();
      ctx.notice(
        `symbol file ${file.filename} (${file.kind}, release ${file.release || 'none'}): an equal file is already here, kept instead`,
      );
    } else {
      await ctx.db
        .updateTable('symbol_files')
        .set({ state: 'ready' })
        .where('id', '=', id)
        .where('state', '=', IMPORTING)
        .execute();
    }
  }
}
