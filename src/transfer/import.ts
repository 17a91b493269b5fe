// Import of an export file (see export.ts for the domain). Lines are read one at a
// time from any byte or text stream and gathered into batches of one line type, each
// written in one transaction (at most BATCH_LINES lines or BATCH_CHARS characters; on D1,
// which has no transactions, one atomic batch: d1-write.ts), so memory is bounded and
// an interrupted import leaves whole batches only; running it
// again finishes it, since every line type inserts only what is missing.
//
// Safe beside ingest: on SQLite a batch takes the write lock up front (BEGIN
// IMMEDIATE), as ingest's batches do; on PostgreSQL it locks the rows of the projects it
// writes (FOR NO KEY UPDATE), the lock ingest batches take, so the two never interleave
// within a project. On D1, which has neither, a batch is planned by reads and committed
// as one atomic batch (d1-write.ts): each write in it checks again as it commits (ON
// CONFLICT on a unique key, WHERE NOT EXISTS for a table without one) or fails the whole
// batch on a unique key, which is then planned again, so two imports of the same file at
// once still add each row once.
//
// What is not imported is reported, never fatal: a line that is not JSON, is truncated
// or lacks fields is a problem with its line number; a row whose project or issue is
// neither in the database nor earlier in the file is one too; an unknown type is
// skipped and counted. A batch that meets a busy database or a deadlock is run again; one
// the database refuses is retried line by line, so one bad row costs only itself. Only a file that is not an export, or comes from a newer
// format, is refused before anything is written.
import type { Kysely } from 'kysely';
import { writeTransaction, type Store } from '../store/database.js';
import type { Database } from '../store/schema.js';
import { writeBatchAtomically } from './d1-write.js';
import { FORMAT_VERSION, metaSchema } from './format.js';
import type { BatchItem, BatchOutcome, ImportContext, LineType, Problem, TransferRuntime } from './line-type.js';
import { LINE_TYPES, lineTypeNamed } from './line-types.js';
import { MAX_LINE_CHARS } from '../limits.js';

/** The file cannot be imported at all (not an export, newer format). Nothing was written. */
export class ImportRefusedError extends Error {}

/** Lines per transaction. */
export const BATCH_LINES = 500;
/** Characters of line text per transaction (payloads and symbol chunks are large). */
export const BATCH_CHARS = 16 * 1024 * 1024;
/** Problems kept for the summary; the rest are only counted. */
const KEPT_PROBLEMS = 100;

export interface TypeCounts {
  added: number;
  kept: number;
  /** Lines of this type that were not imported (problems). */
  failed: number;
}

export interface ImportSummary {
  /** Lines read, meta included. */
  lines: number;
  format: number;
  /** Per known line type, in file order. */
  types: Record<string, TypeCounts>;
  /** Lines of types this build does not know, by type. */
  unknown: Record<string, number>;
  /** The first problems, with line numbers. */
  problems: Problem[];
  problemCount: number;
  /** Set when the file has fewer lines than its meta line announced: it was cut short. */
  endsEarly?: { line: number; expected: number };
}

/**
 * An empty tally keyed by names from the file: without a prototype, so a type named
 * `constructor` or `__proto__` is counted like any other.
 */
export function tallyByName(): Record<string, number> {
  return Object.create(null) as Record<string, number>;
}

export interface ImportProgress {
  lines: number;
  /** Lines the file's meta line announced (0 when it did not). */
  expected: number;
  summary: ImportSummary;
}

export interface ImportOptions {
  onProgress?: (progress: ImportProgress) => void;
  /** Messages for the person running the import (a project given a new id, ...). */
  notice?: (message: string) => void;
  batchLines?: number;
  /** Characters of line text per batch instead of BATCH_CHARS. */
  batchChars?: number;
}

interface Line {
  number: number;
  text: string;
}

/** Splits a byte or text stream into lines, numbered from 1; the last may lack its newline. */
export async function* readLines(
  source: AsyncIterable<Uint8Array | string>,
): AsyncGenerator<Line | { number: number; tooLong: true }> {
  const decoder = new TextDecoder('utf-8');
  let pending = '';
  let number = 0;
  let skipping = false;
  for await (const chunk of source) {
    pending += typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
    let start = 0;
    for (let end = pending.indexOf('\n'); end !== -1; end = pending.indexOf('\n', start)) {
      number++;
      if (skipping) skipping = false;
      else yield { number, text: pending.slice(start, end) };
      start = end + 1;
    }
    pending = pending.slice(start);
    if (pending.length > MAX_LINE_CHARS) {
      if (!skipping) yield { number: number + 1, tooLong: true };
      skipping = true;
      pending = '';
    }
  }
  pending += decoder.decode();
  if (pending.length > 0 && !skipping) yield { number: number + 1, text: pending };
}

