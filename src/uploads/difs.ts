// Debug information files from sentry-cli: `difs/assemble/` (chunked: dSYM slices,
// ProGuard mappings as `/proguard/<uuid>.txt`, ELF/PE/PDB/Breakpad/wasm files) and the
// legacy `files/dsyms/` ZIP upload of sentry-cli 2.x (`proguard/<uuid>.txt` entries,
// Mach-O files). Each file becomes a symbol file of its kind (ELF, PE, PDB, Breakpad,
// wasm and source bundles are kept-only kinds, symbolicating nothing; a source bundle
// under the debug id its manifest names); unknown files are refused with a detail
// sentry-cli prints, never stored half.
import {
  assembleOne,
  chunkBytes,
  chunkRangeSource,
  portableSha1,
  validateChunkList,
  type AssembleAnswer,
  type AssembleContext,
} from './assemble.js';
import { sourceBundleDebugId } from './bundles.js';
import { readChunk } from './chunks.js';
import { difFormat, difJson, proguardUuidOf, symbolKindOf, type DifFormat, type DifJson } from './dif.js';
import { UploadError } from './errors.js';
import type { StoredSymbolFile, SymbolFileToStore, SymbolPort } from './symbol-port.js';
import {
  isSafeArchivePath,
  readZipDirectory,
  readZipEntry,
  readZipEntryBytes,
  tooManyEntriesMessage,
  unpackedTooLargeMessage,
} from '../symbols/zip.js';
import { bytesSource, type ByteRangeSource } from '../bytes.js';
import { MAX_DIFS_PER_REQUEST } from '../limits.js';

export interface DifRequestFile {
  checksum: string;
  name: string;
  debugId?: string;
  chunks: string[];
}

/** The body of `difs/assemble/`: `{"<sha1>": {"name", "debug_id"?, "chunks": [...]}}`. */
export function parseDifAssembleBody(body: unknown): DifRequestFile[] {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw new UploadError(400, 'request body must be a JSON object keyed by file checksum');
  const entries = Object.entries(body as Record<string, unknown>);
  if (entries.length > MAX_DIFS_PER_REQUEST)
    throw new UploadError(400, `at most ${MAX_DIFS_PER_REQUEST} files per request`);
  return entries.map(([key, value]) => {
    if (value === null || typeof value !== 'object' || Array.isArray(value))
      throw new UploadError(400, `file ${key}: must be an object with name and chunks`);
    const v = value as Record<string, unknown>;
    const { checksum, chunks } = validateChunkList(key, v.chunks, `file ${key}`);
    if (typeof v.name !== 'string' || v.name === '')
      throw new UploadError(400, `file ${key}: name must be a non-empty string`);
    if (v.debug_id !== undefined && v.debug_id !== null && typeof v.debug_id !== 'string')
      throw new UploadError(400, `file ${key}: debug_id must be a string`);
    const debugId = typeof v.debug_id === 'string' && v.debug_id !== '' ? v.debug_id.toLowerCase() : undefined;
    return { checksum, name: v.name, debugId, chunks };
  });
}

const FORMAT_NAMES: Record<DifFormat, string> = {
  proguard: 'ProGuard mapping',
  macho: 'Mach-O (dSYM)',
  elf: 'ELF',
  pe: 'PE',
  pdb: 'PDB',
  wasm: 'WebAssembly',
  breakpad: 'Breakpad',
  sourcebundle: 'source bundle',
  dartsymbolmap: 'Dart symbol map',
  unknown: 'unknown',
};

/** The kind a debug file is stored as, or an UploadError naming what is not supported. */
export function kindForDif(name: string, head: Uint8Array, symbols: SymbolPort): string {
  const format = difFormat(name, head);
  const kind = symbolKindOf(format);
  if (!kind || !symbols.kinds().has(kind)) {
    throw new UploadError(
      400,
      `${FORMAT_NAMES[format]} debug files are not supported: Faultline accepts ProGuard mappings, Mach-O (dSYM), ELF, PE, PDB, Breakpad and WebAssembly files, and source bundles (file ${JSON.stringify(name)})`,
    );
  }
  return kind;
}

