// Accounts in the export file (docs/api.md "Export file format"): `user` lines (with
// the password's KDF hash, never a password), `personal_token` lines (the token's
// SHA-256, never the token) under their user's email, and `audit` lines. Sessions,
// invites and setup tokens are never exported: they are short-lived secrets of one
// instance. These rows belong to the instance, not a project, so an export of one
// project leaves them out. Audit entries of imports (`import`) are the instance's own
// and not exported. Import keeps a user, token or audit entry that exists (by
// email, by hash, by the entry's random uid).
import { sql } from 'kysely';
import { z } from 'zod';
import { isPasswordHash } from '../accounts/password.js';
import { isRole, normaliseEmail } from '../accounts/rules.js';
import type { TableName } from '../store/tables.js';
import { type ColumnSpec, describeZodError, fieldSchema, lineColumns, toField } from './format.js';
import {
  type BatchOutcome,
  type ExportContext,
  insertRows,
  type LineType,
  type Parsed,
  partsOf,
  type Problem,
} from './line-type.js';

const PAGE = 1000;

interface InstanceSpec {
  type: string;
  table: TableName;
  columns: ColumnSpec[];
  /** Extra line fields read by a join (`field` ← SQL expression over `t` and joins). */
  select?: (ctx: ExportContext) => ReturnType<typeof sql>;
  check?: (value: Record<string, unknown>) => string | null;
}

/** Export side of an instance-level table: rows in id order, a page at a time. */
function reader(spec: InstanceSpec, join = sql``, extra = sql``, where = sql`1 = 1`) {
  return {
    table: spec.table,
    async count(ctx: ExportContext) {
      if (ctx.projectId !== undefined) return 0;
      const { rows } = await sql<{
        n: number | string;
      }>`select count(*) as n from ${sql.table(spec.table)} t where ${where}`.execute(ctx.db);
      return Number(rows[0]?.n ?? 0);
    },
    async *read(ctx: ExportContext, after?: (string | number)[] | null) {
      if (ctx.projectId !== undefined) return;
      let cursor = Number(after?.[0] ?? 0);
      const limit = ctx.pageRows ?? PAGE;
      for (;;) {
        const { rows } = await sql<
          Record<string, unknown>
        >`select t.* ${extra} from ${sql.table(spec.table)} t ${join} where t.id > ${cursor} and ${where} order by t.id limit ${limit}`.execute(
          ctx.db,
        );
        if (rows.length === 0) return;
        const lines = rows.map((r) => {
          const line: Record<string, unknown> = { type: spec.type };
          if (r.user_email !== undefined) line.user = r.user_email;
          for (const c of spec.columns) line[c.field ?? c.column] = toField(c.kind, r[c.column]);
          return line;
        });
        cursor = Number(rows[rows.length - 1].id);
        yield { lines, last: [cursor] };
        if (rows.length < limit) return;
      }
    },
  };
}

function schemaOf(columns: ColumnSpec[], extra: Record<string, z.ZodType> = {}) {
  return z.object({ ...Object.fromEntries(columns.map((c) => [c.field ?? c.column, fieldSchema(c.kind)])), ...extra });
}

function parser<V extends Record<string, unknown>>(schema: z.ZodType, check: (v: V) => string | null) {
  return (line: Record<string, unknown>): Parsed<V> => {
    const result = schema.safeParse(line);
    if (!result.success) return { ok: false, message: describeZodError(result.error) };
    const value = result.data as V;
    const problem = check(value);
    return problem ? { ok: false, message: problem } : { ok: true, value };
  };
}

const USER_COLUMNS = lineColumns('users');

type Row = Record<string, unknown>;

export const userLineType: LineType<Row> = {
  type: 'user',
  ...reader({ type: 'user', table: 'users', columns: USER_COLUMNS }),
  parse: parser<Row>(schemaOf(USER_COLUMNS), (v) => {
    try {
      if (normaliseEmail(v.email) !== v.email) return 'email: must be stored lower case and trimmed';
    } catch (err) {
      return `email: ${(err as Error).message}`;
    }
    if (!isRole(v.role)) return 'role: must be viewer, member or admin';
    if (v.password_hash !== null && !isPasswordHash(String(v.password_hash)))
      return 'password_hash: not a hash this server reads';
    return null;
  }),
  async write(ctx, batch): Promise<BatchOutcome> {
    const rows = batch.map((b) => b.value);
    const added = await insertRows(ctx.db, ctx.dialect, 'users', rows, ['email']);
    return { added, kept: rows.length - added, problems: [] };
  },
};

const TOKEN_COLUMNS = lineColumns('personal_tokens');

export const personalTokenLineType: LineType<Row> = {
  type: 'personal_token',
  ...reader(
    { type: 'personal_token', table: 'personal_tokens', columns: TOKEN_COLUMNS },
    sql`join users u on u.id = t.user_id`,
    sql`, u.email as user_email`,
  ),
  parse: parser<Row>(schemaOf(TOKEN_COLUMNS, { user: z.string().min(1) }), (v) =>
    /^[0-9a-f]{64}$/.test(String(v.token_hash)) ? null : 'token_hash: must be 64 lower-case hex digits (a SHA-256)',
  ),
  async write(ctx, batch): Promise<BatchOutcome> {
    const problems: Problem[] = [];
    const emails = [...new Set(batch.map((b) => String(b.value.user)))];
    const ids = new Map<string, number>();
    for (const part of partsOf(emails)) {
      for (const r of await ctx.db.selectFrom('users').select(['id', 'email']).where('email', 'in', part).execute())
        ids.set(r.email, Number(r.id));
    }
    const rows: Row[] = [];
    for (const item of batch) {
      const userId = ids.get(String(item.value.user));
      if (userId === undefined) {
        problems.push({
          line: item.line,
          message: `user ${JSON.stringify(item.value.user)} is not in the file before this line nor on this server`,
        });
        continue;
      }
      const { user: _user, ...rest } = item.value;
      rows.push({ user_id: userId, ...rest });
    }
    const added = await insertRows(ctx.db, ctx.dialect, 'personal_tokens', rows, ['token_hash']);
    return { added, kept: rows.length - added, problems };
  },
};

const AUDIT_COLUMNS = lineColumns('audit_log');
export const auditLineType: LineType<Row> = {
  type: 'audit',
  // An import's own entries stay with the instance that took it: moving the log elsewhere
  // and back gives the same lines.
  ...reader({ type: 'audit', table: 'audit_log', columns: AUDIT_COLUMNS }, sql``, sql``, sql`t.action <> 'import'`),
  parse: parser<Row>(schemaOf(AUDIT_COLUMNS), (v) =>
    /^[A-Za-z0-9]{1,64}$/.test(String(v.uid)) ? null : 'uid: must be 1 to 64 letters and digits',
  ),
  async write(ctx, batch): Promise<BatchOutcome> {
    const rows = batch.map((b) => b.value);
    const added = await insertRows(ctx.db, ctx.dialect, 'audit_log', rows, ['uid']);
    return { added, kept: rows.length - added, problems: [] };
  },
};

export const ACCOUNT_LINE_TYPES: readonly LineType[] = [userLineType, personalTokenLineType, auditLineType];
