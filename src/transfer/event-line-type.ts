// The `event` line: a stored event with every stored field, its symbolicated frames and
// its raw payload as received (text when it is UTF-8, else base64), cut out of the
// payload chunk it was packed into (chunk ids are local to one database). Import
// stores events as they are, packing their payloads into chunks as ingest does, and
// never counts them again: the issue and aggregate lines carry the counts. An event is
// recognised by its event_id through `seen_events`, as ingest dedupes, and its
// `seen_events` row is written with it, so a resend by an SDK after the move is a
// duplicate. `first_of_issue` / `last_of_issue` mark the events the issue's
// first_seen_id / last_seen_id name, which import links up again.
import { sql } from 'kysely';
import { eventTitle, fillEventTags } from '../store/event-text.js';
import { decodeJsonBlob } from '../store/stored-payload.js';
import { payloadObjectKey, putObjects, readPayloadChunks } from '../store/blobs.js';
import { z } from 'zod';
import {
  describeZodError,
  fieldSchema,
  fromBase64,
  lineColumns,
  textBytes,
  toBase64,
  toField,
  utf8OrNull,
} from './format.js';
import {
  type BatchOutcome,
  type ExportContext,
  type ImportContext,
  insertRows,
  type LineType,
  type Parsed,
  partsOf,
  type Problem,
} from './line-type.js';
import { levelProblem } from './line-checks.js';
import { issueIds, issueKey, missingIssue, missingProject } from './table-line-type.js';

/** Columns copied as they are, in line order (after `project`): those the events descriptor exports. */
const COLUMNS = lineColumns('events');

const schema = z
  .object({
    project: z.string().min(1),
    ...Object.fromEntries(COLUMNS.map((c) => [c.column, fieldSchema(c.kind)])),
    tags: z.record(z.string(), z.string()),
    event_id: z.string().min(1),
    detail: z.unknown().optional(),
    payload: z.string().optional(),
    payload_base64: z.string().optional(),
    first_of_issue: z.boolean().optional(),
    last_of_issue: z.boolean().optional(),
  })
  .refine(
    (v) => (v.payload === undefined) !== (v.payload_base64 === undefined),
    'an event needs exactly one of payload and payload_base64',
  );

interface EventValue {
  project: string;
  row: Record<string, unknown>;
  tags: [string, string][];
  detail: unknown;
  payload: Uint8Array;
  first: boolean;
  last: boolean;
}

/**
 * Events read per query. Peak RSS of `faultline export` follows it (the bench's events,
 * 70 % of 3 KB and 30 % of 20 KB: 260 MB at 500, 220 MB at 250, 160 MB at 100) while the
 * rate did not change.
 */
const PAGE_EVENTS = 100;
/** Payload chunks fetched per query (at most 256 KB each once decompressed). */
const CHUNKS_PER_QUERY = 32;

/**
 * What the export reads of an event. The blobs come only when they hold something (most
 * events have neither: their payload sits in a chunk): a row read 15 % faster without
 * the two empty blobs and the columns the line does not carry.
 */
const READ_COLUMNS = sql.raw(
  [
    'e.id',
    'e.project_id',
    ...COLUMNS.map((c) => `e.${c.column}`),
    'e.payload_chunk',
    'e.payload_start',
    'e.payload_length',
    'case when length(e.detail) > 0 then e.detail end as detail',
    'case when length(e.raw) > 0 then e.raw end as raw',
  ].join(', '),
);

function projectCondition(ctx: ExportContext) {
  return ctx.projectId === undefined ? sql`1 = 1` : sql`e.project_id = ${ctx.projectId}`;
}

