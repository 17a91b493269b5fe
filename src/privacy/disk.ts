// Storage: the disk guard (docs/privacy.md "Disk guard"). Below MIN_FREE_DISK_MB free on
// the database's file system, ingest is refused with 503 and Retry-After, and /health
// says why, so a full disk never corrupts the database or fails writes half-way. How free
// space is read is the edition's (Node: statfs of the SQLite file's directory), injected;
// the answer is remembered for a moment, so a burst of requests costs one look.

export interface DiskState {
  /** Free megabytes where the database lives. */
  freeMb: number;
  minFreeMb: number;
  /** True when ingest is refused. */
  low: boolean;
}

export type DiskGuard = () => Promise<DiskState>;

/** How long one reading of free space is trusted. */
export const DISK_CHECK_MS = 2000;
/** What a refused SDK is told to wait (Retry-After). */
export const DISK_RETRY_AFTER_SECONDS = 60;
export const DISK_LOW_MESSAGE = 'the server is low on disk space and refuses new events for now; send them again later';

/**
 * A guard over `freeBytes` (the edition's reading of the file system). A failing reading
 * counts as not low: the guard must never refuse ingest because it could not look.
 */
export function createDiskGuard(
  freeBytes: () => Promise<number>,
  minFreeMb: number,
  now: () => number = Date.now,
): DiskGuard {
  let cached: { state: DiskState; until: number } | null = null;
  let pending: Promise<DiskState> | null = null;
  return async () => {
    const t = now();
    if (cached && cached.until > t) return cached.state;
    pending ??= (async () => {
      try {
        const freeMb = Math.floor((await freeBytes()) / (1024 * 1024));
        const state = { freeMb, minFreeMb, low: freeMb < minFreeMb };
        cached = { state, until: now() + DISK_CHECK_MS };
        return state;
      } catch {
        return { freeMb: -1, minFreeMb, low: false };
      } finally {
        pending = null;
      }
    })();
    return pending;
  };
}
