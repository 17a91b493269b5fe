// The export file's format (docs/api.md "Export file format"): newline-delimited JSON, a meta
// line first, then one line per row under a `type`. This module holds what every line
// type shares: the format number, the meta line, how a column's value becomes a JSON
// field and back (times as RFC 3339, 0/1 as booleans, JSON text as JSON), and the
// text/bytes helpers. Web APIs only: the serverless edition serves the same format.
import { z } from 'zod';
import { hasUnsafeText } from '../ingest/hygiene.js';
import { type ColumnName, type LineKind, TABLES, type TableDescriptor, type TableName } from '../store/tables.js';

/** The format this build writes and the newest it reads. A file with a higher number is refused. */
export const FORMAT_VERSION = 1;

export interface MetaLine {
  type: 'meta';
  format: number;
  exported_at: string;
  source: {
    /** faultline's version and the database kind the file came from. */
    faultline: string;
    database: string;
    /** The one project exported, or null for the whole instance. */
    project: string | null;
  };
  /** Lines the export expected to write when it started (progress of a later import). */
  expected_lines?: number;
}

export const metaSchema = z.object({
  type: z.literal('meta'),
  format: z.number().int().positive(),
  expected_lines: z.number().int().nonnegative().optional(),
});

/**
 * How a column travels in a line. The tables' descriptors (src/store/tables.ts) name each
 * exported column's kind:
 * - `int` an integer (ids, times of day); `count` a non-negative one (counters, sizes,
 *   sequence numbers), `count?` or null; `counter-added` a counter that files written
 *   before the column existed leave out (read as 0); `number` any finite number.
 * - `text`, `text?`; `time`, `time?`: epoch milliseconds in the database, RFC 3339 with
 *   milliseconds in the file; `bool`: 0/1 in the database, false/true in the file.
 * - `json`, `json?`: JSON text in the database, the JSON value itself in the file; `list` a
 *   JSON array, and a file without the field means [].
 * - `text-added`, `count-added`, `time-added`: nullable columns that files written before
 *   them leave out (read as null).
 * - `bytes`: a blob in the database, base64 in the file.
 */
export type ColumnKind = LineKind;

export interface ColumnSpec<C extends string = string> {
  /** Column name in the table. */
  column: C;
  /** Field name in the line (defaults to the column name). */
  field?: string;
  kind: ColumnKind;
}

/**
 * The columns a line of `table` carries, in its descriptor's order (src/store/tables.ts):
 * every column with an export kind, or only those named in `only`, in that order.
 */
export function lineColumns<T extends TableName>(
  table: T,
  only?: readonly ColumnName<T>[],
): ColumnSpec<ColumnName<T>>[] {
  const descriptor: TableDescriptor = TABLES[table];
  const names = only ?? (Object.keys(descriptor) as ColumnName<T>[]);
  const out: ColumnSpec<ColumnName<T>>[] = [];
  for (const column of names) {
    const { line, field } = descriptor[column];
    if (line === undefined) {
      if (only) throw new Error(`${table}.${column}: its descriptor gives it no export kind`);
      continue;
    }
    out.push(field === undefined ? { column, kind: line } : { column, field, kind: line });
  }
  return out;
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;

export function toTime(ms: number): string {
  return new Date(Number(ms)).toISOString();
}

const time = z.string().transform((s, ctx) => {
  const ms = RFC3339.test(s) ? Date.parse(s) : Number.NaN;
  if (!Number.isFinite(ms)) {
    ctx.issues.push({ code: 'custom', message: 'expected an RFC 3339 time', input: s });
    return z.NEVER;
  }
  return ms;
});

const json = z.unknown().refine((v) => v !== undefined, 'required');

/** Text a database stores as sent: no NUL (PostgreSQL refuses it) and no lone surrogate (SQLite would store invalid UTF-8). */
const text = z.string().refine((s) => !hasUnsafeText(s), 'holds a NUL character or a lone surrogate');

const int = z.number().int().refine(Number.isSafeInteger, 'must be below 2^53');

const FIELD_SCHEMAS: Record<ColumnKind, z.ZodType> = {
  int,
  count: int.refine((n) => n >= 0, 'must not be negative'),
  'count?': int.refine((n) => n >= 0, 'must not be negative').nullable(),
  'counter-added': int
    .refine((n) => n >= 0, 'must not be negative')
    .optional()
    .transform((n) => n ?? 0),
  number: z.number(),
  text,
  'text?': text.nullable(),
  time,
  'time?': time.nullable(),
  bool: z.boolean(),
  json,
  'json?': z.unknown().transform((v) => (v === undefined ? null : v)),
  list: z
    .array(z.unknown())
    .optional()
    .transform((v) => v ?? []),
  'text-added': text.nullish().transform((v) => v ?? null),
  'count-added': int
    .refine((n) => n >= 0, 'must not be negative')
    .nullish()
    .transform((v) => v ?? null),
  'time-added': time.nullish().transform((v) => v ?? null),
  bytes: z.string().transform((text, ctx) => {
    try {
      return fromBase64(text);
    } catch {
      ctx.issues.push({ code: 'custom', message: 'expected base64', input: text });
      return z.NEVER;
    }
  }),
};

/** The zod field schema of a column: validates a line's field and turns it into the column value. */
export function fieldSchema(kind: ColumnKind): z.ZodType {
  if (kind === 'bool') return z.boolean().transform((b) => (b ? 1 : 0));
  if (kind === 'json') return json.transform((v) => JSON.stringify(v));
  if (kind === 'json?') return FIELD_SCHEMAS['json?'].transform((v) => (v === null ? null : JSON.stringify(v)));
  if (kind === 'list') return FIELD_SCHEMAS.list.transform((v) => JSON.stringify(v));
  return FIELD_SCHEMAS[kind];
}

/** A column value as it goes into a line. */
export function toField(kind: ColumnKind, value: unknown): unknown {
  switch (kind) {
    case 'int':
    case 'count':
    case 'counter-added':
    case 'number':
      return Number(value);
    case 'count?':
      return value === null || value === undefined ? null : Number(value);
    case 'time':
      return toTime(value as number);
    case 'time?':
    case 'time-added':
      return value === null || value === undefined ? null : toTime(value as number);
    case 'count-added':
      return value === null || value === undefined ? null : Number(value);
    case 'bool':
      return Number(value) !== 0;
    case 'json':
    case 'list':
      return JSON.parse(value as string);
    case 'json?':
      return value === null || value === undefined ? null : JSON.parse(value as string);
    case 'text?':
    case 'text-added':
      return value ?? null;
    case 'bytes':
      return toBase64(value as Uint8Array);
    default:
      return value;
  }
}

/** One readable sentence from a zod error: the first problem and its field. */
export function describeZodError(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return 'invalid line';
  const where = issue.path.length > 0 ? issue.path.join('.') : 'line';
  return `${where}: ${issue.message}`;
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const encoder = new TextEncoder();

/** Bytes as text when they are valid UTF-8 (so JSON payloads stay readable), else null. */
export function utf8OrNull(bytes: Uint8Array): string | null {
  try {
    return utf8.decode(bytes);
  } catch {
    return null;
  }
}

export function textBytes(text: string): Uint8Array {
  return encoder.encode(text);
}

export function toBase64(bytes: Uint8Array): string {
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

export function fromBase64(text: string): Uint8Array {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}
