// Named (server-side prepared) statements on PostgreSQL, for the one statement that
// writes an ingest batch. Its text depends only on which tables the batch writes
// (every value travels in an array parameter), so a handful of texts serve every
// batch; unnamed, PostgreSQL parsed and planned that statement of a dozen
// data-modifying CTEs for every batch (0.5 ms parsing and 0.3 ms planning of the
// ~10 ms a batch took, in a chain where one project's batches run one after the other).
// Only the write is named: it inserts and upserts by key, so PostgreSQL's generic plan
// is as good as a custom one. The batch's reads stay unnamed: their plans depend on the
// parameters, and with them named too three alternating saturation pairs lost 3-14 %
// (BENCHMARKS.md, fifteenth session).

import type pg from 'pg';

/** Distinct statement texts named per process, at most; others run unnamed. */
export const MAX_NAMED_STATEMENTS = 64;

const names = new Map<string, string>();

/** Marks a statement text to be sent as a named statement from now on (until MAX_NAMED_STATEMENTS). */
export function nameStatement(text: string): void {
  if (names.size < MAX_NAMED_STATEMENTS && !names.has(text)) names.set(text, `faultline_write_${names.size + 1}`);
}

/**
 * Makes a pool client send the texts nameStatement marked as named statements: the
 * first use on a connection prepares it (node-postgres remembers which connection
 * prepared which name), later uses only bind and execute. Kysely calls
 * `client.query(text, values)`; anything else passes through unchanged.
 */
export function sendNamedStatements(client: pg.PoolClient): void {
  const query = client.query as (...args: unknown[]) => unknown;
  (client as { query: unknown }).query = function (this: pg.PoolClient, ...args: unknown[]) {
    const [text, values] = args;
    if (typeof text === 'string' && Array.isArray(values) && args.length === 2) {
      const name = names.get(text);
      if (name !== undefined) return query.call(this, { name, text, values });
    }
    return query.apply(this, args);
  };
}
