// The line type of a plain table: rows that hang under a project (by slug) or under
// another row of a project (an issue by its fingerprint, ...), identified by a natural
// key, copied column by column: the columns the table's descriptor gives an export kind
// (src/store/tables.ts). Most line types are one `tableLineType({...})` declaration
// (line-types.ts); only projects and events need code of their own.
import { type RawBuilder, sql } from 'kysely';
import { z } from 'zod';
import type { ColumnName, TableName } from '../store/tables.js';
import { type ColumnSpec, describeZodError, fieldSchema, lineColumns, toField } from './format.js';
import {
  type BatchItem,
  type BatchOutcome,
  type Cursor,
  type ExportContext,
  type ImportContext,
  insertMissingRows,
  insertRows,
  type LineType,
  type Parsed,
  partsOf,
  type Problem,
  type RowOf,
} from './line-type.js';

/** A row of a project that other rows hang under, found by its natural key within the project. */
export interface ParentSpec {
  /** What the row is called in messages. */
  name: string;
  /** Its table (rows with `id` and `project_id`). */
  table: TableName;
  /** The child's column holding the parent's id. */
  column: string;
  /** The parent's natural key within its project; the child's line carries these fields. */
  key: ColumnSpec[];
}

export const ISSUE_PARENT: ParentSpec = {
  name: 'issue',
  table: 'issues',
  column: 'issue_id',
  key: lineColumns('issues', ['fingerprint']),
};

export interface TableLineSpec<T extends TableName> {
  type: string;
  /** The table; the line carries the columns its descriptor gives an export kind, key columns included. */
  table: T;
  /** What a row hangs under: its project (field `project`), or a row of it (plus that row's key fields). */
  parent: 'project' | ParentSpec;
  /** Columns that, with the parent, identify a row (the natural key). */
  key: ColumnName<T>[];
  /** Table columns the rows are read in (a unique order: the primary key or id). */
  order: ColumnName<T>[];
  /** Only rows matching this are exported (`t` is the table, `p` the parent's). */
  where?: RawBuilder<unknown>;
  /** Values written with every imported row beyond its columns. */
  fixed?: RowOf<T>;
  /**
   * How an existing row is recognised: by the table's unique constraint on parent and
   * key (`constraint`, default), or by reading the parents' rows first (`lookup`, for a
   * table without one; the INSERT checks again as it writes: insertMissingRows).
   */
  existing?: 'constraint' | 'lookup';
  /** A row under a parent that also names its project (`project_id` column). */
  withProjectId?: boolean;
  /**
   * What the API would refuse in a line whose fields have the right types (an unknown
   * alert type, a channel config no channel takes, ...): a message saying why, or null.
   * Checked with the API's own validation, so an import stores only what the API could have.
   */
  check?: (line: Record<string, unknown>) => string | null;
  /** Rows read per query at most (rows that are large chunks: memory stays flat). */
  pageRows?: number;
  /** Fills in what a page's rows keep elsewhere (attachment chunks in the edition's bucket) before they become lines. */
  resolve?: (ctx: ExportContext, rows: Record<string, unknown>[]) => Promise<void>;
  /**
   * Runs on the rows about to be written, before they are: moves bytes the edition keeps
   * elsewhere out of them (symbol chunks into the bucket, as their upload does).
   */
  beforeWrite?: (ctx: ImportContext, rows: Record<string, unknown>[]) => Promise<void>;
  /** Runs in the batch's transaction after its rows are written (or, on D1, after they are committed), with the parent ids it wrote under. */
  afterWrite?: (ctx: ImportContext, parentIds: number[]) => Promise<void>;
}

type TableValue = { project: string; parentKey: unknown[]; row: Record<string, unknown> };

/** Rows read per query. */
export const PAGE_ROWS = 1000;

