// `faultline backup <file>`: a consistent copy of the running SQLite database
// (src/editions/node/backup.ts), progress on standard error, a summary on standard
// output. PostgreSQL and D1 have their own tools (docs/operations.md "Backups").
import type { Command } from 'commander';
import { BackupError, backupSqlite, type BackupResult } from '../editions/node/backup.js';
import { parseDatabaseUrl } from '../store/database.js';
import { CliError, type CliContext } from './context.js';
import { progressReporter } from './progress.js';

export async function backupCommand(
  databaseUrl: string | undefined,
  file: string,
  out: (line: string) => void = (l) => process.stdout.write(`${l}\n`),
): Promise<BackupResult> {
  const target = parseDatabaseUrl(databaseUrl);
  if (target.dialect !== 'sqlite') {
    throw new CliError(
      'faultline backup copies SQLite databases; for PostgreSQL use pg_dump (docs/operations.md "Backups")',
    );
  }
  const progress = progressReporter('backup', 'pages');
  try {
    const result = await backupSqlite(target.path, file, (p) =>
      progress.update(p.totalPages - p.remainingPages, p.totalPages, p.oneStep ? '(in one step)' : ''),
    );
    progress.stop();
    out(
      `backup: ${result.file}: ${result.bytes} bytes, ${result.pages} pages, ${result.issues} issues, ${result.events} events, integrity ${result.integrity}, ${result.seconds.toFixed(1)} s`,
    );
    return result;
  } catch (err) {
    progress.stop();
    if (err instanceof BackupError) throw new CliError(err.message);
    throw err;
  }
}

export function register(program: Command, cli: CliContext): void {
  program
    .command('backup')
    .description('copy the SQLite database while the server runs, then verify the copy (PRAGMA integrity_check)')
    .argument('<file>', 'where the copy goes; must not exist yet')
    .action(async (file: string) => {
      await backupCommand(cli.config().databaseUrl, file);
    });
}
