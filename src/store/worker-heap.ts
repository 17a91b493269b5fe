// Heap sizing shared by the store's worker threads (the SQLite batch thread and the
// compression worker).

/**
 * A worker's old-generation limit. Not a tight cap (the batch thread keeps about 11 MB
 * live under load; payload bytes live outside the V8 heap), but V8 picks how far the old
 * generation grows between full collections from it: with the process default (GBs)
 * up to 4 times what survived the last one, with 256 MB or less 1.3 times. On the batch
 * thread that was 45-50 MB of dead batches between collections; the limit took 25 MB off
 * the server's peak RSS at saturation, the compression worker's 9 MB (BENCHMARKS.md).
 */
export const WORKER_OLD_GENERATION_MB = 256;
