// What a database can do and how much one statement may carry, as Kysely's
// DialectAdapter describes a dialect: one description per database (SQLite in
// sqlite.ts, PostgreSQL in postgres.ts, D1 in d1.ts), and the statement sizes the
// store's modules derive from it, so no module picks a chunk size of its own. The SQL a
// database speaks is named once, by `Store.dialect` (D1 speaks SQLite's); this object
// holds only what callers read.
// Web APIs only.

export interface DialectCapabilities {
  /** BEGIN … COMMIT around statements sent one by one (D1 refuses BEGIN: only atomic batches). */
  readonly supportsInteractiveTransactions: boolean;
  /** Parameters one statement may bind. */
  readonly maxBoundParameters: number;
  /** Bytes of one statement's text. */
  readonly maxStatementBytes: number;
  /** Bytes of one value (a bound parameter, a stored text or blob). */
  readonly maxValueBytes: number;
}

/** Values per `in (...)` list of a statement that binds `otherParameters` besides the list. */
export function inListSize(dialect: DialectCapabilities, otherParameters: number): number {
  return dialect.maxBoundParameters - otherParameters;
}

/**
 * The row counts of multi-row inserts (one parameter per value) whose widest row has
 * `widestRow` columns: the largest power of two that fits the parameter limit, then
 * quarters of it while at least 8, then 1. Any number of rows is a sum of these, and a few
 * fixed statement shapes per table let prepared statements be reused across batches.
 */
export function insertRowCounts(dialect: DialectCapabilities, widestRow: number): number[] {
  const fits = Math.floor(dialect.maxBoundParameters / widestRow);
  let top = 1;
  while (top * 2 <= fits) top *= 2;
  const counts = [top];
  for (let n = top / 4; n >= 8; n /= 4) counts.push(n);
  if (top > 1) counts.push(1);
  return counts;
}

/** `values` cut into lists of at most `size`. */
export function chunks<T>(values: T[], size: number): T[][] {
  if (values.length <= size) return values.length === 0 ? [] : [values];
  const out: T[][] = [];
  for (let i = 0; i < values.length; i += size) out.push(values.slice(i, i + size));
  return out;
}
