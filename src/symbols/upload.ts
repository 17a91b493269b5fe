// Taking in an upload: one file or a zip of many, streamed. Each file is checked by its
// kind's handler while its bytes go into storage as a pending (invisible) row; when
// every file of the upload passed, one transaction makes them visible and applies the
// replacement rule. Anything wrong (a file not of its kind, a truncated zip, a zip bomb,
// a path escaping the zip) refuses the whole upload with a SymbolInputError and removes
// what was written: nothing is stored.
//
// Limits (docs/api.md "Symbols"): 256 MB per file; a zip holds at most 1 000 entries and
// 1 GB unpacked. Zip data is inflated 16 KB of input at a time, so one step never
// produces more than about 16 MB, and the upload stops as soon as a limit is passed. A
// zip is read as it streams in, so its central directory (at its end) is checked last:
// each entry's CRC-32, its encryption flag and the list of entries must match what was
// read (src/symbols/zip.ts holds the ZIP rules every route applies).
import { Unzip, UnzipInflate, type UnzipFile } from 'fflate';
import type { Kysely } from 'kysely';
import type { Database } from '../store/schema.js';
import { handlerOf, SymbolInputError, type FileInspector, type InspectedFile, type SymbolKindHandler, type SymbolKinds } from './kinds.js';
import { storedDebugId } from './debug-id.js';
import {
  commitSymbolFiles,
  copyPendingRange,
  discardSymbolFiles,
  iterateBytes,
  openPendingFile,
  saveDerivedIndex,
  storedFileSource,
  SymbolTooLargeError,
  type ByteSource,
  type CommitTarget,
  type PendingWriter,
  type SymbolFileMeta,
  type SymbolFileRow,
  type SymbolKind,
} from './storage.js';
import { MAX_SYMBOL_FILE_BYTES, MAX_ZIP_ENTRIES, MAX_ZIP_UNPACKED_BYTES } from '../limits.js';
import { bytesSource, concatBytes } from '../bytes.js';
import { crc32, crcMismatch, entryProblem, readZipDirectory, ZipError } from './zip.js';

/** Compressed bytes handed to the inflater per step (bounds what one step can produce). */
const ZIP_STEP_BYTES = 16 * 1024;
/**
 * Bytes of a zip's end kept to check its central directory: a directory of 1 000 entries
 * with names of a few hundred bytes is well under it.
 */
const ZIP_DIRECTORY_BYTES = 4 * 1024 * 1024;
/** Bytes of an entry looked at to recognise its kind. */
const HEAD_BYTES = 4096;

/**
 * Where an upload goes: project, kind, release, dist and the uploaded name; a `debugId`
 * named by the uploader (sentry-cli's assemble request) and what the file says are
 * weighed by storedDebugId (debug-id.ts); `serves` (source maps: the minified file the map
 * serves, from an artifact bundle's manifest) overrides what the map says.
 */
export type UploadTarget = Pick<SymbolFileMeta, 'projectId' | 'kind' | 'release' | 'dist' | 'filename' | 'debugId' | 'serves'>;

type Db = Kysely<Database>;

/** The limits of one upload (docs/api.md "Symbol routes") unless a caller, e.g. a test, lowers them. */
export interface UploadLimits {
  maxFileBytes: number;
  /** A lower limit for some kinds (the serverless edition: what an isolate can parse). */
  maxFileBytesByKind?: Partial<Record<SymbolKind, number>>;
  maxZipEntries: number;
  maxZipUnpackedBytes: number;
}

export const UPLOAD_LIMITS: UploadLimits = {
  maxFileBytes: MAX_SYMBOL_FILE_BYTES,
  maxZipEntries: MAX_ZIP_ENTRIES,
  maxZipUnpackedBytes: MAX_ZIP_UNPACKED_BYTES,
};

const mb = (n: number) =>
  n % (1024 * 1024 * 1024) === 0 ? `${n / (1024 * 1024 * 1024)} GB` : n % (1024 * 1024) === 0 ? `${n / (1024 * 1024)} MB` : `${n} bytes`;

/** Why a zip past the unpacked limit is refused (every upload route says it alike); `what`: "the zip", "source maps". */
export function unpackedTooLargeMessage(what: string, max: number): string {
  return `${what} unpack${what.endsWith('s') ? '' : 's'} to more than ${max} bytes (${mb(max)})`;
}