export const eventLineType: LineType<EventValue> = {
  type: 'event',
  table: 'events',

  async count(ctx) {
    const { rows } = await sql<{
      n: number;
    }>`select count(*) as n from events e where ${projectCondition(ctx)}`.execute(ctx.db);
    return Number(rows[0]?.n ?? 0);
  },

  async *read(ctx, start) {
    const limit = ctx.pageRows ?? PAGE_EVENTS;
    // The decompressed chunks a page needs; the last row's is kept for the next page
    // (a chunk's events have neighbouring ids, so pages share at most that one).
    let carried = new Map<number, Uint8Array>();
    let after = Number(start?.[0] ?? 0);
    for (;;) {
      const { rows } = await sql<Record<string, any>>`
        select ${READ_COLUMNS}, i.first_seen_id as issue_first_id, i.last_seen_id as issue_last_id
        from events e join issues i on i.id = e.issue_id
        where e.id > ${after} and ${projectCondition(ctx)}
        order by e.id limit ${limit}`.execute(ctx.db);
      if (rows.length === 0) return;
      await fillEventTags(ctx.db, rows as { id: number; tags: string }[]);
      const chunks = new Map<number, Uint8Array>();
      const needed = new Set(rows.filter((r) => r.payload_chunk !== null).map((r) => Number(r.payload_chunk)));
      const missing: number[] = [];
      for (const id of needed) {
        const kept = carried.get(id);
        if (kept) chunks.set(id, kept);
        else missing.push(id);
      }
      for (const part of partsOf(missing, CHUNKS_PER_QUERY)) {
        for (const [id, data] of await readPayloadChunks(ctx.db, part, ctx.runtime.decompress, ctx.runtime.blobs))
          chunks.set(id, data);
      }
      const lines: Record<string, unknown>[] = [];
      for (const r of rows) {
        const project = ctx.projectSlugs.get(Number(r.project_id));
        if (project === undefined) continue;
        const line: Record<string, unknown> = { type: 'event', project };
        for (const c of COLUMNS) line[c.column] = toField(c.kind, r[c.column]);
        line.title = eventTitle(r as { title: string; error_type: string; message: string });
        if (r.detail && r.detail.length > 0) line.detail = decodeJsonBlob(r.detail, ctx.runtime.decompress);
        const payload = payloadOf(ctx, r, chunks);
        const text = utf8OrNull(payload);
        if (text !== null) line.payload = text;
        else line.payload_base64 = toBase64(payload);
        if (Number(r.issue_first_id) === Number(r.id)) line.first_of_issue = true;
        if (Number(r.issue_last_id) === Number(r.id)) line.last_of_issue = true;
        lines.push(line);
      }
      const last = rows[rows.length - 1];
      after = Number(last.id);
      yield { lines, last: [after] };
      if (rows.length < limit) return;
      const lastChunk = last.payload_chunk === null ? undefined : chunks.get(Number(last.payload_chunk));
      carried = lastChunk ? new Map([[Number(last.payload_chunk), lastChunk]]) : new Map();
    }
  },

  parse(line): Parsed<EventValue> {
    const result = schema.safeParse(line);
    if (!result.success) return { ok: false, message: describeZodError(result.error) };
    const problem = levelProblem(line);
    if (problem) return { ok: false, message: problem };
    const data = result.data as Record<string, any>;
    const row: Record<string, unknown> = {};
    for (const c of COLUMNS) row[c.column] = data[c.column];
    row.tags = JSON.stringify(data.tags);
    let payload: Uint8Array;
    try {
      payload = data.payload !== undefined ? textBytes(data.payload) : fromBase64(data.payload_base64);
    } catch {
      return { ok: false, message: 'payload_base64: not base64' };
    }
    return {
      ok: true,
      value: {
        project: data.project,
        row,
        tags: Object.entries(data.tags as Record<string, string>),
        detail: data.detail,
        payload,
        first: data.first_of_issue === true,
        last: data.last_of_issue === true,
      },
    };
  },

  async write(ctx, batch): Promise<BatchOutcome> {
    const problems: Problem[] = [];
    const projects = await ctx.projectIds(batch.map((b) => b.value.project));
    const placed: { line: number; value: EventValue; projectId: number }[] = [];
    for (const item of batch) {
      const projectId = projects.get(item.value.project);
      if (projectId === undefined) problems.push({ line: item.line, message: missingProject(item.value.project) });
      else placed.push({ line: item.line, value: item.value, projectId });
    }
    const issues = await issueIds(
      ctx,
      placed.map((p) => ({ projectId: p.projectId, fingerprint: p.value.row.fingerprint as string })),
    );
    const known = new Set<string>();
    for (const [projectId, eventIds] of groupEventIds(placed)) {
      for (const part of partsOf(eventIds)) {
        const rows = await ctx.db
          .selectFrom('seen_events')
          .select('event_id')
          .where('project_id', '=', projectId)
          .where('event_id', 'in', part)
          .execute();
        for (const r of rows) known.add(`${projectId}\u0000${r.event_id}`);
      }
    }
    const fresh: { value: EventValue; projectId: number; issueId: number }[] = [];
    let kept = 0;
    for (const p of placed) {
      const issueId = issues.get(issueKey(p.projectId, p.value.row.fingerprint as string));
      if (issueId === undefined) {
        problems.push({ line: p.line, message: missingIssue(p.value.project, p.value.row.fingerprint as string) });
        continue;
      }
      const key = `${p.projectId}\u0000${p.value.row.event_id}`;
      if (known.has(key)) {
        kept++;
        continue;
      }
      known.add(key);
      fresh.push({ value: p.value, projectId: p.projectId, issueId });
    }
    if (fresh.length === 0) return { added: 0, kept, problems };

    const ids = await allocateIds(ctx, 'events', fresh.length);
    const { chunks, slots } = ctx.runtime.packPayloads(
      fresh.map((f) => ({
        projectId: f.projectId,
        receivedAt: f.value.row.received_at as number,
        payload: f.value.payload,
      })),
    );
    // SQLite numbers chunks from their own sequence; PostgreSQL ingest gives a chunk the
    // id of its first event (migration 008), and so does import.
    const chunkIds =
      ctx.dialect === 'postgres'
        ? chunks.map((c) => ids[c.members[0]])
        : await allocateIds(ctx, 'payload_chunks', chunks.length);
    // With a bucket, the chunks become objects first, as at ingest (src/store/blobs.ts).
    const blobs = ctx.runtime.blobs;
    const keys = chunks.map((c) => (blobs ? payloadObjectKey(c.receivedAt) : null));
    if (blobs)
      await putObjects(
        blobs,
        chunks.map((c, i) => ({ key: keys[i] as string, data: c.data })),
      );
    await insertRows(
      ctx.db,
      ctx.dialect,
      'payload_chunks',
      chunks.map((c, i) => ({
        id: chunkIds[i],
        project_id: c.projectId,
        received_at: c.receivedAt,
        data: blobs ? new Uint8Array(0) : c.data,
        r2_key: keys[i],
        object_bytes: blobs ? c.data.byteLength : null,
      })),
    );
    const empty = new Uint8Array(0);
    await insertRows(
      ctx.db,
      ctx.dialect,
      'events',
      fresh.map((f, i) => ({
        id: ids[i],
        project_id: f.projectId,
        issue_id: f.issueId,
        ...f.value.row,
        detail: f.value.detail === undefined ? empty : ctx.runtime.compress(textBytes(JSON.stringify(f.value.detail))),
        raw: empty,
        payload_chunk: chunkIds[slots[i].chunk],
        payload_start: slots[i].start,
        payload_length: slots[i].length,
      })),
    );
    await insertRows(
      ctx.db,
      ctx.dialect,
      'event_tags',
      fresh.flatMap((f, i) =>
        f.value.tags.map(([key, value]) => ({ project_id: f.projectId, event_id: ids[i], key, value })),
      ),
    );
    await insertRows(
      ctx.db,
      ctx.dialect,
      'seen_events',
      fresh.map((f, i) => ({
        project_id: f.projectId,
        event_id: f.value.row.event_id,
        received_at: f.value.row.received_at,
        stored_id: ids[i],
      })),
      // Where the batch commits after its reads (D1), an event another writer stored
      // meanwhile must fail the batch, which is then planned again, not be stored twice.
      ctx.afterCommit ? undefined : ['project_id', 'event_id'],
    );
    for (let i = 0; i < fresh.length; i++) {
      const f = fresh[i];
      if (f.value.first)
        await ctx.db
          .updateTable('issues')
          .set({ first_seen_id: ids[i] })
          .where('id', '=', f.issueId)
          .where('first_seen_id', 'is', null)
          .execute();
      if (f.value.last)
        await ctx.db
          .updateTable('issues')
          .set({ last_seen_id: ids[i] })
          .where('id', '=', f.issueId)
          .where('last_seen_id', 'is', null)
          .execute();
    }
    return { added: fresh.length, kept, problems };
  },
};

