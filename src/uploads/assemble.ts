// Assembling uploaded chunks into files (`difs/assemble/`, `artifactbundle/assemble/`):
// which chunks are missing, then a file streamed from its chunks, in order, into symbol
// storage while its SHA-1 is checked, one chunk in memory at a time. The outcome is
// recorded per project and checksum (`upload_assemblies`), so a polling sentry-cli
// (`--wait`) gets `ok` or `error` with a detail from any instance, and a file uploaded
// again answers `ok` at once. States: not_found (+ missingChunks), created, assembling,
// ok, error (+ detail).
import type { Kysely } from 'kysely';
import { sha1 as nobleSha1 } from '@noble/hashes/legacy.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import type { Database } from '../store/schema.js';
import { tooLargeMessage } from '../symbols/upload.js';
import { SHA1_PATTERN, deleteChunks, presentChunks, readChunk } from './chunks.js';
import { UploadError } from './errors.js';
import type { SymbolPort } from './symbol-port.js';
import { piecesSource, type ByteRangeSource } from '../bytes.js';

type Db = Kysely<Database>;

export type AssembleState = 'not_found' | 'created' | 'assembling' | 'ok' | 'error';

export interface AssembleAnswer {
  state: AssembleState;
  missingChunks: string[];
  detail: string | null;
}

/** An incremental SHA-1 (Node: node:crypto, injected through AppDeps; else @noble/hashes). */
export interface IncrementalHash {
  update(bytes: Uint8Array): void;
  digestHex(): string;
}
export type CreateSha1 = () => IncrementalHash;

export const portableSha1: CreateSha1 = () => {
  const h = nobleSha1.create();
  return {
    update: (bytes) => void h.update(bytes),
    digestHex: () => bytesToHex(h.digest()),
  };
};

export interface AssembleContext {
  db: Db;
  symbols: SymbolPort;
  now: () => number;
  createSha1?: CreateSha1;
  /**
   * How long an assemble request waits for the assembly it started before answering
   * `created` (the work goes on; sentry-cli polls with --wait). Infinity waits for the
   * end: an edition that stops work once it answered (the serverless edition) never
   * answers `created`.
   */
  waitMs?: number;
  /**
   * Called once per file, by the request that assembled it, after its outcome `ok` is
   * recorded (the audit log's entry; later polls and re-uploads answering `ok` do not call it).
   */
  onAssembled?: (job: Pick<AssembleJob, 'projectIds' | 'kind' | 'checksum' | 'name'>, result: unknown) => Promise<void>;
}

/** An `assembling` record older than this belongs to an instance that died: assembly starts again. */
export const STALE_ASSEMBLY_MS = 15 * 60_000;
export const DEFAULT_ASSEMBLE_WAIT_MS = 20_000;

export type AssemblyKind = 'dif' | 'artifact_bundle';

interface AssemblyRecord {
  state: string;
  detail: string | null;
  result: string | null;
}

/** A file's chunks, validated: checksum and each chunk 40 lowercase hex digits. */
export function validateChunkList(
  checksum: unknown,
  chunks: unknown,
  what: string,
): { checksum: string; chunks: string[] } {
  if (typeof checksum !== 'string' || !SHA1_PATTERN.test(checksum))
    throw new UploadError(400, `${what}: checksum must be a SHA-1 of 40 lowercase hex digits`);
  if (!Array.isArray(chunks) || chunks.some((c) => typeof c !== 'string' || !SHA1_PATTERN.test(c))) {
    throw new UploadError(400, `${what}: chunks must be a list of SHA-1s of 40 lowercase hex digits`);
  }
  return { checksum, chunks: chunks as string[] };
}

async function readRecord(
  db: Db,
  projectId: number,
  kind: AssemblyKind,
  checksum: string,
): Promise<(AssemblyRecord & { updated_at: number }) | undefined> {
  return db
    .selectFrom('upload_assemblies')
    .select(['state', 'detail', 'result', 'updated_at'])
    .where('project_id', '=', projectId)
    .where('kind', '=', kind)
    .where('checksum', '=', checksum)
    .executeTakeFirst();
}

