// `faultline migrate`: brings the database schema up to date and exits. (serve
// does the same on every start; this is for deploy pipelines and checks.)
import type { Command } from 'commander';
import { migrate } from '../store/database.js';
import { openStore } from '../editions/node/open-store.js';
import type { CliContext } from './context.js';

export function register(program: Command, cli: CliContext): void {
  program
    .command('migrate')
    .description('bring the database named by DATABASE_URL up to the current schema, then exit')
    .action(async () => {
      const config = cli.config();
      const store = await openStore(config.databaseUrl);
      try {
        const { applied, version } = await migrate(store);
        const lines =
          applied.length > 0
            ? [`Migrated ${store.description}: applied ${applied.join(', ')}`, `Schema version: ${version}`]
            : [`${store.description} is up to date (schema version ${version})`];
        process.stdout.write(lines.join('\n') + '\n');
      } finally {
        await store.close();
      }
    });
}