function payloadOf(ctx: ExportContext, row: Record<string, any>, chunks: Map<number, Uint8Array>): Uint8Array {
  if (row.payload_chunk === null || row.payload_chunk === undefined) {
    return row.raw && row.raw.length > 0 ? ctx.runtime.decompress(row.raw) : new Uint8Array(0);
  }
  const chunk = chunks.get(Number(row.payload_chunk));
  if (!chunk) return new Uint8Array(0); // retention removed it meanwhile
  const start = Number(row.payload_start ?? 0);
  return chunk.subarray(start, start + Number(row.payload_length ?? 0));
}

function groupEventIds(placed: { value: EventValue; projectId: number }[]): Map<number, string[]> {
  const byProject = new Map<number, string[]>();
  for (const p of placed) {
    const list = byProject.get(p.projectId);
    if (list) list.push(p.value.row.event_id as string);
    else byProject.set(p.projectId, [p.value.row.event_id as string]);
  }
  return byProject;
}

/**
 * Ids for new rows of a table, ascending, taken before the rows are written (the
 * events' ids go into their chunks, tags and seen_events in the same statements).
 * PostgreSQL draws them from the table's sequence; on SQLite the transaction holds the
 * write lock (BEGIN IMMEDIATE), so the ids after the highest ever given are free.
 */
export async function allocateIds(
  ctx: ImportContext,
  table: 'events' | 'payload_chunks',
  n: number,
): Promise<number[]> {
  if (n === 0) return [];
  if (ctx.dialect === 'postgres') {
    const { rows } = await sql<{
      id: number;
    }>`select nextval(pg_get_serial_sequence(${table}, 'id')) as id from generate_series(1, ${n})`.execute(ctx.db);
    return rows.map((r) => Number(r.id)).sort((a, b) => a - b);
  }
  const { rows } = await sql<{ top: number | null; seq: number | null }>`
    select (select max(id) from ${sql.table(table)}) as top, (select seq from sqlite_sequence where name = ${table}) as seq`.execute(
    ctx.db,
  );
  const base = Math.max(Number(rows[0]?.top ?? 0), Number(rows[0]?.seq ?? 0));
  return Array.from({ length: n }, (_, i) => base + i + 1);
}
