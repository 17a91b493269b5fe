// Export and import over HTTP, as functions a route mounts (the serverless edition's
// `GET /api/export` and `POST /api/import`; the server edition has the CLI instead).
// They take a Web Request or URL and answer a Web Response, so they run in any edition.
//
// An export can be split over several requests: `limit` lines at most per answer (after
// the page that reaches it), and when more remain the answer's last line is
// `{"type":"continue","cursor":"…"}`; the next request passes that cursor and gets the
// following lines (no meta line). An import can be split anywhere between lines, since
// it is idempotent; each request's body starts with the file's meta line.
import type { Store } from '../store/database.js';
import { decodePosition, encodeLines, encodePosition, ExportInputError, prepareExport } from './export.js';
import { ImportRefusedError, importNdjson } from './import.js';
import type { TransferRuntime } from './line-type.js';
import { EXPORT_PART_LINES, MAX_EXPORT_PART_LINES } from '../limits.js';

export interface TransferHttpDeps {
  store: Store;
  runtime: TransferRuntime;
  version: string;
  /** Whether an export reads in one read transaction (see ExportOptions.snapshot). */
  snapshot?: boolean;
  /** Lines per export answer unless the request asks for fewer (default EXPORT_PART_LINES). */
  partLines?: number;
  /** Batch sizes of an import (the serverless edition keeps them small: see its deps). */
  importBatch?: { lines?: number; chars?: number };
}

function jsonError(status: number, error: string): Response {
  return new Response(JSON.stringify({ error }), { status, headers: { 'content-type': 'application/json' } });
}

/** `GET /api/export[?project=slug][&cursor=…][&limit=n]`: newline-delimited JSON. */
export async function exportResponse(deps: TransferHttpDeps, url: URL): Promise<Response> {
  const project = url.searchParams.get('project') ?? undefined;
  const cursor = url.searchParams.get('cursor');
  const limitText = url.searchParams.get('limit');
  const limit = limitText === null ? (deps.partLines ?? EXPORT_PART_LINES) : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_EXPORT_PART_LINES) {
    return jsonError(400, `limit must be an integer between 1 and ${MAX_EXPORT_PART_LINES}`);
  }
  let prepared;
  let start;
  try {
    start = cursor === null ? undefined : decodePosition(cursor);
    // Pages no larger than the part, so an answer holds at most about twice `limit` lines.
    prepared = await prepareExport(deps.store, deps.runtime, {
      project,
      version: deps.version,
      count: start === undefined,
      pageRows: Math.min(limit, 1000),
      snapshot: deps.snapshot,
    });
  } catch (err) {
    if (err instanceof ExportInputError)
      return jsonError(err.message.startsWith('no project') ? 404 : 400, err.message);
    throw err;
  }
  const chunks = prepared.chunks({ start, maxLines: limit });
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const item = await chunks.next();
      if (!item.done) {
        controller.enqueue(item.value);
        return;
      }
      const next = prepared.next();
      if (next) controller.enqueue(encodeLines([{ type: 'continue', cursor: encodePosition(next) }]));
      controller.close();
    },
    async cancel() {
      await chunks.return(undefined);
    },
  });
  return new Response(body, { headers: { 'content-type': 'application/x-ndjson; charset=utf-8' } });
}

/** `POST /api/import` with an export (or a part of one, meta line first) as the body: the summary as JSON. */
export async function importResponse(deps: TransferHttpDeps, request: Request): Promise<Response> {
  if (!request.body) return jsonError(400, 'the body must be an export file (newline-delimited JSON)');
  const notices: string[] = [];
  try {
    const summary = await importNdjson(deps.store, deps.runtime, request.body as unknown as AsyncIterable<Uint8Array>, {
      notice: (message) => notices.push(message),
      batchLines: deps.importBatch?.lines,
      batchChars: deps.importBatch?.chars,
    });
    return new Response(JSON.stringify({ ...summary, notices }), { headers: { 'content-type': 'application/json' } });
  } catch (err) {
    if (err instanceof ImportRefusedError) return jsonError(400, `import refused, nothing written: ${err.message}`);
    throw err;
  }
}
