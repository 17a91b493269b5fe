// The breakpad kind: Breakpad `.sym` files (what dump_syms writes for any platform;
// docs/api.md "Native symbolication"). An upload is read line by line as it streams in
// and becomes one symbol file named by its MODULE line's debug id, with the same lookup
// index a dSYM or an ELF file gets (FUNC, line, INLINE and PUBLIC records), built here once
// and stored beside it. At ingest, frames of native images (`elf`, `macho`, `pe`) that no
// dSYM or ELF file symbolicated are looked up at `instruction_addr - image_addr`.
import {
  SymbolInputError,
  type EventView,
  type FileInspector,
  type LoadedSymbols,
  type SymbolKindHandler,
  type SymbolLookup,
} from './kinds.js';
import { BadNativeFile } from './native/bytes.js';
import { BreakpadReader } from './native/breakpad.js';
import { debugIdsOfFrames, nativeImages, symbolicateFrames, type JsonObject } from './native/frames.js';
import { indexFromTables, isCurrentNativeIndex, NativeIndex } from './native/lookup-index.js';
import { basenameOf, type SymbolFileRow } from './storage.js';
import type { ByteRangeSource } from '../bytes.js';

/** The image types whose frames a Breakpad file may serve. */
const IMAGE_TYPES = ['elf', 'macho', 'pe'];

export class LoadedBreakpad implements LoadedSymbols {
  readonly memoryBytes: number;
  constructor(
    readonly index: NativeIndex,
    size: number,
  ) {
    this.memoryBytes = size;
  }
}

/** Reads a whole .sym text (tests, the minidump processor, rebuilding an index). */
export function readBreakpad(bytes: Uint8Array, keepCfi = false): BreakpadReader {
  const reader = new BreakpadReader(keepCfi);
  reader.push(bytes);
  reader.finish();
  return reader;
}

export function breakpadIndex(reader: BreakpadReader): Uint8Array {
  const { source, tables } = reader.indexParts();
  return indexFromTables(source, tables);
}

function inspect(name: string): FileInspector {
  const reader = new BreakpadReader();
  let failure: unknown = null;
  return {
    push(chunk) {
      if (failure) return;
      try {
        reader.push(chunk);
      } catch (err) {
        failure = err;
      }
    },
    finish() {
      try {
        if (failure) throw failure;
        reader.finish();
      } catch (err) {
        if (err instanceof BadNativeFile)
          throw new SymbolInputError(`${basenameOf(name)} is not a Breakpad symbol file: ${err.message}`);
        throw err;
      }
      const module = reader.module!;
      const features = [
        ...(reader.funcs.length > 0 || reader.publics.length > 0 ? ['symtab'] : []),
        ...(reader.lineCount > 0 ? ['debug'] : []),
      ];
      return [
        {
          debugId: module.debugId,
          meta: {
            arch: module.arch,
            os: module.os,
            code_id: module.codeId || null,
            object_name: module.name,
            features,
          },
          index: breakpadIndex(reader),
        },
      ];
    },
  };
}

function imagesNeeded(event: EventView): string[] {
  return debugIdsOfFrames(event.exceptions, nativeImages(event.images, ...IMAGE_TYPES));
}

export const breakpadHandler: SymbolKindHandler<LoadedBreakpad> = {
  kind: 'breakpad',
  recognises: (_name, head) => new TextDecoder().decode(head.subarray(0, 7)) === 'MODULE ',
  inspect,
  loadsFromIndex: true,
  indexIsCurrent: isCurrentNativeIndex,
  async rebuildIndex(_file: SymbolFileRow, source: ByteRangeSource) {
    const reader = new BreakpadReader();
    const step = 4 * 1024 * 1024;
    for (let at = 0; at < source.size; at += step) reader.push(await source.read(at, Math.min(step, source.size - at)));
    reader.finish();
    return breakpadIndex(reader);
  },
  load(_file, bytes, index) {
    if (index) return new LoadedBreakpad(new NativeIndex(index), index.byteLength);
    const built = breakpadIndex(readBreakpad(bytes));
    return new LoadedBreakpad(new NativeIndex(built), built.byteLength);
  },
  lookups(event) {
    return imagesNeeded(event).map((debugId) => ({ kind: 'breakpad', by: 'debug_id', debugId }) satisfies SymbolLookup);
  },
  symbolicate(event, state, resolve) {
    const images = nativeImages(event.images, ...IMAGE_TYPES);
    if (images.length === 0) return;
    symbolicateFrames(
      state as { frames: JsonObject[][]; changed: boolean; nativeDone?: WeakSet<object> },
      images,
      (image) => resolve({ kind: 'breakpad', by: 'debug_id', debugId: image.debugId })[0]?.index ?? null,
      state.demangle,
    );
  },
};