export async function importNdjson(
  store: Store,
  runtime: TransferRuntime,
  source: AsyncIterable<Uint8Array | string>,
  options: ImportOptions = {},
): Promise<ImportSummary> {
  const summary: ImportSummary = {
    lines: 0,
    format: 0,
    types: {},
    unknown: tallyByName(),
    problems: [],
    problemCount: 0,
  };
  for (const t of LINE_TYPES) summary.types[t.type] = { added: 0, kept: 0, failed: 0 };
  const problem = (p: Problem, type?: string) => {
    summary.problemCount++;
    if (summary.problems.length < KEPT_PROBLEMS) summary.problems.push(p);
    if (type) summary.types[type].failed++;
  };
  const maxLines = options.batchLines ?? BATCH_LINES;
  const maxChars = options.batchChars ?? BATCH_CHARS;
  let expected = 0;
  let batchType: LineType | null = null;
  let batch: BatchItem<unknown>[] = [];
  let batchChars = 0;

  const flush = async () => {
    if (!batchType || batch.length === 0) return;
    const type = batchType;
    const items = batch;
    batch = [];
    batchChars = 0;
    const outcome = await writeBatch(store, runtime, type, items, options.notice ?? (() => {}));
    const counts = summary.types[type.type];
    counts.added += outcome.added;
    counts.kept += outcome.kept;
    for (const p of outcome.problems.sort((a, b) => a.line - b.line)) problem(p, type.type);
    options.onProgress?.({ lines: summary.lines, expected, summary });
  };

  let sawMeta = false;
  for await (const line of readLines(source)) {
    summary.lines = line.number;
    if ('tooLong' in line) {
      if (!sawMeta) throw new ImportRefusedError(`line ${line.number}: the first line is not an export's meta line`);
      problem({ line: line.number, message: `longer than ${MAX_LINE_CHARS} characters` });
      continue;
    }
    if (line.text.trim() === '') continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(line.text);
    } catch {
      if (!sawMeta)
        throw new ImportRefusedError(
          `line ${line.number}: the file does not start with an export's meta line (not JSON)`,
        );
      problem({ line: line.number, message: 'not JSON (a truncated or damaged line)' });
      continue;
    }
    if (!sawMeta) {
      const meta = metaSchema.safeParse(parsed);
      if (!meta.success)
        throw new ImportRefusedError(
          `line ${line.number}: the file does not start with an export's meta line ({"type":"meta","format":…})`,
        );
      if (meta.data.format > FORMAT_VERSION) {
        throw new ImportRefusedError(
          `the file is export format ${meta.data.format}, written by a newer faultline; this version reads format ${FORMAT_VERSION} and older: upgrade faultline to import it`,
        );
      }
      summary.format = meta.data.format;
      expected = meta.data.expected_lines ?? 0;
      sawMeta = true;
      continue;
    }
    if (
      parsed === null ||
      typeof parsed !== 'object' ||
      Array.isArray(parsed) ||
      typeof (parsed as { type?: unknown }).type !== 'string'
    ) {
      problem({ line: line.number, message: 'not a JSON object with a "type"' });
      continue;
    }
    const typeName = (parsed as { type: string }).type;
    if (typeName === 'meta') {
      problem({ line: line.number, message: 'a second meta line' });
      continue;
    }
    const type = lineTypeNamed(typeName);
    if (!type) {
      summary.unknown[typeName] = (summary.unknown[typeName] ?? 0) + 1;
      continue;
    }
    const checked = type.parse(parsed as Record<string, unknown>);
    if (!checked.ok) {
      problem({ line: line.number, message: `${typeName}: ${checked.message}` }, typeName);
      continue;
    }
    if (type !== batchType || batch.length >= maxLines || batchChars >= maxChars) {
      await flush();
      batchType = type;
    }
    batch.push({ line: line.number, value: checked.value });
    batchChars += line.text.length;
  }
  if (!sawMeta) throw new ImportRefusedError('the input is empty: no export meta line');
  await flush();
  if (expected > 0 && summary.lines < expected) summary.endsEarly = { line: summary.lines, expected };
  // A batch reports its problems when it is written, after later lines were read.
  summary.problems.sort((a, b) => a.line - b.line);
  options.onProgress?.({ lines: summary.lines, expected, summary });
  return summary;
}

/**
 * Writes a batch in one transaction; when the database refuses it, each line alone, so
 * only the lines it refuses are lost (reported as problems).
 */
