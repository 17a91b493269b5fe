// One ingest batch as one database transaction, by the store's database: the SQLite
// batch (sqlite.ts) or the PostgreSQL one (postgres.ts). Each reads what the batch's
// works touch (the snapshot), has the planner it is handed apply the ingest rules
// (src/ingest/plan.ts ingestPlanner, passed in by the edition's writer), and writes the planner's write set with multi-row statements,
// so the number of statements grows with the distinct keys a batch touches (projects,
// issues, hours, releases), never with its events. What they share is in
// ingest-rows.ts. docs/architecture.md ("The ingest writer (group commit)") explains
// the design.
import type { Store } from './database.js';
import type { BatchResult } from './ingest-rows.js';
import type { PreparedWork } from './write-set.js';
import { commitPostgresBatch } from './postgres.js';
import { commitSqliteBatch, type SqliteBatchOptions } from './sqlite.js';

export type { BatchOptions, BatchResult } from './ingest-rows.js';

/** What a batch takes besides its works (the issue cache only matters on SQLite). */
export type CommitOptions = SqliteBatchOptions;

/** Writes the works in one transaction; throws (after rolling back) when the database fails. */
export function commitIngestBatch(store: Store, works: PreparedWork[], options: CommitOptions): Promise<BatchResult> {
  return store.db
    .getExecutor()
    .provideConnection((connection) =>
      store.dialect === 'postgres'
        ? commitPostgresBatch(store.db, connection, works, options)
        : commitSqliteBatch(store.db, connection, works, options),
    );
}
