// The elf kind: ELF executables, shared objects and split debug files for Linux and
// Android crashes (docs/api.md "Native symbolication"). An upload is one symbol file named
// by the debug id Sentry derives from the GNU build id, with its lookup index (DWARF
// through the same reader as dSYMs, and the symbol tables) built here once and stored
// beside it. A split `.debug` file and its stripped object share the build id: both are
// kept (their `serves` is the role, `debug` or `symtab`, and a file only replaces one of
// its role), and frames use the one with DWARF first. At ingest, frames of `elf` images
// are symbolicated from the stored indexes alone.
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
import {
  elfHasDwarf,
  elfIndexParts,
  inflateElfDebugSections,
  elfDwarfRanges,
  elfSymbolRanges,
  elfObjectKind,
  elfSection,
  elfStreamedInfo,
  looksLikeElf,
  movedElf,
  readElf,
  readElfFrom,
  type ElfFile,
} from './native/elf.js';
import { debugIdsOfFrames, nativeImages, symbolicateFrames, type JsonObject } from './native/frames.js';
import {
  buildIndex,
  buildIndexAsync,
  gatherRanges,
  isCurrentNativeIndex,
  NativeIndex,
  type IndexSource,
} from './native/lookup-index.js';
import { bytesSource, concatBytes, type ByteRangeSource } from '../bytes.js';
import { basenameOf, type SymbolFileRow } from './storage.js';

export class LoadedElf implements LoadedSymbols {
  readonly memoryBytes: number;
  constructor(
    readonly index: NativeIndex,
    size: number,
  ) {
    this.memoryBytes = size;
  }
}

/** What the listing and sentry-cli's assemble answer say about a file. */
export function describeElf(elf: ElfFile): Record<string, unknown> {
  const features = [
    ...(elfSection(elf, '.symtab') || elfSection(elf, '.dynsym') ? ['symtab'] : []),
    ...(elfHasDwarf(elf) ? ['debug'] : []),
    ...(elfSection(elf, '.eh_frame') || elfSection(elf, '.debug_frame') ? ['unwind'] : []),
  ];
  return {
    arch: elf.arch,
    object_kind: elfObjectKind(elf),
    features,
    code_id: elf.codeId || null,
    ...(elf.debugLink ? { debug_link: elf.debugLink.name } : {}),
  };
}

function indexSource(raw: Uint8Array, rawElf: ElfFile): IndexSource {
  const { bytes, elf } = inflateElfDebugSections(raw, rawElf);
  const { sections, symbols } = elfIndexParts(bytes, elf);
  return { arch: elf.arch, debugId: elf.debugId, textVmaddr: elf.loadAddress, sections, symbols };
}

/**
 * What the index is built from, read from `source`: `.debug_info`, the largest section, is
 * read by the DWARF reader a window at a time; the sections it points into are gathered.
 * The symbol tables are gathered apart and read first, so their bytes are not held while
 * DWARF is read. (Only the result holds the gathered bytes, so the index build can release
 * them once the names are read.)
 */
async function gatheredSource(
  source: ByteRangeSource,
  elf: ElfFile,
  infoWindowBytes: number | undefined,
): Promise<IndexSource> {
  const info = elfStreamedInfo(elf);
  const symbols = await (async () => {
    const { bytes, moved } = await gatherRanges(source, elfSymbolRanges(elf));
    return elfIndexParts(bytes, movedElf(elf, moved, bytes.byteLength)).symbols;
  })();
  const { bytes, moved } = await gatherRanges(source, elfDwarfRanges(elf, info));
  const parts = indexSource(bytes, movedElf(elf, moved, bytes.byteLength));
  parts.symbols = symbols;
  if (info) {
    parts.sections.info = { start: info.fileOffset, end: info.fileOffset + info.size };
    parts.sections.infoSource = source;
    parts.sections.infoWindowBytes = infoWindowBytes;
  }
  return parts;
}

/**
 * Reads an ELF file by ranges, checks it, and builds its index. `infoWindowBytes`: how much
 * of `.debug_info` the DWARF reader reads at once (tests make it tiny).
 */
export async function inspectElf(
  name: string,
  file: Uint8Array | ByteRangeSource,
  infoWindowBytes?: number,
): Promise<InspectedFile[]> {
  const source = file instanceof Uint8Array ? bytesSource(file) : file;
  try {
    const elf = await readElfFrom(source);
    if (elf.debugId === '') throw new BadNativeFile('it has no GNU build id and no .text to derive a debug id from');
    const index = await buildIndexAsync(await gatheredSource(source, elf, infoWindowBytes));
    return [{ debugId: elf.debugId, serves: elfHasDwarf(elf) ? 'debug' : 'symtab', meta: describeElf(elf), index }];
  } catch (err) {
    if (err instanceof BadNativeFile)
      throw new SymbolInputError(`${basenameOf(name)} is not a readable ELF file: ${err.message}`);
    throw err;
  }
}

function inspect(name: string): FileInspector {
  // ELF is read at random offsets (headers point anywhere): the bytes are read back from
  // where they were stored once the file is whole; only the magic is kept here.
  let head: Uint8Array = new Uint8Array(0);
  return {
    push(chunk) {
      if (head.byteLength < 4) head = concatBytes([head, chunk.subarray(0, 4 - head.byteLength)]);
    },
    async finish(stored) {
      if (!looksLikeElf(head)) throw new SymbolInputError(`${basenameOf(name)} is not an ELF file`);
      if (!stored) throw new Error('an ELF file is inspected from where it was stored');
      return inspectElf(name, stored);
    },
  };
}

function imagesNeeded(event: EventView): string[] {
  return debugIdsOfFrames(event.exceptions, nativeImages(event.images, 'elf'));
}

/** Of the files with one debug id, the one with DWARF (a split debug file) before a stripped one. */
export function bestIndex(loaded: LoadedElf[]): NativeIndex | null {
  return (loaded.find((l) => l.index.hasDebugInfo) ?? loaded[0])?.index ?? null;
}

export const elfHandler: SymbolKindHandler<LoadedElf> = {
  kind: 'elf',
  recognises: (_name, head) => looksLikeElf(head),
  inspect,
  loadsFromIndex: true,
  indexIsCurrent: isCurrentNativeIndex,
  async rebuildIndex(file, source) {
    const [inspected] = await inspectElf(file.filename, source);
    return inspected.index!;
  },
  load(_file: SymbolFileRow, _bytes: Uint8Array, index: Uint8Array | null) {
    if (index) return new LoadedElf(new NativeIndex(index), index.byteLength);
    throw new BadNativeFile('an ELF file is loaded from its index');
  },
  lookups(event) {
    return imagesNeeded(event).map((debugId) => ({ kind: 'elf', by: 'debug_id', debugId }) satisfies SymbolLookup);
  },
  symbolicate(event, state, resolve) {
    const images = nativeImages(event.images, 'elf');
    if (images.length === 0) return;
    symbolicateFrames(
      state as { frames: JsonObject[][]; changed: boolean },
      images,
      (image) => bestIndex(resolve({ kind: 'elf', by: 'debug_id', debugId: image.debugId })),
      state.demangle,
    );
  },
};

/** Builds an ELF file's index from its bytes in memory (tests, benchmarks, a file stored without one). */
export async function buildElfIndex(bytes: Uint8Array): Promise<{ elf: ElfFile; index: Uint8Array }> {
  const elf = await readElf(bytes);
  return { elf, index: buildIndex(indexSource(bytes, elf)) };
}