/** Claims the assembly of a file: true for the one request that inserted (or revived) the record. */
async function claim(
  db: Db,
  projectIds: number[],
  kind: AssemblyKind,
  checksum: string,
  now: number,
): Promise<boolean> {
  const [first, ...others] = projectIds;
  const res = await db
    .insertInto('upload_assemblies')
    .values({ project_id: first, kind, checksum, state: 'assembling', detail: null, result: null, updated_at: now })
    .onConflict((oc) =>
      oc
        .columns(['project_id', 'kind', 'checksum'])
        .doUpdateSet({ state: 'assembling', detail: null, result: null, updated_at: now })
        .where((eb) =>
          eb.or([
            eb('upload_assemblies.state', '!=', 'assembling'),
            eb('upload_assemblies.updated_at', '<', now - STALE_ASSEMBLY_MS),
          ]),
        )
        .where('upload_assemblies.state', '!=', 'ok'),
    )
    .executeTakeFirst();
  if (Number(res.numInsertedOrUpdatedRows ?? 0) !== 1) return false;
  for (const projectId of others) {
    await db
      .insertInto('upload_assemblies')
      .values({
        project_id: projectId,
        kind,
        checksum,
        state: 'assembling',
        detail: null,
        result: null,
        updated_at: now,
      })
      .onConflict((oc) =>
        oc
          .columns(['project_id', 'kind', 'checksum'])
          .doUpdateSet({ state: 'assembling', detail: null, result: null, updated_at: now }),
      )
      .execute();
  }
  return true;
}

async function finish(
  db: Db,
  projectIds: number[],
  kind: AssemblyKind,
  checksum: string,
  now: number,
  outcome: { state: 'ok' | 'error'; detail?: string; result?: unknown },
) {
  await db
    .updateTable('upload_assemblies')
    .set({
      state: outcome.state,
      detail: outcome.detail ?? null,
      result: outcome.result === undefined ? null : JSON.stringify(outcome.result),
      updated_at: now,
    })
    .where('project_id', 'in', projectIds)
    .where('kind', '=', kind)
    .where('checksum', '=', checksum)
    .execute();
}

function answerOf(
  record: AssemblyRecord,
  now: number,
  updatedAt: number,
): (AssembleAnswer & { result?: unknown }) | null {
  if (record.state === 'ok')
    return {
      state: 'ok',
      missingChunks: [],
      detail: null,
      result: record.result ? (JSON.parse(record.result) as OkRecord).result : undefined,
    };
  if (record.state === 'error') return { state: 'error', missingChunks: [], detail: record.detail };
  if (record.state === 'assembling' && updatedAt >= now - STALE_ASSEMBLY_MS)
    return { state: 'assembling', missingChunks: [], detail: null };
  return null;
}

/** Lets timers and I/O run (Web API only: every edition has setTimeout). */
export const yieldToEventLoop = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

/**
 * The bytes of a file from its chunks, in order, one chunk read at a time; throws when a
 * chunk is gone or the whole does not hash to `checksum`.
 */
export async function* chunkBytes(
  db: Db,
  chunks: readonly string[],
  checksum: string,
  createSha1: CreateSha1,
): AsyncGenerator<Uint8Array> {
  const hash = createSha1();
  for (const sha1 of chunks) {
    // SQLite answers synchronously: without a turn of the event loop per chunk, a large
    // assembly would hold every other request (ingest too) until it ends.
    await yieldToEventLoop();
    const data = await readChunk(db, sha1);
    if (!data) throw new UploadError(400, `chunk ${sha1} is no longer on the server; upload again`);
    hash.update(data);
    yield data;
  }
  const actual = hash.digestHex();
  if (actual !== checksum)
    throw new UploadError(400, `checksum mismatch: the assembled file hashes to ${actual}, not ${checksum}`);
}

/** Random access over a file's chunks (an artifact bundle's ZIP directory is at its end). */
export function chunkRangeSource(
  db: Db,
  chunks: readonly string[],
  sizes: ReadonlyMap<string, number>,
): ByteRangeSource {
  const starts: number[] = [];
  let size = 0;
  for (const sha1 of chunks) {
    starts.push(size);
    size += sizes.get(sha1) ?? 0;
  }
  return piecesSource(starts, size, async (index) => {
    const data = await readChunk(db, chunks[index]);
    if (!data) throw new UploadError(400, `chunk ${chunks[index]} is no longer on the server; upload again`);
    return data;
  });
}

/** Turns a failure of an assembly into the `detail` sentry-cli prints. */
export function failureDetail(err: unknown): string {
  if (err instanceof UploadError) return err.message;
  const status = (err as { status?: unknown } | null)?.status;
  if (typeof status === 'number' && status >= 400 && status < 500 && err instanceof Error) return err.message;
  return 'internal error while assembling the file';
}