async function writeBatch(
  store: Store,
  runtime: TransferRuntime,
  type: LineType,
  items: BatchItem<unknown>[],
  notice: (m: string) => void,
): Promise<BatchOutcome> {
  for (let attempt = 1; ; attempt++) {
    try {
      // Without interactive transactions (D1), one atomic batch of recorded statements.
      // Elsewhere one transaction whose line types read as they write: PostgreSQL takes
      // row locks and ids from its sequences there (project-line-type.ts,
      // event-line-type.ts), and recorded statements cut to D1's 100 parameters would
      // slow a bulk import down.
      if (!store.capabilities.supportsInteractiveTransactions)
        return await writeBatchAtomically(store, type, items, (db, afterCommit) =>
          importContext(store, runtime, db, notice, afterCommit),
        );
      return await writeTransaction(store, (db) => type.write(importContext(store, runtime, db, notice), items));
    } catch (err) {
      // Another writer held the database too long, or PostgreSQL chose this transaction to
      // fail: the same batch succeeds when run again.
      if (isTransient(err) && attempt < TRANSIENT_ATTEMPTS) {
        await new Promise((r) => setTimeout(r, 100 * attempt));
        continue;
      }
      if (items.length === 1) {
        if (!(await store.ping())) throw err;
        return {
          added: 0,
          kept: 0,
          problems: [
            { line: items[0].line, message: `${type.type}: the database refused it: ${(err as Error).message}` },
          ],
        };
      }
      const total: BatchOutcome = { added: 0, kept: 0, problems: [] };
      for (const item of items) {
        const one = await writeBatch(store, runtime, type, [item], notice);
        total.added += one.added;
        total.kept += one.kept;
        total.problems.push(...one.problems);
      }
      return total;
    }
  }
}

const TRANSIENT_ATTEMPTS = 5;

/** SQLite busy or locked; PostgreSQL serialization failure, deadlock, lock not available. */
function isTransient(err: unknown): boolean {
  // D1: another writer took an id or key between a batch's reads and its commit; the
  // batch, planned again from fresh reads, goes through.
  if (/D1_ERROR.*(UNIQUE constraint failed|SQLITE_BUSY)/s.test(String((err as Error)?.message ?? ''))) return true;
  const code = (err as { code?: unknown })?.code;
  return (
    typeof code === 'string' &&
    (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED') || ['40001', '40P01', '55P03'].includes(code))
  );
}

function importContext(
  store: Store,
  runtime: TransferRuntime,
  db: Kysely<Database>,
  notice: (m: string) => void,
  afterCommit?: ImportContext['afterCommit'],
): ImportContext {
  return {
    db,
    dialect: store.dialect,
    runtime,
    notice,
    afterCommit,
    async projectIds(slugs) {
      const wanted = [...new Set(slugs)];
      const ids = new Map<string, number>();
      if (wanted.length === 0) return ids;
      let query = db.selectFrom('projects').select(['id', 'slug']).where('slug', 'in', wanted).orderBy('id');
      if (store.dialect === 'postgres') query = query.forNoKeyUpdate();
      for (const row of await query.execute()) ids.set(row.slug as string, Number(row.id));
      return ids;
    },
  };
}

/** What a file cut short is told: where it ends, and where its meta line said it would. */
export function endsEarlyMessage(e: { line: number; expected: number }): string {
  return `the file ends at line ${e.line} of the ${e.expected} its meta line announced (cut short: copy or download it again)`;
}

/** The summary as lines for a person: one per type with rows, then unknown types and problems. */
export function formatImportSummary(summary: ImportSummary): string[] {
  const out: string[] = [];
  const width = Math.max(
    ...Object.keys(summary.types).map((t) => t.length),
    ...Object.keys(summary.unknown).map((t) => t.length),
    4,
  );
  for (const [type, c] of Object.entries(summary.types)) {
    if (c.added + c.kept + c.failed === 0) continue;
    out.push(
      `  ${type.padEnd(width)}  ${c.added} added, ${c.kept} kept${c.failed > 0 ? `, ${c.failed} not imported` : ''}`,
    );
  }
  for (const [type, n] of Object.entries(summary.unknown))
    out.push(`  ${type.padEnd(width)}  ${n} skipped (unknown type)`);
  if (summary.endsEarly) out.push(`${endsEarlyMessage(summary.endsEarly)}: the rest of it is missing`);
  if (summary.problemCount > 0) {
    out.push(`${summary.problemCount} line${summary.problemCount === 1 ? '' : 's'} not imported:`);
    for (const p of summary.problems) out.push(`  line ${p.line}: ${p.message}`);
    if (summary.problemCount > summary.problems.length)
      out.push(`  … and ${summary.problemCount - summary.problems.length} more`);
  }
  return out;
}
