// The property suites' fast-check settings: a fixed seed, so a failure reproduces, and
// bounded runs, so each file stays within a few seconds.
export const FUZZ = { seed: 252_026, numRuns: 300 } as const;
/** Runs of the suites that go through the real HTTP server and database. */
export const FUZZ_HTTP = { seed: FUZZ.seed, numRuns: 80 } as const;
