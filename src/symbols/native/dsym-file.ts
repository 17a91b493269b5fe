// What a dSYM upload is: a Mach-O file (thin or fat), or a zip holding one or more (a zipped
// `.dSYM` bundle keeps them under Contents/Resources/DWARF/). Each architecture slice with
// an LC_UUID becomes one symbol file: its own thin Mach-O bytes, its debug id, and the
// lookup index built from it once, here, at upload.

import { unzipSync } from 'fflate';
import { BadNativeFile } from './bytes.js';
import { buildNativeIndex } from './lookup-index.js';
import { looksLikeMachO, readMachO } from './macho.js';

export const MAX_ZIP_ENTRIES = 1_000;
export const MAX_ZIP_UNPACKED_BYTES = 1024 * 1024 * 1024;

export interface DsymSlice {
  debugId: string;
  arch: string;
  /** The name inside the upload (the bundle's DWARF file name), for listings. */
  name: string;
  /** A thin Mach-O file: the slice alone, offsets relative to its start. */
  bytes: Uint8Array;
}

function isZip(bytes: Uint8Array): boolean {
  return bytes.length >= 4 && bytes[0] === 0x50 && bytes[1] === 0x4b && (bytes[2] === 3 || bytes[2] === 5);
}

function baseName(path: string): string {
  const parts = path.split('/').filter((p) => p !== '');
  return parts.length > 0 ? parts[parts.length - 1] : path;
}

/** Every slice of a Mach-O file, copied out as thin files. Throws BadNativeFile. */
export function machOSlices(bytes: Uint8Array, name: string): DsymSlice[] {
  const out: DsymSlice[] = [];
  for (const slice of readMachO(bytes)) {
    if (slice.debugId === '') throw new BadNativeFile(`${name} (${slice.arch}) has no LC_UUID, so no debug id`);
    out.push({ debugId: slice.debugId, arch: slice.arch, name, bytes: bytes.slice(slice.start, slice.end) });
  }
  return out;
}

/**
 * Splits a dSYM upload into one thin Mach-O per slice. A file that is neither a Mach-O nor a
 * zip holding one throws BadNativeFile (the route answers 400 and stores nothing).
 */
export function readDsymUpload(bytes: Uint8Array, filename: string): DsymSlice[] {
  if (looksLikeMachO(bytes)) return machOSlices(bytes, baseName(filename));
  if (!isZip(bytes)) throw new BadNativeFile('a dSYM must be a Mach-O file, or a zip of a .dSYM bundle holding one');
  let entries = 0;
  let unpacked = 0;
  let files: Record<string, Uint8Array>;
  try {
    files = unzipSync(bytes, {
      filter: (file) => {
        if (++entries > MAX_ZIP_ENTRIES) throw new BadNativeFile(`zip holds more than ${MAX_ZIP_ENTRIES} entries`);
        if (file.name.endsWith('/') || file.name.endsWith('.plist') || file.name.includes('__MACOSX/')) return false;
        unpacked += file.originalSize;
        if (unpacked > MAX_ZIP_UNPACKED_BYTES) throw new BadNativeFile('zip unpacks to more than 1 GB');
        return true;
      },
    });
  } catch (error) {
    if (error instanceof BadNativeFile) throw error;
    throw new BadNativeFile(`unreadable zip: ${(error as Error).message}`);
  }
  const out: DsymSlice[] = [];
  const seen = new Set<string>();
  for (const [path, content] of Object.entries(files)) {
    if (!looksLikeMachO(content)) continue;
    for (const slice of machOSlices(content, baseName(path))) {
      if (seen.has(slice.debugId)) continue;
      seen.add(slice.debugId);
      out.push(slice);
    }
  }
  if (out.length === 0) throw new BadNativeFile('the zip holds no Mach-O file');
  return out;
}

/** The stored lookup index of one thin slice (see lookup-index.ts). Throws BadNativeFile. */
export function buildDsymIndex(slice: DsymSlice): Uint8Array {
  const [thin] = readMachO(slice.bytes);
  return buildNativeIndex(slice.bytes, thin);
}
