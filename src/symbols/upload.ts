// Taking in an upload: one file or a zip of many, streamed. Each file is checked by its
// kind's handler while its bytes go into storage as a pending (invisible) row; when
// every file of the upload passed, one transaction makes them visible and applies the
// replacement rule. Anything wrong (a file not of its kind, a truncated zip, a zip bomb,
// a path escaping the zip) refuses the whole upload with a SymbolInputError and removes
// what was written: nothing is stored.
//
// Limits (docs/api.md "Symbols"): 256 MB per file; a zip holds at most 1 000 entries and
// 1 GB unpacked. A zip is read as it streams in (src/symbols/zip.ts, the one ZIP module),
// so its central directory (at its end) is checked last.
import type { Kysely } from 'kysely';
import type { Database } from '../store/schema.js';
import {
  handlerOf,
  SymbolInputError,
  type FileInspector,
  type InspectedFile,
  type SymbolKindHandler,
  type SymbolKinds,
} from './kinds.js';
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
import { readStreamedZip, sizeText, startsLikeZip } from './zip.js';
/** Bytes of an entry looked at to recognise its kind. */
const HEAD_BYTES = 4096;

/**
 * Where an upload goes: project, kind, release, dist and the uploaded name; a `debugId`
 * named by the uploader (sentry-cli's assemble request) and what the file says are
 * weighed by storedDebugId (debug-id.ts); `serves` (source maps: the minified file the map
 * serves, from an artifact bundle's manifest) overrides what the map says.
 */
export type UploadTarget = Pick<
  SymbolFileMeta,
  'projectId' | 'kind' | 'release' | 'dist' | 'filename' | 'debugId' | 'serves'
>;

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

/** Why a file over the per-file limit is refused (every upload route says it alike). */
export function tooLargeMessage(name: string, max: number): string {
  return `${name} is larger than ${max} bytes (${sizeText(max)} per file)`;
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
      {
        projectId: this.target.projectId,
        kind: this.target.kind,
        release: this.target.release,
        dist: this.target.dist,
        filename: this.name,
      },
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

type Commit = {
  id: number;
  final: { debugId?: string; serves?: string; filename?: string; meta?: Record<string, unknown> };
};

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
      if (zipOfFiles && startsLikeZip(head)) {
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
async function splitResults(
  db: Db,
  target: UploadTarget,
  results: FileResult[],
  now: number,
  pendingIds: number[],
): Promise<Commit[]> {
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
          {
            projectId: target.projectId,
            kind: target.kind,
            release: target.release,
            dist: target.dist,
            filename: f.filename ?? r.name,
          },
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

/** The entries of a zip of `target.kind`: each recognised one goes in as a file of the upload. */
async function readZip(
  db: Db,
  handler: SymbolKindHandler,
  target: UploadTarget,
  source: AsyncGenerator<Uint8Array>,
  now: number,
  pendingIds: number[],
  results: FileResult[],
  limits: UploadLimits,
): Promise<void> {
  await readStreamedZip(source, limits, (name) => {
    const intake = new FileIntake(db, handler, target, name, true, now, pendingIds, limits);
    return {
      push: (chunk) => intake.push(chunk),
      end: async () => {
        const r = await intake.end();
        if (r) results.push({ ...r, name });
      },
    };
  });
}
