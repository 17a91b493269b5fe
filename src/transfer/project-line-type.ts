// The `project` line: a project with its id and DSN key, so SDKs keep working after a
// move (docs/api.md "Export file format"). Import keeps a project that exists (by slug) as it
// is; a missing one is created with its DSN key and id when they are free here, else
// with a new id or key, which the import names on standard error.
import { type Insertable, sql } from 'kysely';
import type { ProjectTable } from '../store/schema.js';
import { z } from 'zod';
import { generateDsnKey } from '../store/projects.js';
import { projectProblem } from './line-checks.js';
import { describeZodError, fieldSchema, lineColumns, toField } from './format.js';
import type { BatchOutcome, LineType, Parsed, Problem } from './line-type.js';

const COLUMNS = lineColumns('projects');

/** Fields newer than the format's first version: files written before them import with the defaults. */
const OPTIONAL = new Set(['scrub_defaults', 'scrub_ip_addresses', 'scrub_fields', 'safe_fields', 'storage_budget_mb']);

const schema = z.object(
  Object.fromEntries(
    COLUMNS.map((c) => [c.column, OPTIONAL.has(c.column) ? fieldSchema(c.kind).optional() : fieldSchema(c.kind)]),
  ),
);

type ProjectValue = Record<string, unknown> & { slug: string; id: number; dsn_key: string };

export const projectLineType: LineType<ProjectValue> = {
  type: 'project',
  table: 'projects',

  async count(ctx) {
    let query = ctx.db.selectFrom('projects').select(sql<number>`count(*)`.as('n'));
    if (ctx.projectId !== undefined) query = query.where('id', '=', ctx.projectId);
    return Number((await query.executeTakeFirst())?.n ?? 0);
  },

  async *read(ctx, after) {
    let query = ctx.db
      .selectFrom('projects')
      .selectAll()
      .where('id', '>', Number(after?.[0] ?? 0))
      .orderBy('id');
    if (ctx.projectId !== undefined) query = query.where('id', '=', ctx.projectId);
    const rows = (await query.execute()).filter((r) => ctx.projectSlugs.has(Number(r.id)));
    if (rows.length === 0) return;
    yield {
      lines: rows.map((r) => ({
        type: 'project',
        ...Object.fromEntries(COLUMNS.map((c) => [c.column, toField(c.kind, r[c.column])])),
      })),
      last: [Number(rows[rows.length - 1].id)],
    };
  },

  parse(line): Parsed<ProjectValue> {
    const result = schema.safeParse(line);
    if (!result.success) return { ok: false, message: describeZodError(result.error) };
    const value = result.data as ProjectValue;
    const problem = projectProblem(line);
    if (problem) return { ok: false, message: problem };
    if (value.id <= 0) return { ok: false, message: 'id: must be positive' };
    return { ok: true, value };
  },

  async write(ctx, batch): Promise<BatchOutcome> {
    const problems: Problem[] = [];
    let added = 0;
    let kept = 0;
    // PostgreSQL's sequence does not move for explicit ids: before a project takes the
    // next value, and after explicit ids went in, it is moved past every id in use.
    const catchUpSequence = async () => {
      if (ctx.dialect === 'postgres') {
        await sql`select setval(pg_get_serial_sequence('projects', 'id'), greatest((select max(id) from projects), (select last_value from projects_id_seq)))`.execute(
          ctx.db,
        );
      }
    };
    await catchUpSequence();
    let explicitIds = false;
    for (const { value } of batch) {
      const existing = await ctx.db
        .selectFrom('projects')
        .select('id')
        .where('slug', '=', value.slug)
        .executeTakeFirst();
      if (existing) {
        kept++;
        continue;
      }
      const idTaken = await ctx.db.selectFrom('projects').select('id').where('id', '=', value.id).executeTakeFirst();
      const keyTaken = await ctx.db
        .selectFrom('projects')
        .select('id')
        .where('dsn_key', '=', value.dsn_key)
        .executeTakeFirst();
      const row: Record<string, unknown> = { ...value, dsn_key: keyTaken ? generateDsnKey() : value.dsn_key };
      if (idTaken) delete row.id;
      else explicitIds = true;
      // The line's schema (COLUMNS) checked every column the row holds.
      const created = await ctx.db
        .insertInto('projects')
        .values(row as Insertable<ProjectTable>)
        .returning('id')
        .executeTakeFirstOrThrow();
      added++;
      const id = Number(created.id);
      if (idTaken)
        ctx.notice(
          `project "${value.slug}": id ${value.id} is taken here, so it was created as id ${id}; its DSN now ends in /${id}`,
        );
      if (keyTaken)
        ctx.notice(
          `project "${value.slug}": its DSN key is used by another project here, so it got a new one (${row.dsn_key})`,
        );
    }
    if (explicitIds) await catchUpSequence();
    return { added, kept, problems };
  },
};
