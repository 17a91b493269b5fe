// The uploader's SymbolPort on symbol storage (src/symbols): each file streams into a
// pending row while its kind's inspector checks it (the checks a management-API upload
// gets), an inspector's several files (a fat Mach-O's slices) become ranges of it, and
// every file of one upload is committed at once (one transaction; on D1 one batch), or
// all are discarded. Then the symbol service forgets what it cached of the project and
// re-symbolicates recent events of the releases uploaded to, as after a management-API
// upload. Files have the Symbols routes' limits (256 MB per file; on the serverless
// edition what an isolate can parse): a larger file is refused with the Symbols routes'
// message and nothing of it is stored.
import type { Store } from '../store/database.js';
import type { SymbolService } from '../symbols/service.js';
import { SymbolInputError, symbolKindHandler, symbolKindHandlers } from '../symbols/kinds.js';
import '../symbols/register.js';
import { tooLargeMessage, UPLOAD_LIMITS } from '../symbols/upload.js';
import {
  commitSymbolFiles,
  copyPendingRange,
  discardSymbolFiles,
  isKeptKind,
  saveDerivedIndex,
  storedFileSource,
  SymbolTooLargeError,
  writePendingFile,
  type FinalFacts,
  type SymbolFileMeta,
  type SymbolFileRow,
  type SymbolKind,
} from '../symbols/storage.js';
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

async function* tapped(source: AsyncIterable<Uint8Array>, push: (chunk: Uint8Array) => void): AsyncGenerator<Uint8Array> {
  for await (const chunk of source) {
    push(chunk);
    yield chunk;
  }
}

export function symbolPortFor(deps: { store: Store; symbols?: SymbolService }): SymbolPort {
  const db = deps.store.db;
  const limits = () => deps.symbols?.uploaderLimits ?? UPLOAD_LIMITS;
  const fileLimit = (kind: string) => limits().maxFileBytesByKind?.[kind as SymbolKind] ?? limits().maxFileBytes;
  return {
    kinds: () => new Set(symbolKindHandlers().map((h) => h.kind)),

    async storeAll(projectId: number, files: SymbolFileToStore[], now: number) {
      const written: number[] = [];
      const commits: { id: number; final?: FinalFacts }[] = [];
      try {
        for (const file of files) {
          const handler = symbolKindHandler(file.kind as SymbolKind);
          if (!handler) throw new UploadError(400, `${file.kind} support not available`);
          const inspector = handler.inspect(file.filename);
          const meta: SymbolFileMeta = {
            projectId,
            kind: file.kind as SymbolKind,
            release: file.release,
            dist: file.dist,
            filename: file.filename,
            debugId: file.debugId,
            serves: file.serves,
          };
          const max = fileLimit(meta.kind);
          const whole = await writePendingFile(db, meta, tapped(file.source, (chunk) => inspector.push(chunk)), now, max).catch((err: unknown) => {
            if (err instanceof SymbolTooLargeError) throw new UploadError(400, tooLargeMessage(file.filename, max));
            throw err;
          });
          written.push(whole.id);
          const inspected = await inspector.finish(storedFileSource(db, whole.id, whole.size));
          for (const found of inspected) {
            let id = whole.id;
            if (found.range && !(found.range[0] === 0 && found.range[1] === whole.size)) {
              id = (await copyPendingRange(db, whole.id, meta, found.range[0], found.range[1], now)).id;
              written.push(id);
            }
            if (found.index) {
              const index = found.index;
              await saveDerivedIndex(db, id, (async function* () {
                yield index;
              })());
            }
            // ProGuard: the UUID the client names the mapping by is what its events reference.
            const debugId = file.kind === 'proguard' ? (file.debugId ?? found.debugId) : (found.debugId ?? file.debugId);
            commits.push({ id, final: { debugId: debugId ?? '', serves: file.serves ?? found.serves, filename: found.filename, meta: found.meta } });
          }
        }
        const replaced: number[] = [];
        const rows = await commitSymbolFiles(deps.store, commits, (ids) => replaced.push(...ids));
        const kept = new Set(commits.map((c) => c.id));
        await discardSymbolFiles(db, written.filter((id) => !kept.has(id)));
        deps.symbols?.invalidate(projectId, replaced);
        // Kept-only files symbolicate nothing: no event changes, so none is re-symbolicated.
        const symbolicating = rows.filter((r) => !isKeptKind(r.kind));
        for (const release of new Set(symbolicating.map((r) => r.release))) await deps.symbols?.resymbolicate(projectId, release);
        return rows.map(stored);
      } catch (err) {
        await discardSymbolFiles(db, written).catch(() => undefined);
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
        const rows = await db.selectFrom('symbol_files').select('id').where('id', 'in', part).where('state', '=', 'ready').execute();
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
