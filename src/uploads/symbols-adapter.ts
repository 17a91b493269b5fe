// The uploader's SymbolPort on the SymbolService (src/symbols): every file of one upload
// is staged through the service's intake, the one the Symbols routes use (each file
// checked by its kind's handler as it streams into a pending row, a fat Mach-O split into
// its slices, the debug-id rule of src/symbols/debug-id.ts), then committed at once (one
// transaction; on D1 one batch) or all discarded; the service then forgets what it
// cached of the project and re-symbolicates recent events of the releases uploaded to.
// Files have the Symbols routes' limits (256 MB per file; on the serverless edition what
// an isolate can parse): a larger file is refused with the Symbols routes' message and
// nothing of it is stored. Finding stored files reads symbol storage directly.
import type { Store } from '../store/database.js';
import { SymbolInputError } from '../symbols/kinds.js';
import type { SymbolService } from '../symbols/service.js';
import type { SymbolFileRow, SymbolKind } from '../symbols/storage.js';
import { tooLargeMessage, UPLOAD_LIMITS } from '../symbols/upload.js';
import { UploadError } from './errors.js';
import type { StoredSymbolFile, SymbolFileToStore, SymbolPort } from './symbol-port.js';

function stored(row: SymbolFileRow): StoredSymbolFile {
  let meta: Record<string, unknown> = {};
  try {
    meta = JSON.parse(row.meta) as Record<string, unknown>;
  } catch {
    meta = {};
  }
  return {
    id: Number(row.id),
    kind: row.kind,
    debugId: row.debug_id,
    filename: row.filename,
    size: Number(row.size),
    release: row.release,
    uploadedAt: Number(row.uploaded_at),
    meta,
  };
}

function serviceOf(deps: { symbols?: SymbolService }): SymbolService {
  if (!deps.symbols) throw new UploadError(503, 'symbol storage is not available in this edition');
  return deps.symbols;
}

export function symbolPortFor(deps: { store: Store; symbols?: SymbolService }): SymbolPort {
  const db = deps.store.db;
  const limits = () => deps.symbols?.uploaderLimits ?? UPLOAD_LIMITS;
  const fileLimit = (kind: string) => limits().maxFileBytesByKind?.[kind as SymbolKind] ?? limits().maxFileBytes;
  return {
    kinds: () => deps.symbols?.kindNames ?? new Set<string>(),

    async storeAll(projectId: number, files: SymbolFileToStore[]) {
      const intake = serviceOf(deps).beginUpload();
      try {
        for (const file of files) {
          const { kind, filename, release, dist, debugId, serves, source } = file;
          await intake.stageFile(
            { projectId, kind: kind as SymbolKind, filename, release, dist, debugId, serves },
            source,
          );
        }
        return (await intake.commit()).map(stored);
      } catch (err) {
        await intake.abort();
        if (err instanceof SymbolInputError) throw new UploadError(400, err.message);
        throw err;
      }
    },

    sizeRefusal(kind: string, filename: string, size: number) {
      const max = fileLimit(kind);
      return size > max ? tooLargeMessage(filename, max) : null;
    },

    maxFileBytes: () => Math.max(limits().maxFileBytes, ...Object.values(limits().maxFileBytesByKind ?? {})),
    fileLimit,
    archiveLimits: () => ({ maxEntries: limits().maxZipEntries, maxUnpackedBytes: limits().maxZipUnpackedBytes }),

    async allStored(ids: number[]) {
      const unique = [...new Set(ids)];
      for (let i = 0; i < unique.length; i += 500) {
        const part = unique.slice(i, i + 500);
        const rows = await db
          .selectFrom('symbol_files')
          .select('id')
          .where('id', 'in', part)
          .where('state', '=', 'ready')
          .execute();
        if (rows.length !== part.length) return false;
      }
      return true;
    },

    async findByDebugId(projectId: number, debugId: string) {
      const rows = await db
        .selectFrom('symbol_files')
        .selectAll()
        .where('project_id', '=', projectId)
        .where('debug_id', '=', debugId.toLowerCase())
        .where('state', '=', 'ready')
        .orderBy('id', 'desc')
        .execute();
      return rows.map(stored);
    },
  };
}