/** Why a zip with too many entries is refused. */
export function tooManyEntriesMessage(max: number): string {
  return `the zip has more than ${max} entries`;
}

/** Why a file over the per-file limit is refused (every upload route says it alike). */
export function tooLargeMessage(name: string, max: number): string {
  return `${name} is larger than ${max} bytes (${mb(max)} per file)`;
}

/** One file going into storage: written as pending while its kind's inspector checks it. */
class FileIntake {
  private head: Uint8Array[] | null = [];
  private headBytes = 0;
  private writer: PendingWriter | null = null;
  private inspector: FileInspector | null = null;
  private skipped = false;
  size = 0;

  constructor(
    private readonly db: Db,
    private readonly handler: SymbolKindHandler,
    private readonly target: UploadTarget,
    readonly name: string,
    /** Zip entries are recognised first (others skipped); a plain upload must be of its kind. */
    private readonly mustRecognise: boolean,
    private readonly now: number,
    private readonly pendingIds: number[],
    private readonly limits: UploadLimits,
  ) {}

  async push(chunk: Uint8Array): Promise<void> {
    if (this.skipped || chunk.byteLength === 0) return;
    this.size += chunk.byteLength;
    const max = this.limits.maxFileBytesByKind?.[this.target.kind] ?? this.limits.maxFileBytes;
    if (this.size > max) throw new SymbolInputError(tooLargeMessage(this.name, max));
    if (this.head) {
      this.head.push(chunk);
      this.headBytes += chunk.byteLength;
      if (this.headBytes < HEAD_BYTES) return;
      await this.start();
      return;
    }
    await this.feed(chunk);
  }

  private async start(): Promise<void> {
    const parts = this.head!;
    this.head = null;
    const head = new Uint8Array(this.headBytes);
    let at = 0;
    for (const p of parts) {
      head.set(p, at);
      at += p.byteLength;
    }
    if (this.mustRecognise && !this.handler.recognises(this.name, head)) {
      this.skipped = true;
      return;
    }
    this.inspector = this.handler.inspect(this.name);
    this.writer = await openPendingFile(
      this.db,
      { projectId: this.target.projectId, kind: this.target.kind, release: this.target.release, dist: this.target.dist, filename: this.name },
      this.now,
    );
    this.pendingIds.push(this.writer.id);
    if (head.byteLength > 0) await this.feed(head);
  }

  private async feed(chunk: Uint8Array): Promise<void> {
    this.inspector!.push(chunk);
    await this.writer!.write(chunk);
  }

  /** The file's pending id and what its kind made of it; null when it was skipped. */
  async end(): Promise<{ id: number; size: number; files: InspectedFile[] } | null> {
    if (this.head) await this.start();
    if (this.skipped) return null;
    const { id, size } = await this.writer!.close();
    const files = await this.inspector!.finish(storedFileSource(this.db, id, size));
    if (files.length === 0) throw new SymbolInputError(`${this.name} holds no ${this.target.kind} symbols`);
    return { id, size, files };
  }
}

/** A zip entry name that could write outside the archive's folder (zip-slip). */
export function unsafeEntryName(name: string): boolean {
  if (name.includes('\0')) return true;
  const n = name.replace(/\\/g, '/');
  if (n.startsWith('/') || /^[a-z]:/i.test(n)) return true;
  return n.split('/').some((seg) => seg === '..');
}

/** Zip local file header magic. */
function isZip(head: Uint8Array): boolean {
  return head.length >= 4 && head[0] === 0x50 && head[1] === 0x4b && head[2] === 0x03 && head[3] === 0x04;
}

interface FileResult {
  id: number;
  size: number;
  name: string;
  files: InspectedFile[];
}

async function* withHead(first: Uint8Array, rest: AsyncGenerator<Uint8Array>): AsyncGenerator<Uint8Array> {
  if (first.byteLength > 0) yield first;
  yield* rest;
}