function basename(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

/** Answers one `difs/assemble/` request: each checksum of the request, with its state. */
export async function assembleDifs(
  ctx: AssembleContext,
  projectId: number,
  files: DifRequestFile[],
): Promise<Record<string, AssembleAnswer & { dif?: DifJson }>> {
  const out: Record<string, AssembleAnswer & { dif?: DifJson }> = {};
  for (const file of files) {
    const answer = await assembleOne(ctx, {
      projectIds: [projectId],
      kind: 'dif',
      checksum: file.checksum,
      chunks: file.chunks,
      name: file.name,
      run: async (sizes) => {
        const head = (await readChunk(ctx.db, file.chunks[0])) ?? new Uint8Array(0);
        const kind = kindForDif(file.name, head.subarray(0, 64), ctx.symbols);
        let size = 0;
        for (const c of file.chunks) size += sizes.get(c) ?? 0;
        const refusal = ctx.symbols.sizeRefusal(kind, file.name, size);
        if (refusal) throw new UploadError(400, refusal);
        const debugId =
          kind === 'proguard'
            ? proguardUuidOf(file.name)!
            : kind === 'sourcebundle'
              ? ((await sourceBundleDebugId(chunkRangeSource(ctx.db, file.chunks, sizes))) ?? file.debugId)
              : file.debugId;
        const stored = await ctx.symbols.storeAll(projectId, [
          {
            kind,
            filename: file.name,
            release: '',
            dist: '',
            debugId,
            source: chunkBytes(ctx.db, file.chunks, file.checksum, ctx.createSha1 ?? portableSha1),
          },
        ]);
        const match = stored.find((s) => !debugId || s.debugId === debugId) ?? stored[0];
        return { result: difJson(match, file.checksum, basename(file.name)), fileIds: stored.map((s) => s.id) };
      },
    });
    const { result, ...rest } = answer;
    out[file.checksum] = result ? { ...rest, dif: result as DifJson } : rest;
  }
  return out;
}

/**
 * The legacy upload: a ZIP of debug files. Entries named `proguard/<uuid>.txt` are
 * mappings; Mach-O entries are dSYMs; ELF, PE, PDB, Breakpad and wasm entries are kept
 * (without a debug id: the ZIP names none), source bundles under their manifest's debug
 * id; entries of no debug format (Info.plist) are skipped. All entries
 * are stored or none. Answers the stored files' `dif` objects.
 */
export async function storeDifZip(symbols: SymbolPort, projectId: number, zip: ByteRangeSource): Promise<DifJson[]> {
  const entries = await readZipDirectory(zip);
  const { maxEntries, maxUnpackedBytes } = symbols.archiveLimits();
  if (entries.length > maxEntries) throw new UploadError(400, tooManyEntriesMessage(maxEntries));
  const files: SymbolFileToStore[] = [];
  let unpacked = 0;
  for (const entry of entries) {
    if (!isSafeArchivePath(entry.name))
      throw new UploadError(400, `ZIP entry ${JSON.stringify(entry.name)} has an unsafe path`);
    const head = await firstBytes(zip, entry);
    const format = difFormat(entry.name, head);
    if (format === 'unknown' || basename(entry.name).startsWith('.')) continue;
    const kind = kindForDif(entry.name, head, symbols);
    // The sizes the directory records (reading holds each entry to its own) refuse a bomb
    // before anything is stored.
    const refusal = symbols.sizeRefusal(kind, `the zip entry ${JSON.stringify(entry.name)}`, entry.size);
    if (refusal) throw new UploadError(400, refusal);
    unpacked += entry.size;
    if (unpacked > maxUnpackedBytes) throw new UploadError(400, unpackedTooLargeMessage('the zip', maxUnpackedBytes));
    const debugId =
      kind === 'proguard'
        ? proguardUuidOf(entry.name)!
        : kind === 'sourcebundle'
          ? await sourceBundleDebugId(bytesSource(await readZipEntryBytes(zip, entry, symbols.fileLimit(kind))))
          : undefined;
    files.push({
      kind,
      filename: entry.name,
      release: '',
      dist: '',
      debugId,
      source: readZipEntry(zip, entry, symbols.fileLimit(kind)),
    });
  }
  if (files.length === 0) return [];
  const stored: StoredSymbolFile[] = await symbols.storeAll(projectId, files);
  return stored.map((s) => difJson(s, '', basename(s.filename)));
}

async function firstBytes(zip: ByteRangeSource, entry: Parameters<typeof readZipEntry>[1]): Promise<Uint8Array> {
  const it = readZipEntry(zip, entry);
  try {
    const first = await it.next();
    return first.done ? new Uint8Array(0) : first.value.subarray(0, 64);
  } finally {
    await it.return(undefined);
  }
}
