// What the uploader needs from symbol storage (src/symbols), named from the uploader's
// side: store several files all or nothing, each read as a stream while it is stored,
// and find stored files by debug id. src/uploads/symbols-adapter.ts implements it on
// the SymbolService's intake; keeping the uploader's code on this narrow port keeps the two
// domains' coupling in one file.
export interface SymbolFileToStore {
  kind: string;
  /** The uploaded name (zip path, `/proguard/<uuid>.txt`, `~/app.min.js.map`, `App`). */
  filename: string;
  release: string;
  dist: string;
  debugId?: string;
  /** Source maps: the minified file the map serves. */
  serves?: string;
  /** The bytes, read once, in order, while the file is stored. */
  source: AsyncIterable<Uint8Array>;
}

export interface StoredSymbolFile {
  id: number;
  kind: string;
  debugId: string;
  filename: string;
  size: number;
  release: string;
  uploadedAt: number;
  meta: Record<string, unknown>;
}

export interface SymbolPort {
  /** The kinds storage accepts now (a kind registered by its handler). */
  kinds(): ReadonlySet<string>;
  /**
   * Stores every file or none: a file that is not of its kind (or a source that throws)
   * leaves nothing stored and rethrows (UploadError for what the client sent wrong).
   * One upload may yield several stored files (a fat Mach-O's slices).
   */
  storeAll(projectId: number, files: SymbolFileToStore[]): Promise<StoredSymbolFile[]>;
  /**
   * Why a file of this kind and size would be refused for its size (the message the
   * client prints), or null; lets an assembly refuse before reading its chunks.
   */
  sizeRefusal(kind: string, filename: string, size: number): string | null;
  /**
   * The largest file of any kind these routes store (the Symbols routes' per-file limit):
   * what `chunk-upload/` advertises and what an assembly may add up to.
   */
  maxFileBytes(): number;
  /** The largest file of a kind these routes store. */
  fileLimit(kind: string): number;
  /** Entries and unpacked bytes of a ZIP whose files are stored (the Symbols routes' zip limits). */
  archiveLimits(): { maxEntries: number; maxUnpackedBytes: number };
  /** True when every one of these files is still stored (none deleted since). */
  allStored(ids: number[]): Promise<boolean>;
  /** Stored files of the project with this debug id, newest first. */
  findByDebugId(projectId: number, debugId: string): Promise<StoredSymbolFile[]>;
}
