// The Node edition's reading of free disk space for the disk guard (src/privacy/disk.ts):
// statfs of the directory holding the SQLite database file.
import { statfs } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '../../config.js';
import { createDiskGuard, type DiskGuard } from '../../privacy/disk.js';
import { parseDatabaseUrl } from '../../store/database.js';

/** Bytes available to this process on the file system holding `dir`. */
export function freeBytesOf(dir: string): () => Promise<number> {
  return async () => {
    const s = await statfs(dir);
    return Number(s.bavail) * Number(s.bsize);
  };
}

/** The disk guard of a SQLite database with MIN_FREE_DISK_MB set; undefined otherwise. */
export function nodeDiskGuard(config: Pick<Config, 'databaseUrl' | 'minFreeDiskMb'>): DiskGuard | undefined {
  if (config.minFreeDiskMb <= 0) return undefined;
  const target = parseDatabaseUrl(config.databaseUrl);
  if (target.dialect !== 'sqlite') return undefined;
  return createDiskGuard(freeBytesOf(path.dirname(path.resolve(target.path))), config.minFreeDiskMb);
}