export function tableLineType<T extends TableName>(spec: TableLineSpec<T>): LineType<TableValue> {
  const parent = spec.parent === 'project' ? null : spec.parent;
  // The child's column naming its parent: `project_id`, or the parent spec's.
  const parentColumn = (parent ? parent.column : 'project_id') as ColumnName<T>;
  const columns = lineColumns(spec.table);
  const shape: Record<string, z.ZodType> = { project: z.string().min(1) };
  for (const k of parent?.key ?? []) shape[k.field ?? k.column] = fieldSchema(k.kind);
  for (const c of columns) shape[c.field ?? c.column] = fieldSchema(c.kind);
  const schema = z.object(shape);

  function conditions(ctx: ExportContext, cursor: unknown[] | null): RawBuilder<unknown> {
    const parts: RawBuilder<unknown>[] = [sql`1 = 1`];
    if (ctx.projectId !== undefined) {
      parts.push(parent ? sql`p.project_id = ${ctx.projectId}` : sql`t.project_id = ${ctx.projectId}`);
    }
    if (spec.where) parts.push(spec.where);
    if (cursor) {
      const columns = spec.order.map((c) => sql.ref(`t.${c}`));
      parts.push(
        cursor.length === 1
          ? sql`${columns[0]} > ${cursor[0]}`
          : sql`(${sql.join(columns)}) > (${sql.join(cursor.map((v) => sql`${v}`))})`,
      );
    }
    return sql.join(parts, sql` and `);
  }
  const from = parent
    ? sql`${sql.table(spec.table)} t join ${sql.table(parent.table)} p on p.id = ${sql.ref(`t.${parent.column}`)}`
    : sql`${sql.table(spec.table)} t`;

  async function afterWrite(ctx: ImportContext, ids: number[]): Promise<void> {
    const run = spec.afterWrite;
    if (!run) return;
    if (ctx.afterCommit) ctx.afterCommit((committed) => run(committed, ids));
    else await run(ctx, ids);
  }

  return {
    type: spec.type,
    table: spec.table,

    async count(ctx) {
      const { rows } = await sql<{
        n: number | string;
      }>`select count(*) as n from ${from} where ${conditions(ctx, null)}`.execute(ctx.db);
      return Number(rows[0]?.n ?? 0);
    },

    async *read(ctx, after) {
      const parentFields = parent
        ? sql`, p.project_id as parent_project_id${sql.raw(parent.key.map((k, i) => `, p."${k.column}" as parent_key_${i}`).join(''))}`
        : sql`, t.project_id as parent_project_id`;
      const order = sql.join(spec.order.map((c) => sql.ref(`t.${c}`)));
      const limit = Math.min(ctx.pageRows ?? PAGE_ROWS, spec.pageRows ?? PAGE_ROWS);
      let cursor: unknown[] | null = after ?? null;
      for (;;) {
        const { rows }: { rows: Record<string, unknown>[] } = await sql<
          Record<string, unknown>
        >`select t.* ${parentFields} from ${from} where ${conditions(ctx, cursor)} order by ${order} limit ${limit}`.execute(
          ctx.db,
        );
        if (spec.resolve) await spec.resolve(ctx, rows);
        const lines: Record<string, unknown>[] = [];
        for (const row of rows) {
          const project = ctx.projectSlugs.get(Number(row.parent_project_id));
          if (project === undefined) continue; // a project created after the export started
          const line: Record<string, unknown> = { type: spec.type, project };
          parent?.key.forEach((k, i) => (line[k.field ?? k.column] = toField(k.kind, row[`parent_key_${i}`])));
          for (const c of columns) line[c.field ?? c.column] = toField(c.kind, row[c.column]);
          lines.push(line);
        }
        if (rows.length === 0) return;
        const last: Record<string, unknown> = rows[rows.length - 1];
        cursor = spec.order.map((c): unknown => (typeof last[c] === 'bigint' ? Number(last[c]) : last[c]));
        yield { lines, last: cursor as Cursor };
        if (rows.length < limit) return;
      }
    },

    parse(line): Parsed<TableValue> {
      const result = schema.safeParse(line);
      if (!result.success) return { ok: false, message: describeZodError(result.error) };
      const problem = spec.check?.(line) ?? null;
      if (problem) return { ok: false, message: problem };
      const data = result.data as Record<string, unknown>;
      const row: Record<string, unknown> = {};
      for (const c of columns) row[c.column] = data[c.field ?? c.column];
      return {
        ok: true,
        value: {
          project: data.project as string,
          parentKey: (parent?.key ?? []).map((k) => data[k.field ?? k.column]),
          row,
        },
      };
    },

    async write(ctx, batch): Promise<BatchOutcome> {
      const problems: Problem[] = [];
      const projects = await ctx.projectIds(batch.map((b) => b.value.project));
      let placed: { item: BatchItem<TableValue>; projectId: number; parentId: number }[] = [];
      for (const item of batch) {
        const projectId = projects.get(item.value.project);
        if (projectId === undefined) problems.push({ line: item.line, message: missingProject(item.value.project) });
        else placed.push({ item, projectId, parentId: projectId });
      }
      if (parent) {
        const ids = await parentIds(
          ctx,
          parent,
          placed.map((p) => ({ projectId: p.projectId, key: p.item.value.parentKey })),
        );
        const found: typeof placed = [];
        for (const p of placed) {
          const id = ids.get(parentKey(p.projectId, p.item.value.parentKey));
          if (id === undefined)
            problems.push({
              line: p.item.line,
              message: missingParent(parent, p.item.value.project, p.item.value.parentKey),
            });
          else found.push({ ...p, parentId: id });
        }
        placed = found;
      }
      let rows = placed.map((p) => {
        const row: RowOf<T> = { [parentColumn]: p.parentId, ...p.item.value.row, ...spec.fixed };
        if (spec.withProjectId) row['project_id' as ColumnName<T>] = p.projectId;
        return row;
      });
      const keyColumns = [parentColumn, ...spec.key];
      const total = rows.length;
      if (spec.existing === 'lookup') {
        const seen = new Set<string>();
        for (const part of partsOf([...new Set(rows.map((r) => r[parentColumn] as number))])) {
          const { rows: existing } = await sql<Record<string, unknown>>`select ${sql.join(
            keyColumns.map((c) => sql.ref(c)),
          )} from ${sql.table(spec.table)} where ${sql.ref(parentColumn)} in (${sql.join(part)})`.execute(ctx.db);
          for (const r of existing) seen.add(rowKey(r, keyColumns));
        }
        rows = rows.filter((r) => {
          const key = rowKey(r, keyColumns);
          if (seen.has(key)) return false;
          seen.add(key);
          return true;
        });
        await spec.beforeWrite?.(ctx, rows);
        const added = await insertMissingRows(ctx.db, ctx.dialect, spec.table, rows, keyColumns);
        await afterWrite(ctx, [...new Set(placed.map((p) => p.parentId))]);
        return { added, kept: total - added, problems };
      }
      await spec.beforeWrite?.(ctx, rows);
      const added = await insertRows(ctx.db, ctx.dialect, spec.table, rows, keyColumns);
      await afterWrite(ctx, [...new Set(placed.map((p) => p.parentId))]);
      return { added, kept: total - added, problems };
    },
  };
}