export interface AssembleJob {
  projectIds: number[];
  kind: AssemblyKind;
  checksum: string;
  chunks: string[];
  /** What the file is called in a refusal (the debug file's name, "the artifact bundle"). */
  name: string;
  /**
   * Does the work once every chunk is present: the answer's extra (`dif`) and the symbol
   * files stored, recorded with `ok`.
   */
  run(sizes: ReadonlyMap<string, number>): Promise<{ result: unknown; fileIds: number[] }>;
}

interface OkRecord {
  result: unknown;
  fileIds: number[];
}

/**
 * One file's assemble step, the same for DIFs and bundles: an earlier outcome when there
 * is one, else the missing chunks, else the assembly (waited for up to `waitMs`).
 */
export async function assembleOne(
  ctx: AssembleContext,
  job: AssembleJob,
): Promise<AssembleAnswer & { result?: unknown }> {
  const now = ctx.now();
  let record = await readRecord(ctx.db, job.projectIds[0], job.kind, job.checksum);
  if (record?.state === 'ok') {
    // Its files deleted since (symbols API): the upload counts as new.
    const ok = JSON.parse(record.result ?? '{}') as Partial<OkRecord>;
    if (!(await ctx.symbols.allStored(ok.fileIds ?? []))) {
      await ctx.db
        .deleteFrom('upload_assemblies')
        .where('project_id', 'in', job.projectIds)
        .where('kind', '=', job.kind)
        .where('checksum', '=', job.checksum)
        .execute();
      record = undefined;
    }
  }
  if (record) {
    const earlier = answerOf(record, now, Number(record.updated_at));
    // An error is final for that upload, but chunks sent again are a new attempt.
    if (earlier && !(earlier.state === 'error' && job.chunks.length > 0 && (await allPresent(ctx.db, job.chunks, now))))
      return earlier;
  }
  if (job.chunks.length === 0) return { state: 'not_found', missingChunks: [], detail: null };
  const sizes = await presentChunks(ctx.db, job.chunks, now);
  // The file is as large as its chunk list says, a chunk listed twice counting twice: a
  // list past the per-file limit is refused before a byte is stored, even while some of
  // its chunks are still to be uploaded.
  const max = ctx.symbols.maxFileBytes();
  let listed = 0;
  for (const c of job.chunks) listed += sizes.get(c) ?? 0;
  if (listed > max) return { state: 'error', missingChunks: [], detail: tooLargeMessage(job.name, max) };
  const missing = [...new Set(job.chunks.filter((c) => !sizes.has(c)))];
  if (missing.length > 0) return { state: 'not_found', missingChunks: missing, detail: null };
  if (!(await claim(ctx.db, job.projectIds, job.kind, job.checksum, now))) {
    const again = await readRecord(ctx.db, job.projectIds[0], job.kind, job.checksum);
    return (
      (again && answerOf(again, now, Number(again.updated_at))) ?? {
        state: 'assembling',
        missingChunks: [],
        detail: null,
      }
    );
  }
  const work = (async (): Promise<AssembleAnswer & { result?: unknown }> => {
    try {
      const { result, fileIds } = await job.run(sizes);
      await finish(ctx.db, job.projectIds, job.kind, job.checksum, ctx.now(), {
        state: 'ok',
        result: { result, fileIds } satisfies OkRecord,
      });
      await deleteChunks(ctx.db, job.chunks).catch(() => undefined);
      await ctx.onAssembled?.(job, result);
      return { state: 'ok', missingChunks: [], detail: null, result };
    } catch (err) {
      const detail = failureDetail(err);
      await finish(ctx.db, job.projectIds, job.kind, job.checksum, ctx.now(), { state: 'error', detail }).catch(
        () => undefined,
      );
      if (detail === 'internal error while assembling the file') throw err;
      return { state: 'error', missingChunks: [], detail };
    }
  })();
  const waitMs = ctx.waitMs ?? DEFAULT_ASSEMBLE_WAIT_MS;
  if (!Number.isFinite(waitMs)) return work;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<null>((resolve) => (timer = setTimeout(resolve, waitMs, null)));
  const waited = await Promise.race([work, timeout]).finally(() => clearTimeout(timer));
  if (waited) return waited;
  // Still running: the outcome lands in the record; a failure there is already recorded.
  work.catch(() => undefined);
  return { state: 'created', missingChunks: [], detail: null };
}

async function allPresent(db: Db, chunks: string[], now: number): Promise<boolean> {
  const sizes = await presentChunks(db, chunks, now);
  return chunks.every((c) => sizes.has(c));
}