/** Reads the first few bytes of a stream (to tell a zip from a file) without losing them. */
async function peek(source: ByteSource, n: number): Promise<{ head: Uint8Array; all: AsyncGenerator<Uint8Array> }> {
  const it = iterateBytes(source);
  const parts: Uint8Array[] = [];
  let size = 0;
  while (size < n) {
    const next = await it.next();
    if (next.done) break;
    parts.push(next.value);
    size += next.value.byteLength;
  }
  const head = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    head.set(p, at);
    at += p.byteLength;
  }
  return { head, all: withHead(head, it) };
}

type Commit = { id: number; final: { debugId?: string; serves?: string; filename?: string; meta?: Record<string, unknown> } };

/**
 * Files of one request (one or more uploads, each a file or a zip), written as pending as
 * they stream in; `commit` makes them all visible in one transaction, `abort` removes
 * them. Any refused file refuses the whole request: nothing of it is stored.
 */
export class StagedUpload {
  private readonly pendingIds: number[] = [];
  private readonly commits: Commit[] = [];
  private closed = false;

  constructor(
    private readonly db: Db,
    /** The edition's kind handlers (a kind without one is refused). */
    private readonly kinds: SymbolKinds,
    private readonly now: number,
    private readonly limits: UploadLimits = UPLOAD_LIMITS,
    /** The store, so the commit is atomic on D1 too (see commitSymbolFiles). */
    private readonly commitTarget: CommitTarget = db,
  ) {}

  /**
   * Streams one upload into pending files: a ZIP's entries of the target's kind each as a
   * file (others skipped), anything else as one file. SymbolInputError (400) when it is
   * refused (then everything staged is removed).
   */
  stage(target: UploadTarget, source: ByteSource): Promise<void> {
    return this.take(target, source, true);
  }

  /**
   * Streams one file into pending files as it is, never read as a ZIP of files (sentry-cli's
   * files: an archive's entries are read on the uploader's side and staged one by one).
   */
  stageFile(target: UploadTarget, source: ByteSource): Promise<void> {
    return this.take(target, source, false);
  }

  private async take(target: UploadTarget, source: ByteSource, zipOfFiles: boolean): Promise<void> {
    const { db, now, limits, pendingIds } = this;
    try {
      if (this.closed) throw new Error('the upload was already committed or aborted');
      const handler = handlerOf(this.kinds, target.kind);
      if (!handler) throw new SymbolInputError(`${target.kind} support not available`);
      const { head, all } = await peek(source, 4);
      const results: FileResult[] = [];
      if (zipOfFiles && isZip(head)) {
        await readZip(db, handler, target, all, now, pendingIds, results, limits);
        if (results.length === 0) throw new SymbolInputError(`the zip holds no ${target.kind} file`);
      } else {
        const intake = new FileIntake(db, handler, target, target.filename, false, now, pendingIds, limits);
        for await (const chunk of all) await intake.push(chunk);
        if (intake.size === 0) throw new SymbolInputError('the file is empty');
        const r = await intake.end();
        if (r) results.push({ ...r, name: target.filename });
      }
      this.commits.push(...(await splitResults(db, target, results, now, pendingIds)));
    } catch (err) {
      await this.abort();
      if (err instanceof SymbolTooLargeError) throw new SymbolInputError(err.message);
      throw err;
    }
  }

  /** Makes every staged file visible, applying the replacement rule; the rows and the ids they replaced. */
  async commit(): Promise<{ rows: SymbolFileRow[]; replaced: number[] }> {
    const replaced: number[] = [];
    try {
      const rows = await commitSymbolFiles(this.commitTarget, this.commits, (ids) => replaced.push(...ids));
      this.closed = true;
      return { rows, replaced };
    } catch (err) {
      await this.abort();
      throw err;
    }
  }

  /** Removes everything staged (a request refused or broken off). */
  async abort(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await discardSymbolFiles(this.db, this.pendingIds).catch(() => undefined);
  }
}

/**
 * Stores an upload (a file or a zip of files) of `target.kind`; the stored rows. Throws
 * SymbolInputError (400) when anything in it is refused; then nothing is stored.
 */
export async function storeUpload(
  db: Db,
  kinds: SymbolKinds,
  target: UploadTarget,
  source: ByteSource,
  now: number,
  limits: UploadLimits = UPLOAD_LIMITS,
): Promise<{ rows: SymbolFileRow[]; replaced: number[] }> {
  const staged = new StagedUpload(db, kinds, now, limits);
  await staged.stage(target, source);
  return staged.commit();
}