function rowKey(row: Record<string, unknown>, columns: readonly string[]): string {
  return JSON.stringify(columns.map((c) => (typeof row[c] === 'bigint' ? Number(row[c]) : row[c])));
}

export function missingProject(slug: string): string {
  return `project "${slug}" is not in the database (its project line must come before its rows)`;
}

export function missingParent(parent: ParentSpec, slug: string, key: unknown[]): string {
  const name = key.length === 1 ? JSON.stringify(key[0]) : JSON.stringify(key);
  return `${parent.name} ${name} of project "${slug}" is not in the database (its ${parent.name} line must come before its rows)`;
}

function parentKey(projectId: number, key: unknown[]): string {
  return `${projectId}\u0000${JSON.stringify(key)}`;
}

/** Parent ids by project and key (`parentKey`), for the keys that exist. */
async function parentIds(
  ctx: ImportContext,
  parent: ParentSpec,
  wanted: { projectId: number; key: unknown[] }[],
): Promise<Map<string, number>> {
  const byProject = new Map<number, Map<string, unknown[]>>();
  for (const w of wanted) {
    let keys = byProject.get(w.projectId);
    if (!keys) byProject.set(w.projectId, (keys = new Map()));
    keys.set(JSON.stringify(w.key), w.key);
  }
  const columns = parent.key.map((k) => k.column);
  const ids = new Map<string, number>();
  for (const [projectId, keys] of byProject) {
    for (const part of partsOf([...keys.values()], 200)) {
      const match =
        columns.length === 1
          ? sql`${sql.ref(columns[0])} in (${sql.join(part.map((k) => sql`${k[0]}`))})`
          : sql`(${sql.join(columns.map((c) => sql.ref(c)))}) in (${sql.join(part.map((k) => sql`(${sql.join(k.map((v) => sql`${v}`))})`))})`;
      const { rows } = await sql<
        Record<string, unknown>
      >`select id, ${sql.join(columns.map((c) => sql.ref(c)))} from ${sql.table(parent.table)} where project_id = ${projectId} and ${match}`.execute(
        ctx.db,
      );
      for (const r of rows)
        ids.set(
          parentKey(
            projectId,
            columns.map((c) => r[c]),
          ),
          Number(r.id),
        );
    }
  }
  return ids;
}

export function missingIssue(slug: string, fingerprint: string): string {
  return missingParent(ISSUE_PARENT, slug, [fingerprint]);
}

export function issueKey(projectId: number, fingerprint: string): string {
  return parentKey(projectId, [fingerprint]);
}

/** Issue ids by project and fingerprint (`issueKey`), for the pairs that exist. */
export function issueIds(
  ctx: ImportContext,
  wanted: { projectId: number; fingerprint: string }[],
): Promise<Map<string, number>> {
  return parentIds(
    ctx,
    ISSUE_PARENT,
    wanted.map((w) => ({ projectId: w.projectId, key: [w.fingerprint] })),
  );
}
