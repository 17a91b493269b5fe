// The kind-handler registry: what each kind of symbol file (proguard, sourcemap, dsym, elf, …)
// knows about itself. A handler checks a file while it streams into storage (and may
// split one upload into several files with their own debug ids, e.g. a fat Mach-O into
// its slices, or build a derived lookup index), parses a stored file into what
// symbolication uses (cached by the service), names the files an event needs, and
// rewrites the event's frames. The upload code, the cache and the ingest hook are
// kind-agnostic: a new kind is one handler in the list an edition builds
// (`defaultSymbolKinds()` in default-kinds.ts) and passes to the SymbolService. The list
// is a value, not a registry: its order is the order handlers rewrite frames in.
import type { NormalizedException, NormalizedFrame } from '../ingest/types.js';
import type { SymbolFileRow, SymbolKind } from './storage.js';
import type { ByteRangeSource } from '../bytes.js';
import type { Demangler } from './native/demangle.js';

/** A file (or an upload) that is not what it claims to be, or is too big: 400, nothing stored. */
export class SymbolInputError extends Error {
  readonly status = 400;
}

/** One symbol file an inspected upload yields. */
export interface InspectedFile {
  /** The byte range of the upload this file is ([start, end)); absent for the whole upload. */
  range?: [number, number];
  debugId?: string;
  /** Source maps: the minified file the map serves. */
  serves?: string;
  /** Overrides the uploaded name (e.g. a slice's `App (arm64)`). */
  filename?: string;
  meta?: Record<string, unknown>;
  /** A derived lookup index stored beside the file (part 1), built once here. */
  index?: Uint8Array;
}

/** Sees a file's bytes as they are stored; throws SymbolInputError when they are not of the kind. */
export interface FileInspector {
  push(chunk: Uint8Array): void;
  /**
   * At the end of the file: the symbol files it yields (at least one), or SymbolInputError.
   * `stored` reads the file back by ranges from where it was stored (for formats read at
   * random offsets, which need not hold the file while it streams in).
   */
  finish(stored?: ByteRangeSource): Promise<InspectedFile[]> | InspectedFile[];
}

/** What `load` returns: anything, with an estimate of its memory for the cache's byte bound. */
export interface LoadedSymbols {
  memoryBytes: number;
}

/** The facts of an event symbolication reads (from the parsed payload and the normaliser). */
export interface EventView {
  platform: string;
  release: string;
  dist: string;
  /** `debug_meta.images`. */
  images: Record<string, unknown>[];
  /** The exception chain as normalised (frames oldest call first, as SDKs send them). */
  exceptions: NormalizedException[];
}

/** A symbol file an event needs: by debug id, or by release (+ dist) and a frame's file name. */
export type SymbolLookup =
  | { kind: SymbolKind; by: 'debug_id'; debugId: string }
  | { kind: SymbolKind; by: 'release'; release: string; dist: string; name?: string };

export function lookupKey(l: SymbolLookup): string {
  return l.by === 'debug_id' ? `${l.kind}|d|${l.debugId}` : `${l.kind}|r|${l.release}|${l.dist}|${l.name ?? ''}`;
}

/** The current frames and types of each exception, which handlers rewrite in turn. */
export interface SymbolicationState {
  frames: NormalizedFrame[][];
  /** Remapped exception type and module (ProGuard), per exception; undefined = unchanged. */
  types: ({ type: string; module?: string } | undefined)[];
  /** Set by a handler that changed anything. */
  changed: boolean;
  /** Frames a native kind produced, which later native kinds (Breakpad after ELF) leave alone. */
  nativeDone?: WeakSet<object>;
  /** C++/Rust names to readable ones (the edition's demangler); absent, native names stay mangled. */
  demangle?: Demangler;
}

export interface SymbolKindHandler<L extends LoadedSymbols = LoadedSymbols> {
  kind: SymbolKind;
  /**
   * Whether a zip entry is a file of this kind (by name and first bytes). Entries that are
   * not are skipped; an entry that is but fails `inspect` refuses the upload.
   */
  recognises(name: string, head: Uint8Array): boolean;
  /** A checker for one file named `name` (its path in a zip, or the uploaded file name). */
  inspect(name: string): FileInspector;
  /**
   * True when `load` needs only the derived index of a file that has one (its bytes are
   * then not read: `load` gets an empty array).
   */
  loadsFromIndex?: boolean;
  /**
   * False when a stored derived index is of another format version than this build
   * writes: the service then rebuilds it from the stored file (`rebuildIndex`), saves it
   * and loads from the new one, so a format change never disables stored files.
   */
  indexIsCurrent?(index: Uint8Array): boolean;
  /** Builds a stored file's derived index again, reading the file by ranges. */
  rebuildIndex?(file: SymbolFileRow, source: ByteRangeSource): Promise<Uint8Array>;
  /** Parses a stored file (and its derived index) for symbolication. Throws on a corrupt file. */
  load(file: SymbolFileRow, bytes: Uint8Array, index: Uint8Array | null): L;
  /**
   * `load` in two halves, for kinds whose parse is long (source maps): `parse` builds plain
   * data (typed arrays, strings, lists) that an edition may build on another thread and
   * transfer (SymbolParser), `fromParsed` wraps it.
   */
  parse?(file: SymbolFileRow, bytes: Uint8Array, index: Uint8Array | null): unknown;
  fromParsed?(data: unknown): L;
  /** The symbol files this event would use, in order of preference. Pure; no I/O. */
  lookups(event: EventView): SymbolLookup[];
  /**
   * Rewrites `state` with the loaded files (`resolve` answers a lookup of `lookups` with the
   * files found, best first). Never throws on odd frames: a frame it cannot map stays as it is.
   */
  symbolicate(event: EventView, state: SymbolicationState, resolve: (lookup: SymbolLookup) => L[]): void;
}

/**
 * Runs a kind's `parse` off the caller's event loop (the Node edition: a worker thread,
 * src/editions/node/symbol-parse-thread.ts); rejects with the parse's error.
 */
export interface SymbolParser {
  parse(kind: SymbolKind, file: SymbolFileRow, bytes: Uint8Array, index: Uint8Array | null): Promise<unknown>;
  close(): Promise<void>;
}

/** The handlers of an edition, in the order they rewrite an event's frames. */
export type SymbolKinds = readonly SymbolKindHandler[];

/** The handler of a kind in an edition's list; undefined when the edition has none for it. */
export function handlerOf(kinds: SymbolKinds, kind: string): SymbolKindHandler | undefined {
  return kinds.find((h) => h.kind === kind);
}

/** Refuses a list naming a kind twice (its second handler would never be asked). */
export function checkSymbolKinds(kinds: SymbolKinds): void {
  const seen = new Set<string>();
  for (const h of kinds) {
    if (seen.has(h.kind)) throw new Error(`symbol kind ${h.kind} has two handlers`);
    seen.add(h.kind);
  }
}
