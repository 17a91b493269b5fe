// Named (server-side prepared) statements on PostgreSQL, for the one statement that
// writes an ingest batch. Its text depends only on which tables the batch writes
// (every value travels in an array parameter), so a handful of texts serve every
// batch; unnamed, PostgreSQL would parse and plan that statement of a dozen
// data-modifying CTEs for every batch (0.5 ms parsing and 0.3 ms planning of the
// ~10 ms a batch takes, in a chain where one project's batches run one after the other).
// Only the write is named: it inserts and upserts by key, so PostgreSQL's generic plan
// is as good as a custom one. The batch's reads stay unnamed: their plans depend on the
// parameters (measured: naming them too costs 3-14 % at saturation).

// A prepared write costs the PostgreSQL backend about 0.8 MB (its plan, plan source and
// query trees, pg_backend_memory_contexts) on every connection that ran it, so only
// the shapes that recur are named, and only a few: at most MAX_NAMED_STATEMENTS, each
// from its NAME_AFTER_USES-th use; the rest run unnamed as before.

/** Distinct statement texts named per process, at most. */
export const MAX_NAMED_STATEMENTS = 8;
/** A text is named from this use on (counted per process). */
export const NAME_AFTER_USES = 10;
/** Texts whose uses are counted, at most (a bound on what the counting keeps). */
const MAX_COUNTED = 256;

const names = new Map<string, string>();
const uses = new Map<string, number>();

/** Counts a use of a write's text; from its NAME_AFTER_USES-th use it goes out as a named statement. */
export function nameStatement(text: string): void {
  if (names.has(text) || names.size >= MAX_NAMED_STATEMENTS) return;
  const count = (uses.get(text) ?? 0) + 1;
  if (count >= NAME_AFTER_USES) {
    uses.delete(text);
    names.set(text, `faultline_write_${names.size + 1}`);
  } else if (count > 1 || uses.size < MAX_COUNTED) uses.set(text, count);
}

/** The name a write's text goes out under, once nameStatement has named it (src/editions/node/open-store.ts sends it so). */
export function namedStatement(text: string): string | undefined {
  return names.get(text);
}