/** Pending files as the kinds split them (slices copied out, derived indexes stored): what to commit. */
async function splitResults(db: Db, target: UploadTarget, results: FileResult[], now: number, pendingIds: number[]): Promise<Commit[]> {
  const commits: Commit[] = [];
  for (const r of results) {
    const whole = r.files.length === 1 && !r.files[0].range;
    for (const f of r.files) {
      let id = r.id;
      if (!whole) {
        const [start, end] = f.range ?? [0, r.size];
        const copy = await copyPendingRange(
          db,
          r.id,
          { projectId: target.projectId, kind: target.kind, release: target.release, dist: target.dist, filename: f.filename ?? r.name },
          start,
          end,
          now,
        );
        pendingIds.push(copy.id);
        id = copy.id;
      }
      if (f.index) await saveDerivedIndex(db, id, [f.index]);
      const debugId = storedDebugId(target.kind, target.debugId, f.debugId);
      commits.push({ id, final: { debugId, serves: target.serves ?? f.serves, filename: f.filename, meta: f.meta } });
    }
    if (!whole) await discardSymbolFiles(db, [r.id]);
  }
  return commits;
}

type ZipEvent = { kind: 'file'; file: UnzipFile } | { kind: 'data'; file: UnzipFile; data: Uint8Array; final: boolean } | { kind: 'error'; message: string };

async function readZip(
  db: Db,
  handler: SymbolKindHandler,
  target: UploadTarget,
  source: AsyncGenerator<Uint8Array>,
  now: number,
  pendingIds: number[],
  results: FileResult[],
  limits: UploadLimits,
) {
  const { maxFileBytes, maxZipEntries, maxZipUnpackedBytes } = limits;
  const tooBig = (name: string) => new SymbolInputError(`the zip entry ${JSON.stringify(name)} is larger than ${maxFileBytes} bytes (${mb(maxFileBytes)} per file)`);
  const tooMuch = () => new SymbolInputError(unpackedTooLargeMessage('the zip', maxZipUnpackedBytes));
  const events: ZipEvent[] = [];
  const unzip = new Unzip((file) => {
    events.push({ kind: 'file', file });
  });
  unzip.register(UnzipInflate);
  const intakes = new Map<UnzipFile, FileIntake | null>();
  const open = new Set<UnzipFile>();
  let entries = 0;
  let unpacked = 0;
  let declaredTotal = 0;
  const entrySizes = new Map<UnzipFile, number>();
  const entryCrcs = new Map<UnzipFile, number>();
  /** Entries as read (directories left out), to be matched against the central directory. */
  const read: { name: string; size: number; crc: number }[] = [];
  // The zip's end, for its central directory: the end of central directory record must be
  // in the last 64 KiB + 22 bytes (a zip cut short lacks it), the directory right before.
  const tail: Uint8Array[] = [];
  let tailBytes = 0;
  let totalBytes = 0;

  const drain = async () => {
    while (events.length > 0) {
      const ev = events.shift()!;
      if (ev.kind === 'error') throw new SymbolInputError(`the zip is corrupt: ${ev.message}`);
      if (ev.kind === 'file') {
        const file = ev.file;
        entries++;
        if (entries > maxZipEntries) throw new SymbolInputError(tooManyEntriesMessage(maxZipEntries));
        if (unsafeEntryName(file.name)) throw new SymbolInputError(`the zip entry ${JSON.stringify(file.name)} points outside the archive`);
        // Sizes the local header declares refuse a bomb before a byte is inflated; the bytes
        // actually inflated are counted too, for zips written without sizes (or lying).
        const declared = file.originalSize ?? 0;
        if (declared > maxFileBytes) throw tooBig(file.name);
        declaredTotal += declared;
        if (declaredTotal > maxZipUnpackedBytes) throw tooMuch();
        const ignored = isDirectory(file.name) || /(^|\/)__MACOSX\//.test(file.name) || /(^|\/)\.DS_Store$/.test(file.name);
        intakes.set(file, ignored ? null : new FileIntake(db, handler, target, file.name, true, now, pendingIds, limits));
        open.add(file);
        const problem = entryProblem(file.name, file.compression, 0);
        if (problem) throw new SymbolInputError(problem);
        file.ondata = (err, data, final) => {
          if (err) events.push({ kind: 'error', message: err.message });
          else events.push({ kind: 'data', file, data, final });
        };
        file.start();
        continue;
      }
      const intake = intakes.get(ev.file);
      const entrySize = (entrySizes.get(ev.file) ?? 0) + ev.data.byteLength;
      entrySizes.set(ev.file, entrySize);
      if (entrySize > maxFileBytes) throw tooBig(ev.file.name);
      unpacked += ev.data.byteLength;
      if (unpacked > maxZipUnpackedBytes) throw tooMuch();
      const crc = crc32(ev.data, entryCrcs.get(ev.file) ?? 0);
      entryCrcs.set(ev.file, crc);
      if (intake) await intake.push(ev.data);
      if (ev.final) {
        if (!isDirectory(ev.file.name)) read.push({ name: ev.file.name, size: entrySize, crc });
        entryCrcs.delete(ev.file);
        open.delete(ev.file);
        if (intake) {
          const r = await intake.end();
          if (r) results.push({ ...r, name: intake.name });
        }
        intakes.delete(ev.file);
        entrySizes.delete(ev.file);
      }
    }
  };

  const push = (chunk: Uint8Array, final: boolean) => {
    try {
      unzip.push(chunk, final);
    } catch (err) {
      events.push({ kind: 'error', message: (err as Error).message });
    }
  };

  for await (const chunk of source) {
    for (let at = 0; at < chunk.byteLength; at += ZIP_STEP_BYTES) {
      push(chunk.subarray(at, at + ZIP_STEP_BYTES), false);
      await drain();
    }
    tail.push(chunk);
    tailBytes += chunk.byteLength;
    totalBytes += chunk.byteLength;
    while (tailBytes - tail[0].byteLength >= ZIP_DIRECTORY_BYTES) tailBytes -= tail.shift()!.byteLength;
  }
  push(new Uint8Array(0), true);
  await drain();
  if (open.size > 0) throw new SymbolInputError('the zip is truncated: an entry ends before its data does');
  const end = concatBytes(tail, tailBytes);
  if (!hasEndOfCentralDirectory(end.subarray(Math.max(0, end.byteLength - 65_557)))) throw new SymbolInputError('the zip is truncated: it has no end of central directory record');
  checkCentralDirectory(await centralDirectory(end, totalBytes > end.byteLength), read);
}

