// `faultline backup <file>` (docs/operations.md "Backups"): a consistent copy of a live
// SQLite database through SQLite's online backup API (better-sqlite3's `backup`), taken
// from a connection of its own while `serve` keeps writing. The copy is written beside
// the target as `<file>.partial`, checked by opening it and running `PRAGMA
// integrity_check`, and only then renamed to `<file>`, so a failed or interrupted
// backup never leaves a file that looks complete.
import fs from 'node:fs';
import path from 'node:path';
import BetterSqlite3 from 'better-sqlite3';

/** Pages copied per step: small enough for progress, large enough to be quick (4 MB of 4 KB pages). */
export const BACKUP_STEP_PAGES = 1000;

export class BackupError extends Error {}

export interface BackupProgress {
  totalPages: number;
  remainingPages: number;
  /** True once the copy restarted and goes on in one step (writes kept changing the source). */
  oneStep: boolean;
}

export interface BackupResult {
  file: string;
  bytes: number;
  pages: number;
  seconds: number;
  integrity: string;
  /** Rows of `issues` and `events` in the copy. */
  issues: number;
  events: number;
}

/** Why `target` cannot be written as a new backup file, or null. */
export function targetProblem(target: string): string | null {
  if (fs.existsSync(target))
    return `${target} already exists; a backup never overwrites a file (remove it or choose another name)`;
  const dir = path.dirname(path.resolve(target));
  let stat: fs.Stats;
  try {
    stat = fs.statSync(dir);
  } catch {
    return `the directory ${dir} does not exist`;
  }
  if (!stat.isDirectory()) return `${dir} is not a directory`;
  try {
    fs.accessSync(dir, fs.constants.W_OK);
  } catch {
    return `the directory ${dir} is not writable by this user`;
  }
  if (fs.existsSync(`${target}.partial`))
    return `${target}.partial exists (left by an earlier backup that did not finish?); remove it first`;
  return null;
}

/**
 * Copies the SQLite database at `source` to `target`. SQLite restarts an online backup
 * when another connection writes to the source between two steps; after a restart the
 * copy is taken in one step, which holds a read snapshot (WAL lets writers go on), so it
 * always finishes under constant ingest.
 */
export async function backupSqlite(
  source: string,
  target: string,
  onProgress?: (p: BackupProgress) => void,
): Promise<BackupResult> {
  const problem = targetProblem(target);
  if (problem) throw new BackupError(problem);
  if (!fs.existsSync(source)) throw new BackupError(`the database ${source} does not exist`);
  const partial = `${target}.partial`;
  const started = performance.now();
  const db = new BetterSqlite3(source, { readonly: true, fileMustExist: true });
  let lastRemaining = Number.POSITIVE_INFINITY;
  let oneStep = false;
  try {
    const done = await db.backup(partial, {
      progress({ totalPages, remainingPages }) {
        if (remainingPages > lastRemaining) oneStep = true;
        lastRemaining = remainingPages;
        onProgress?.({ totalPages, remainingPages, oneStep });
        return oneStep ? Math.max(totalPages, 1) : BACKUP_STEP_PAGES;
      },
    });
    onProgress?.({ totalPages: done.totalPages, remainingPages: 0, oneStep });
  } catch (err) {
    fs.rmSync(partial, { force: true });
    throw new BackupError(`the backup failed: ${(err as Error).message}`, { cause: err });
  } finally {
    db.close();
  }
  let verified: Omit<BackupResult, 'file' | 'bytes' | 'seconds'>;
  try {
    verified = verifyCopy(partial);
  } catch (err) {
    fs.rmSync(partial, { force: true });
    throw err;
  }
  fs.renameSync(partial, target);
  return { file: target, bytes: fs.statSync(target).size, seconds: (performance.now() - started) / 1000, ...verified };
}

/** Opens a copy and checks it: `PRAGMA integrity_check` must say ok. */
function verifyCopy(file: string): Omit<BackupResult, 'file' | 'bytes' | 'seconds'> {
  const copy = new BetterSqlite3(file, { readonly: true, fileMustExist: true });
  try {
    const rows = copy.pragma('integrity_check') as { integrity_check: string }[];
    const integrity = rows.map((r) => r.integrity_check).join('; ');
    if (integrity !== 'ok') throw new BackupError(`the copy failed its integrity check: ${integrity}`);
    const pages = Number(copy.pragma('page_count', { simple: true }));
    const count = (table: string) => {
      try {
        return Number((copy.prepare(`select count(*) as n from ${table}`).get() as { n: number }).n);
      } catch {
        return 0; // a database from before the table existed
      }
    };
    return { integrity, pages, issues: count('issues'), events: count('events') };
  } finally {
    copy.close();
  }
}
