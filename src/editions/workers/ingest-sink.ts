// Where the serverless edition commits ingest work to D1: the IngestSink the pipeline
// hands each request's normalised events and sessions to (src/ingest/pipeline.ts).
// Each work is prepared as on the server (src/ingest/prepare.ts) and committed as one
// atomic `db.batch()` built by src/ingest/d1-commit.ts, whose header says how every rule
// stays right under concurrent requests without interactive transactions. The request
// is answered only once the batch has committed; a batch D1 fails is answered 503
// (nothing was written), so the SDK resends. A work that cannot fit D1's limits is
// refused with 413 before anything is sent. A batch that recorded alerts says so
// (`onAlertsRecorded`): the Worker sends them after the answer (deps.ts). With an R2
// bucket bound, the payload chunks are written to it first and the batch keeps their keys
// (src/store/blobs.ts); a bucket that fails is answered 503 like D1.
import { DATABASE_UNAVAILABLE, IngestUnavailableError } from '../../errors.js';
import type { Random } from '../../store/write-set.js';
import { prepareWork } from '../../ingest/prepare.js';
import type { IngestOutcome, IngestSink, IngestWork } from '../../ingest/types.js';
import type { Store } from '../../store/database.js';
import { payloadObjectKey, putObjects, type BlobBucket } from '../../store/blobs.js';
import { buildD1IngestCommit } from '../../ingest/d1-commit.js';
import { compressBlob } from './runtime.js';

/** What the sink counted since the isolate started (for logs and the benchmark). */
export interface D1IngestCounts {
  batches: number;
  statements: number;
  failed: number;
}

export class D1IngestSink implements IngestSink {
  readonly counts: D1IngestCounts = { batches: 0, statements: 0, failed: 0 };

  constructor(
    readonly store: Store,
    private readonly random: Random = Math.random,
    private readonly onAlertsRecorded?: () => void,
    readonly bucket?: BlobBucket,
  ) {}

  async submit(work: IngestWork): Promise<IngestOutcome> {
    const commit = buildD1IngestCommit(prepareWork(work), {
      random: this.random,
      compress: compressBlob,
      objectKey: this.bucket ? payloadObjectKey : undefined,
    });
    if (commit.statements.length === 0) return { kind: 'ok' };
    let results;
    try {
      if (this.bucket) await putObjects(this.bucket, commit.objects);
      results = await this.store.atomic(commit.statements);
    } catch (err) {
      this.counts.failed++;
      throw new IngestUnavailableError(DATABASE_UNAVAILABLE, { cause: err });
    }
    this.counts.batches++;
    this.counts.statements += commit.statements.length;
    if (this.onAlertsRecorded && commit.alertsRecorded(results) > 0) this.onAlertsRecorded();
    return commit.outcome(results as { rows: Record<string, unknown>[] }[]);
  }

  async close(): Promise<void> {}
}
