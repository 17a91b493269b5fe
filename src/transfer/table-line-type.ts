// The line type of a plain table: rows that hang under a project (by slug) or an
// issue (by project slug and fingerprint), identified by a natural key, copied column
// by column. Most line types are one `tableLineType({...})` declaration
// (line-types.ts); only projects and events need code of their own.
import { type RawBuilder, sql } from 'kysely';
import { z } from 'zod';
import { type ColumnSpec, describeZodError, fieldSchema, toField } from './format.js';
import { type BatchItem, type BatchOutcome, type Cursor, type ExportContext, type ImportContext, insertRows, type LineType, type Parsed, partsOf, type Problem } from './line-type.js';

export interface TableLineSpec {
  type: string;
  table: string;
  /** What a row hangs under: a project (field `project`) or an issue (fields `project` and `fingerprint`). */
  parent: 'project' | 'issue';
  /** Columns that, with the parent, identify a row (the natural key). */
  key: string[];
  /** Table columns the rows are read in (a unique order: the primary key or id). */
  order: string[];
  /** Columns copied into the line, key columns included. */
  columns: ColumnSpec[];
  /** Only rows matching this are exported (`t` is the table). */
  where?: RawBuilder<unknown>;
  /** Values written with every imported row beyond its columns. */
  fixed?: Record<string, unknown>;
  /**
   * How an existing row is recognised: by the table's unique constraint on parent and
   * key (`constraint`, default), or by reading the parents' rows first (`lookup`, for a
   * table without one).
   */
  existing?: 'constraint' | 'lookup';
  /** An issue's row that also names its project (`project_id` column). */
  withProjectId?: boolean;
}

type TableValue = { project: string; fingerprint?: string; row: Record<string, unknown> };

/** Rows read per query. */
export const PAGE_ROWS = 1000;

