// Export and import of a whole instance or one project as newline-delimited JSON
// (DECISIONS "Export format"; spec "Export and import"). This domain owns the file
// format (format.ts), one descriptor per line type (line-types.ts: how its rows are read
// in key order, written as lines, checked and inserted if missing), the export reader
// (this file) and the importer (import.ts). It uses Web APIs only and takes plain
// streams and an injected blob codec (TransferRuntime), so the CLI (src/cli/transfer.ts)
// and a serverless edition's GET /api/export and POST /api/import share it.
//
// Export reads each line type's rows page by page in key order (ids, or the primary
// key), never holding more than a page: memory stays flat whatever the size.
import type { Store } from '../store/database.js';
import { FORMAT_VERSION, type MetaLine } from './format.js';
import type { ExportContext, TransferRuntime } from './line-type.js';
import { LINE_TYPES } from './line-types.js';

/** A request the export cannot serve (an unknown project). */
export class ExportInputError extends Error {}

export interface ExportOptions {
  /** Export only this project (slug). */
  project?: string;
  /** faultline's version, written into the meta line. */
  version: string;
  now?: () => number;
  /** Rows per query instead of each line type's default. */
  pageRows?: number;
}

export interface ExportProgress {
  /** Lines written so far, meta included. */
  lines: number;
  /** Lines expected (counted when the export started). */
  expected: number;
  /** Lines written per type so far. */
  counts: Record<string, number>;
}

export interface PreparedExport {
  meta: MetaLine;
  /** Lines the export expects to write, meta included (the database may change meanwhile). */
  expected: number;
  /** The file's text, a page of lines per chunk; `onProgress` hears after each chunk. */
  chunks(onProgress?: (progress: ExportProgress) => void): AsyncGenerator<string>;
  /** The same as a Web stream of UTF-8 bytes (for an HTTP answer). */
  stream(onProgress?: (progress: ExportProgress) => void): ReadableStream<Uint8Array>;
}

/** Opens an export: finds the projects, counts the lines, builds the meta line. */
export async function prepareExport(store: Store, runtime: TransferRuntime, options: ExportOptions): Promise<PreparedExport> {
  const db = store.db as ExportContext['db'];
  let query = db.selectFrom('projects').select(['id', 'slug']).orderBy('id');
  if (options.project !== undefined) query = query.where('slug', '=', options.project);
  const projects = await query.execute();
  if (options.project !== undefined && projects.length === 0) throw new ExportInputError(`no project with slug "${options.project}"`);
  const ctx: ExportContext = {
    db,
    dialect: store.dialect,
    runtime,
    projectId: options.project === undefined ? undefined : Number(projects[0].id),
    projectSlugs: new Map(projects.map((p) => [Number(p.id), p.slug as string])),
    pageRows: options.pageRows,
  };
  let expected = 1;
  for (const type of LINE_TYPES) expected += await type.count(ctx);
  const meta: MetaLine = {
    type: 'meta',
    format: FORMAT_VERSION,
    exported_at: new Date((options.now ?? Date.now)()).toISOString(),
    source: { faultline: options.version, database: store.dialect, project: options.project ?? null },
    expected_lines: expected,
  };

  async function* chunks(onProgress?: (progress: ExportProgress) => void): AsyncGenerator<string> {
    const counts: Record<string, number> = {};
    let lines = 1;
    yield JSON.stringify(meta) + '\n';
    for (const type of LINE_TYPES) {
      counts[type.type] = 0;
      for await (const page of type.read(ctx)) {
        let text = '';
        for (const line of page) text += JSON.stringify(line) + '\n';
        counts[type.type] += page.length;
        lines += page.length;
        yield text;
        onProgress?.({ lines, expected, counts });
      }
    }
    onProgress?.({ lines, expected, counts });
  }

  return {
    meta,
    expected,
    chunks,
    stream(onProgress) {
      const encoder = new TextEncoder();
      const source = chunks(onProgress);
      return new ReadableStream<Uint8Array>({
        async pull(controller) {
          const next = await source.next();
          if (next.done) controller.close();
          else controller.enqueue(encoder.encode(next.value));
        },
        async cancel() {
          await source.return(undefined);
        },
      });
    },
  };
}
