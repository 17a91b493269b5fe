// The dsym kind: Mach-O/DWARF debug files for iOS, macOS and other Apple-platform crashes.
// An upload (a Mach-O, thin or fat; zips are unpacked by the upload code) becomes one symbol
// file per architecture slice, named by its LC_UUID, with its lookup index built here once
// and stored beside it. At ingest, frames of `macho` images are symbolicated from that index
// alone (src/symbols/native holds the readers, the index and the frame rules).
import {
  SymbolInputError,
  type EventView,
  type FileInspector,
  type InspectedFile,
  type LoadedSymbols,
  type SymbolKindHandler,
  type SymbolLookup,
} from './kinds.js';
import { BadNativeFile } from './native/bytes.js';
import { debugIdsOfFrames, machoImages, symbolicateFrames, type JsonObject } from './native/frames.js';
import { buildNativeIndex, buildNativeIndexFrom, isCurrentNativeIndex, NativeIndex } from './native/lookup-index.js';
import { looksLikeMachO, readMachO, readMachOFrom, type MachSlice } from './native/macho.js';
import { bytesSource, concatBytes, type ByteRangeSource } from '../bytes.js';
import { basenameOf, type SymbolFileRow } from './storage.js';

export class LoadedDsym implements LoadedSymbols {
  readonly memoryBytes: number;
  constructor(
    readonly index: NativeIndex,
    size: number,
  ) {
    this.memoryBytes = size;
  }
}

/** Mach-O file types as sentry-cli names object kinds (`dif.data.type` of the assemble answer). */
const OBJECT_KINDS: Record<number, string> = { 1: 'rel', 2: 'exe', 4: 'dump', 6: 'lib', 8: 'lib', 10: 'dbg' };

/** What the listing and sentry-cli's assemble answer say about a slice. */
function describeSlice(slice: MachSlice): Record<string, unknown> {
  const hasDwarf = slice.sections.some((s) => s.segment === '__DWARF' && s.name === '__debug_info' && s.size > 0);
  const features = [...(hasDwarf ? ['debug'] : []), ...(slice.symtab && slice.symtab.nsyms > 0 ? ['symtab'] : [])];
  return { arch: slice.arch, object_kind: OBJECT_KINDS[slice.fileType] ?? 'other', features };
}

/**
 * Splits a Mach-O into its slices, each with its debug id and prebuilt index. Every slice
 * is checked before any index is built, so a bad slice is refused at once. The file is
 * read by ranges (headers, load commands, then each slice's DWARF sections and symbol
 * table), never whole.
 */
export async function inspectMachO(name: string, file: Uint8Array | ByteRangeSource): Promise<InspectedFile[]> {
  const source = file instanceof Uint8Array ? bytesSource(file) : file;
  try {
    const slices = await readMachOFrom(source);
    const fat = slices.length > 1 || slices[0].start !== 0;
    for (const slice of slices) {
      if (slice.debugId === '')
        throw new BadNativeFile(`${basenameOf(name)} (${slice.arch}) has no LC_UUID, so no debug id`);
    }
    const files: InspectedFile[] = [];
    for (const slice of slices) {
      files.push({
        ...(fat
          ? { range: [slice.start, slice.end] as [number, number], filename: `${basenameOf(name)} (${slice.arch})` }
          : {}),
        debugId: slice.debugId,
        meta: describeSlice(slice),
        index: await buildNativeIndexFrom(source, slice),
      });
    }
    return files;
  } catch (err) {
    if (err instanceof BadNativeFile)
      throw new SymbolInputError(`${basenameOf(name)} is not a readable Mach-O dSYM: ${err.message}`);
    throw err;
  }
}

function inspectDsym(name: string): FileInspector {
  // Mach-O is read at random offsets (load commands point anywhere): the bytes are read
  // back from where they were stored once the file is whole. Only its first bytes are
  // kept here, to tell a Mach-O from anything else.
  let head: Uint8Array = new Uint8Array(0);
  return {
    push(chunk) {
      if (head.byteLength < 4) head = concatBytes([head, chunk.subarray(0, 4 - head.byteLength)]);
    },
    async finish(stored) {
      if (!looksLikeMachO(head)) {
        throw new SymbolInputError(
          `${basenameOf(name)} is not a dSYM: expected a Mach-O file, thin or fat, or a zip of a .dSYM bundle holding one`,
        );
      }
      if (!stored) throw new Error('a dSYM is inspected from where it was stored');
      return inspectMachO(name, stored);
    },
  };
}

/** Native frames are those whose image is a Mach-O image of the event. */
function imagesNeeded(event: EventView): string[] {
  return debugIdsOfFrames(event.exceptions, machoImages(event.images));
}

export const dsymHandler: SymbolKindHandler<LoadedDsym> = {
  kind: 'dsym',
  recognises(_name, head) {
    return looksLikeMachO(head);
  },
  inspect: inspectDsym,
  // The stored index is all symbolication reads: the file's bytes stay in the database.
  loadsFromIndex: true,
  indexIsCurrent: isCurrentNativeIndex,
  async rebuildIndex(file, source) {
    // A stored dSYM file is one thin slice (a universal upload is split before it is stored).
    const slices = await readMachOFrom(source);
    const slice = slices.find((s) => s.debugId === file.debug_id) ?? slices[0];
    return buildNativeIndexFrom(source, slice);
  },
  load(_file: SymbolFileRow, bytes: Uint8Array, index: Uint8Array | null) {
    if (index) return new LoadedDsym(new NativeIndex(index), index.byteLength);
    // A file stored without its index (none was built): build it now, once per load.
    const [slice] = readMachO(bytes);
    const built = buildNativeIndex(bytes, slice);
    return new LoadedDsym(new NativeIndex(built), built.byteLength);
  },
  lookups(event) {
    return imagesNeeded(event).map((debugId) => ({ kind: 'dsym', by: 'debug_id', debugId }) satisfies SymbolLookup);
  },
  symbolicate(event, state, resolve) {
    const images = machoImages(event.images);
    if (images.length === 0) return;
    const demangle = state.demangle;
    symbolicateFrames(
      state as { frames: JsonObject[][]; changed: boolean },
      images,
      (image) => resolve({ kind: 'dsym', by: 'debug_id', debugId: image.debugId })[0]?.index ?? null,
      demangle,
    );
  },
};
