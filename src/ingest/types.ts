// The normalised shapes that flow from the envelope parser and normaliser
// (request side, pure CPU) to the group-commit writer (database side).
import type { Kysely } from 'kysely';
import type { ScrubReport } from '../privacy/scrub.js';
import type { Database } from '../store/schema.js';
import type { ParsedEnvelope } from './envelope.js';
import type { Decompress } from './decode.js';
import type { Md5Hex } from './grouping.js';
import type { EventRowFields, ProjectRecord } from '../store/records.js';
import type { IngestOutcome, SessionInput } from '../store/write-set.js';

export { LEVELS, type Level } from '../store/records.js';
export type { IngestOutcome, SessionStatus } from '../store/write-set.js';

export interface NormalizedFrame {
  filename?: string;
  abs_path?: string;
  function?: string;
  module?: string;
  lineno?: number;
  colno?: number;
  in_app?: boolean;
  instruction_addr?: string;
  image_addr?: string;
  package?: string;
  platform?: string;
  context_line?: string;
  [key: string]: unknown;
}

export interface NormalizedException {
  type: string;
  value: string;
  module?: string;
  mechanism?: { type?: string; handled?: boolean; synthetic?: boolean; [key: string]: unknown };
  frames: NormalizedFrame[];
}

/** One thread of `threads` as the event detail shows it (frames oldest call first). */
export interface NormalizedThread {
  id: string | null;
  name: string | null;
  crashed: boolean;
  current: boolean;
  main: boolean;
  state: string | null;
  frames: NormalizedFrame[];
}

/** What the event detail route returns (beside the row's summary fields). */
export interface EventDetailData {
  message: string;
  exceptions: NormalizedException[];
  breadcrumbs: Record<string, unknown>[];
  contexts: Record<string, unknown>;
  user: Record<string, unknown> | null;
  request: Record<string, unknown> | null;
  extra: Record<string, unknown> | null;
  sdk: Record<string, unknown> | null;
  debug_images: Record<string, unknown>[];
  /** The event's threads, the crashed one first. */
  threads: NormalizedThread[];
  fingerprint_input: string[] | null;
  logger: string | null;
  server_name: string | null;
  /** What server-side scrubbing replaced in this event (src/privacy/scrub.ts); null when nothing. */
  scrubbed: ScrubReport | null;
}

export interface NormalizedEvent extends EventRowFields {
  tags: Record<string, string>;
  /** The item payload exactly as received. */
  raw: Uint8Array;
  /**
   * JSON of the symbolicated frames, one entry per exception of the chain (a frame list,
   * or null when nothing in it changed); absent when the event was not symbolicated.
   */
  symbolicated?: string | null;
}

/** What symbolication reads from an event (src/symbols), as the normaliser extracted it. */
export interface SymbolicationInput {
  platform: string;
  release: string;
  dist: string;
  /** `debug_meta.images`. */
  images: Record<string, unknown>[];
  /** The exception chain as normalised (each stack oldest call first). */
  exceptions: NormalizedException[];
  /** `threads` as normalised (the crashed thread first); their stacks are symbolicated too. */
  threads?: NormalizedThread[];
}

/** Symbolication's answer: per exception, the new frames (null = unchanged) and remapped type. */
export interface SymbolicationOutput {
  frames: (NormalizedFrame[] | null)[];
  types: ({ type: string; module?: string } | undefined)[];
  /** Per thread of the input (up to MAX_SYMBOLICATED_THREADS), the new frames (null = unchanged). */
  threads?: (NormalizedFrame[] | null)[];
}

/** Symbolicates an event synchronously with symbol files loaded beforehand; null when nothing changed. */
export type EventSymbolicator = (input: SymbolicationInput) => SymbolicationOutput | null;

/** A session item as normalised; the store's SessionInput with `init`, and `anr` as a flag. */
export interface SessionUpdate extends Omit<SessionInput, 'anr'> {
  init: boolean;
  /** `abnormal_mechanism` starts with `anr_` (Android's ANR, an app hang): the session counts for the ANR rate. */
  anr?: boolean;
}

