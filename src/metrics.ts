// What the app reports for `GET /metrics` (docs/operations.md "Metrics"), as an interface:
// the Node edition implements it with prom-client (src/editions/node/metrics.ts), one
// registry per app instance; editions without it serve no /metrics. Shared code only
// calls these methods.

/** Why an ingest request ended as it did (the `reason` label of faultline_ingest_requests_total). */
export type IngestOutcomeReason =
  | 'accepted'
  | 'unauthorized'
  | 'rate_limited'
  | 'quota_exceeded'
  | 'too_large'
  | 'bad_request'
  | 'disk_low'
  | 'unavailable'
  | 'client_closed';

export interface AppMetrics {
  /** One ingest request's outcome, with the event items it carried when it was accepted. */
  ingestOutcome(reason: IngestOutcomeReason, events: number): void;
  /** How long one ingest batch took to commit. */
  observeCommit(seconds: number): void;
  /** How long loading the symbol files of one ingest request took. */
  observeSymbolication(seconds: number): void;
  /**
   * How long turning one request's minidump into its event took (reading the dump, the
   * modules' unwind info, the stack walk); `processed` false when the dump was unreadable.
   */
  observeMinidump(seconds: number, processed: boolean): void;
  /** The Prometheus text exposition of every metric. */
  render(): Promise<string>;
  contentType: string;
}

/** The outcome reason of an ingest answer (status and error text of src/ingest/pipeline.ts). */
export function ingestReasonOf(status: number, error: unknown): IngestOutcomeReason {
  const message = typeof error === 'string' ? error : '';
  if (status >= 200 && status < 300) return 'accepted';
  if (status === 401 || status === 403) return 'unauthorized';
  if (status === 413) return 'too_large';
  if (status === 429) return message.includes('quota') ? 'quota_exceeded' : 'rate_limited';
  if (status === 503) return message.includes('disk') ? 'disk_low' : 'unavailable';
  if (status === 499) return 'client_closed';
  return 'bad_request';
}
