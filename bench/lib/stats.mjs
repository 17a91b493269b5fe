// Small statistics helpers for the benchmark (nearest-rank percentiles).

/** Nearest-rank percentiles of `values` (any order) for each p in 0..100; null when empty. */
export function percentiles(values, ps) {
  if (values.length === 0) return ps.map(() => null);
  const sorted = Float64Array.from(values).sort();
  return ps.map((p) => {
    const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
    return round(sorted[rank - 1]);
  });
}

export function round(x, digits = 2) {
  if (x === null || x === undefined || !Number.isFinite(x)) return x ?? null;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
