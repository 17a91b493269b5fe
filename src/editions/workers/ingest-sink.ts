// Where the serverless edition commits ingest work to D1: the IngestSink the pipeline
// hands each request's normalised events and sessions to (src/ingest/pipeline.ts).
//
// Not built yet: every submit answers 503 (the pipeline turns IngestUnavailableError
// into `{"error": "..."}` with CORS and X-Sentry-Error), so SDKs keep their events
// and resend. The commit will be one atomic `db.batch()` per request
// (Store.batch, src/store/d1.ts), planned by the pure ingest planner shared with the
// Node writer, within D1's limits: 100 bound parameters and 100 KB per statement,
// about 2 MB per value (payload chunks split to fit), and no interactive transaction,
// so counts, dedupe, quota and regression flips are conditional upserts that stay
// right under any interleaving of concurrent requests.
import type { IngestOutcome, IngestSink, IngestWork } from '../../ingest/types.js';
import { IngestUnavailableError } from '../../ingest/errors.js';
import type { Store } from '../../store/database.js';

export const INGEST_NOT_AVAILABLE = 'ingest is not available on this edition yet';

export class D1IngestSink implements IngestSink {
  constructor(readonly store: Store) {}

  async submit(_work: IngestWork): Promise<IngestOutcome> {
    throw new IngestUnavailableError(INGEST_NOT_AVAILABLE);
  }

  async close(): Promise<void> {}
}