function isDirectory(name: string): boolean {
  return name.endsWith('/') || name.endsWith('\\');
}

/** The entries the zip's central directory lists (encrypted ones or unknown methods refused). */
async function centralDirectory(end: Uint8Array, cut: boolean) {
  try {
    return await readZipDirectory(bytesSource(end));
  } catch (err) {
    if (cut && err instanceof ZipError && /out of bounds/.test(err.message)) {
      throw new SymbolInputError(`the zip's central directory is larger than ${ZIP_DIRECTORY_BYTES} bytes`);
    }
    throw err;
  }
}

/** The entries read must be those the directory lists, in order, with its sizes and CRC-32s. */
function checkCentralDirectory(listed: { name: string; size: number; crc32: number }[], read: { name: string; size: number; crc: number }[]): void {
  const files = listed.filter((e) => !isDirectory(e.name));
  for (let i = 0; i < Math.max(files.length, read.length); i++) {
    const a = files[i];
    const b = read[i];
    if (!a || !b || a.name !== b.name || a.size !== b.size) {
      throw new SymbolInputError(`the zip's central directory does not list the entries it holds (entry ${JSON.stringify((b ?? a).name)})`);
    }
    if (a.crc32 !== b.crc) throw new SymbolInputError(crcMismatch(a.name));
  }
}

function hasEndOfCentralDirectory(tail: Uint8Array): boolean {
  for (let i = tail.length - 22; i >= 0; i--) {
    if (tail[i] === 0x50 && tail[i + 1] === 0x4b && tail[i + 2] === 0x05 && tail[i + 3] === 0x06) return true;
  }
  return false;
}