export interface SessionAggregate {
  started: number; // epoch ms
  release: string;
  environment: string;
  exited: number;
  errored: number;
  abnormal: number;
  crashed: number;
  unhandled: number;
}

/** One request's worth of ingest work, handed to the group-commit writer. */
export interface IngestWork {
  project: ProjectRecord;
  receivedAt: number;
  events: NormalizedEvent[];
  sessions: SessionUpdate[];
  aggregates: SessionAggregate[];
}

/** Counters of the group-commit writer since it started (for the benchmark and logs). */
export interface IngestStats {
  /** Transactions committed (the batch thread may merge several batches into one). */
  batchesCommitted: number;
  batchesFailed: number;
  worksCommitted: number;
  worksFailed: number;
  /** Event items in committed batches, before dedupe and quota. */
  eventsReceived: number;
  /** Events counted into issues (not duplicates, not refused by the quota). */
  eventsAccepted: number;
  /** Events written to the events table (kept by sampling). */
  eventsStored: number;
  eventsDuplicate: number;
  eventsRefused: number;
  sessionUpdates: number;
  /** Items = events + session updates + aggregate buckets. */
  itemsCommitted: number;
  /** The largest batch the writer handed over (before the batch thread merged any). */
  largestBatchItems: number;
  averageBatchWorks: number;
  averageBatchItems: number;
  averageBatchEvents: number;
  /** Works waiting for the next transaction right now. */
  queued: number;
  /** Batches committed on the SQLite batch thread (the rest ran on the main thread). */
  batchesOnThread: number;
}

/** The writer as the HTTP layer sees it: resolves only after the work is committed. */
export interface IngestSink {
  submit(work: IngestWork): Promise<IngestOutcome>;
  /** Flushes what is queued and stops accepting work. */
  close(): Promise<void>;
  /** Counters, when the sink keeps them (the group-commit writer does). */
  stats?(): IngestStats;
}

/** What the ingest path asks of symbolication (src/symbols/service.ts implements it). */
export interface IngestSymbolication {
  /** Whether the project has symbol files; synchronous while the cached answer is fresh. */
  projectHasSymbols(projectId: number): boolean | Promise<boolean>;
  /** Loads the symbol files these events need; a synchronous symbolicator for them. */
  prepare(projectId: number, inputs: SymbolicationInput[]): Promise<EventSymbolicator>;
}

/**
 * The step that turns an envelope's `event.minidump` attachment into the event the dump
 * stands for, before symbolication (src/minidump/ingest.ts expandMinidumpEnvelope; the
 * edition passes it). Declared here because the minidump reader walks stacks with the
 * project's symbol files (src/symbols), which run this folder's normalisation. Resolves
 * to the envelope to go on with and the dumps read, to keep with the event (none when the
 * dump is unreadable: the envelope stays as it came).
 */
export type ExpandMinidump = (
  db: Kysely<Database>,
  projectId: number,
  envelope: ParsedEnvelope,
) => Promise<{ envelope: ParsedEnvelope; attachments: readonly unknown[] }>;

/**
 * What the ingest path needs beyond Web APIs, supplied by the edition (Node:
 * src/editions/node/runtime.ts). Both run synchronously: decompression once per
 * request, MD5 once per event on the hot path.
 */
export interface IngestRuntime {
  /** Content-Encoding and legacy /store/ decompression, output capped (see Decompress). */
  decompress: Decompress;
  /** The fingerprint hash; must be MD5, so fingerprints match those already stored. */
  md5Hex: Md5Hex;
  /**
   * Resolves once the event loop has handled the I/O that is ready (Node: the next
   * check phase, `setImmediate`; on PostgreSQL a burst goes a few per check phase). The
   * pipeline waits for it between reading a body and parsing it; see handleIngest.
   * Editions without such a loop leave it out.
   */
  yieldToIo?: () => Promise<void>;
}