export function tableLineType(spec: TableLineSpec): LineType<TableValue> {
  const parentColumn = spec.parent === 'issue' ? 'issue_id' : 'project_id';
  const shape: Record<string, z.ZodType> = { project: z.string().min(1) };
  if (spec.parent === 'issue') shape.fingerprint = z.string();
  for (const c of spec.columns) shape[c.field ?? c.column] = fieldSchema(c.kind);
  const schema = z.object(shape);

  function conditions(ctx: ExportContext, cursor: unknown[] | null): RawBuilder<unknown> {
    const parts: RawBuilder<unknown>[] = [sql`1 = 1`];
    if (ctx.projectId !== undefined) {
      parts.push(spec.parent === 'issue' ? sql`i.project_id = ${ctx.projectId}` : sql`t.project_id = ${ctx.projectId}`);
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
  const from = spec.parent === 'issue' ? sql`${sql.table(spec.table)} t join issues i on i.id = t.issue_id` : sql`${sql.table(spec.table)} t`;

  return {
    type: spec.type,

    async count(ctx) {
      const { rows } = await sql<{ n: number | string }>`select count(*) as n from ${from} where ${conditions(ctx, null)}`.execute(ctx.db);
      return Number(rows[0]?.n ?? 0);
    },

    async *read(ctx, after) {
      const parentFields = spec.parent === 'issue' ? sql`, i.project_id as parent_project_id, i.fingerprint as parent_fingerprint` : sql`, t.project_id as parent_project_id`;
      const order = sql.join(spec.order.map((c) => sql.ref(`t.${c}`)));
      const limit = ctx.pageRows ?? PAGE_ROWS;
      let cursor: unknown[] | null = after ?? null;
      for (;;) {
        const { rows }: { rows: Record<string, unknown>[] } = await sql<Record<string, unknown>>`select t.* ${parentFields} from ${from} where ${conditions(ctx, cursor)} order by ${order} limit ${limit}`.execute(ctx.db);
        const lines: Record<string, unknown>[] = [];
        for (const row of rows) {
          const project = ctx.projectSlugs.get(Number(row.parent_project_id));
          if (project === undefined) continue; // a project created after the export started
          const line: Record<string, unknown> = { type: spec.type, project };
          if (spec.parent === 'issue') line.fingerprint = row.parent_fingerprint;
          for (const c of spec.columns) line[c.field ?? c.column] = toField(c.kind, row[c.column]);
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
      const data = result.data as Record<string, unknown>;
      const row: Record<string, unknown> = {};
      for (const c of spec.columns) row[c.column] = data[c.field ?? c.column];
      return { ok: true, value: { project: data.project as string, fingerprint: data.fingerprint as string | undefined, row } };
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
      if (spec.parent === 'issue') {
        const issues = await issueIds(ctx, placed.map((p) => ({ projectId: p.projectId, fingerprint: p.item.value.fingerprint! })));
        const found: typeof placed = [];
        for (const p of placed) {
          const id = issues.get(issueKey(p.projectId, p.item.value.fingerprint!));
          if (id === undefined) problems.push({ line: p.item.line, message: missingIssue(p.item.value.project, p.item.value.fingerprint!) });
          else found.push({ ...p, parentId: id });
        }
        placed = found;
      }
      let rows = placed.map((p) => {
        const row: Record<string, unknown> = { [parentColumn]: p.parentId, ...p.item.value.row, ...spec.fixed };
        if (spec.withProjectId) row.project_id = p.projectId;
        return row;
      });
      const keyColumns = [parentColumn, ...spec.key];
      const total = rows.length;
      if (spec.existing === 'lookup') {
        const seen = new Set<string>();
        for (const part of partsOf([...new Set(rows.map((r) => r[parentColumn] as number))])) {
          const existing = await ctx.db.selectFrom(spec.table).select(keyColumns).where(parentColumn, 'in', part).execute();
          for (const r of existing) seen.add(rowKey(r, keyColumns));
        }
        rows = rows.filter((r) => {
          const key = rowKey(r, keyColumns);
          if (seen.has(key)) return false;
          seen.add(key);
          return true;
        });
        const added = await insertRows(ctx.db, ctx.dialect, spec.table, rows);
        return { added, kept: total - added, problems };
      }
      const added = await insertRows(ctx.db, ctx.dialect, spec.table, rows, keyColumns);
      return { added, kept: total - added, problems };
    },
  };
}

function rowKey(row: Record<string, unknown>, columns: string[]): string {
  return JSON.stringify(columns.map((c) => (typeof row[c] === 'bigint' ? Number(row[c]) : row[c])));
}

export function missingProject(slug: string): string {
  return `project "${slug}" is not in the database (its project line must come before its rows)`;
}

export function missingIssue(slug: string, fingerprint: string): string {
  return `issue ${JSON.stringify(fingerprint)} of project "${slug}" is not in the database (its issue line must come before its rows)`;
}

export function issueKey(projectId: number, fingerprint: string): string {
  return `${projectId}\u0000${fingerprint}`;
}

/** Issue ids by project and fingerprint (`issueKey`), for the pairs that exist. */
export async function issueIds(ctx: ImportContext, wanted: { projectId: number; fingerprint: string }[]): Promise<Map<string, number>> {
  const byProject = new Map<number, Set<string>>();
  for (const w of wanted) {
    let set = byProject.get(w.projectId);
    if (!set) byProject.set(w.projectId, (set = new Set()));
    set.add(w.fingerprint);
  }
  const ids = new Map<string, number>();
  for (const [projectId, fingerprints] of byProject) {
    for (const part of partsOf([...fingerprints])) {
      const rows = await ctx.db
        .selectFrom('issues')
        .select(['id', 'fingerprint'])
        .where('project_id', '=', projectId)
        .where('fingerprint', 'in', part)
        .execute();
      for (const r of rows) ids.set(issueKey(projectId, r.fingerprint as string), Number(r.id));
    }
  }
  return ids;
}
