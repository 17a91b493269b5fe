// Re-symbolication after an upload (docs/api.md "Symbols", "Re-symbolication and
// issues"): the events of the upload's release received in the last 48 hours are
// symbolicated in the background and their `symbolicated` frames stored, with the
// title, type and location those frames give. No event moves to another issue; the
// issues catch up with their events (regroup.ts): their title and location, and the
// fingerprint the symbolicated frames give, mapped to the issue or, when another issue
// has it, merged with it. Each run is a `symbol_jobs` row with a cursor (the last event
// id done), advanced after every batch: a process that stops mid-way leaves the row
// pending, and the next start (of this or another instance) goes on from the cursor.
// An instance holds a run through a lease renewed with every batch, so two instances
// on one PostgreSQL database never run the same job. A batch's frames and the cursor
// commit together with what the batch changes about issues, through `Store.atomic` (under
// the project's ingest lock when issues change: src/store/issue-merges.ts `runLocked`). The server works
// through runs in a loop (`kick`); the serverless edition, whose isolates live only
// while they serve, in bounded steps (`step`) that it runs after an upload's answer
// and from a cron.
import { CompiledQuery } from 'kysely';
import { DAY_MS, HOUR_MS, type Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import { eventTitle } from '../store/event-text.js';
import type { Store } from '../store/database.js';
import type { EventRow } from '../store/schema.js';
import type { Md5Hex } from '../ingest/grouping.js';
import {
  normalizeEvent,
  parseEventPayload,
  symbolicationInputOf,
  type ParsedEventPayload,
} from '../ingest/normalize.js';
import type { EventSymbolicator, SymbolicationInput } from '../ingest/types.js';
import { runLocked } from '../store/issue-merges.js';
import { regroupStatements, type RegroupedEvent } from './regroup.js';
import { encodeSymbolicated } from '../ingest/symbolicated.js';

export const RESYMBOLICATE_WINDOW_MS = 48 * HOUR_MS;
/** Events per batch of the server's loop: one transaction each. */
const BATCH_EVENTS = 500;
const LEASE_MS = 30_000;

type PayloadRow = Pick<EventRow, 'id' | 'raw' | 'payload_chunk' | 'payload_start' | 'payload_length'>;

interface JobRow {
  id: number;
  project_id: number;
  release: string;
  since: number;
  cursor: number;
  done: number;
}

/** Where a run stands between batches. */
interface RunState {
  id: number;
  projectId: number;
  release: string;
  since: number;
  cursor: number;
  done: number;
}

/** What a step did: whether it took a run, the events it went over, and whether any run is still pending. */
export interface StepResult {
  ran: boolean;
  events: number;
  pending: boolean;
}

/** Reads stored events' raw payloads (Node: src/store/payloads.ts storedPayloads). */
export type ReadPayloads = (db: Store['db'], rows: PayloadRow[]) => Promise<Map<number, Uint8Array>>;

export interface ResymbolicationDeps {
  store: Store;
  logger: Logger;
  readPayloads: ReadPayloads;
  /** The time merges and mappings are recorded at. */
  clock: Clock;
  /** The fingerprint hash ingest uses, so the symbolicated frames group as they would at ingest. */
  md5Hex: Md5Hex;
  /** Loads the symbol files these events need; a synchronous symbolicator (SymbolService.prepare). */
  prepare(projectId: number, inputs: SymbolicationInput[]): Promise<EventSymbolicator>;
  /** Events per batch (default 500); the serverless edition's steps take smaller ones. */
  batchEvents?: number;
  /** Called after every batch (tests pause here). */
  onBatch?: (jobId: number, done: number) => Promise<void> | void;
}

/** Records a run for the release ('' = every release) over the events of the last 48 hours. */
export async function scheduleResymbolication(
  store: Store,
  projectId: number,
  release: string,
  now: number,
): Promise<number> {
  // Finished runs are kept a week, to be looked at; then they go.
  await store.db
    .deleteFrom('symbol_jobs')
    .where('state', '=', 'done')
    .where('created_at', '<', now - 7 * DAY_MS)
    .execute();
  const row = await store.db
    .insertInto('symbol_jobs')
    .values({
      project_id: projectId,
      release,
      since: now - RESYMBOLICATE_WINDOW_MS,
      cursor: -1,
      state: 'pending',
      done: 0,
      lease_until: 0,
      created_at: now,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return Number(row.id);
}

export class ResymbolicationRunner {
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;
  private retry: ReturnType<typeof setTimeout> | null = null;

  constructor(private readonly deps: ResymbolicationDeps) {}

  private get batchEvents(): number {
    return this.deps.batchEvents ?? BATCH_EVENTS;
  }

  /** Starts working through pending runs unless already doing so. */
  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.loop()
      .catch((err) =>
        this.deps.logger.error(
          { err },
          're-symbolication stopped after an error; it resumes at the next upload or start',
        ),
      )
      .finally(() => {
        this.running = null;
        if (this.again && !this.stopped) {
          this.again = false;
          this.kick();
        }
      });
  }

  /** Resolves when no run is in progress in this process (tests). */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  /** Stops after the batch in progress; the run's lease is released so the next start resumes at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retry) clearTimeout(this.retry);
    await this.idle();
  }

  /**
   * One bounded step: claims a pending run and goes over at most `maxEvents` of its events
   * (whole batches), then finishes the run or gives its lease back, so the next step (of
   * this or another isolate) goes on from the cursor at once. For editions without a
   * process that outlives requests; the server runs `kick`'s loop instead.
   */
  async step(maxEvents: number): Promise<StepResult> {
    const job = await this.claim();
    if (!job) return { ran: false, events: 0, pending: await this.anyPending() };
    const state = await this.begin(job, true);
    let events = 0;
    while (events < maxEvents) {
      const limit = Math.min(this.batchEvents, maxEvents - events);
      const went = await this.batch(state, limit, () => false);
      events += went;
      // Fewer than asked: none is left after the cursor (later events were symbolicated at ingest).
      if (went < limit) {
        await this.finish(state);
        return { ran: true, events, pending: await this.anyPending() };
      }
    }
    await this.deps.store.db.updateTable('symbol_jobs').set({ lease_until: 0 }).where('id', '=', state.id).execute();
    return { ran: true, events, pending: true };
  }

  private async anyPending(): Promise<boolean> {
    const row = await this.deps.store.db
      .selectFrom('symbol_jobs')
      .select('id')
      .where('state', '=', 'pending')
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
  }

  private async loop(): Promise<void> {
    for (;;) {
      if (this.stopped) return;
      const job = await this.claim();
      if (!job) return this.scheduleRetry();
      await this.run(job);
    }
  }

  /** Another instance holds a pending run: look again when its lease would have run out. */
  private async scheduleRetry(): Promise<void> {
    const held = await this.deps.store.db
      .selectFrom('symbol_jobs')
      .select('lease_until')
      .where('state', '=', 'pending')
      .orderBy('lease_until')
      .limit(1)
      .executeTakeFirst();
    if (!held || this.stopped) return;
    const wait = Math.min(LEASE_MS, Math.max(1000, Number(held.lease_until) - Date.now() + 100));
    this.retry = setTimeout(() => {
      this.retry = null;
      this.kick();
    }, wait);
  }

  private async claim(): Promise<JobRow | null> {
    const db = this.deps.store.db;
    const now = Date.now();
    const candidates = await db
      .selectFrom('symbol_jobs')
      .selectAll()
      .where('state', '=', 'pending')
      .where('lease_until', '<', now)
      .orderBy('id')
      .limit(5)
      .execute();
    for (const job of candidates) {
      const taken = await db
        .updateTable('symbol_jobs')
        .set({ lease_until: now + LEASE_MS })
        .where('id', '=', job.id)
        .where('state', '=', 'pending')
        .where('lease_until', '=', job.lease_until)
        .executeTakeFirst();
      if (Number(taken.numUpdatedRows) === 1) return job;
    }
    return null;
  }

  /**
   * The run's state, its cursor placed before the window's first event on a fresh run.
   * A run taken up again is logged at info when a process resumes it after a restart;
   * the steps that carry a run forward in pieces log that at debug (one line a step).
   */
  private async begin(job: JobRow, steps = false): Promise<RunState> {
    const state: RunState = {
      id: Number(job.id),
      projectId: Number(job.project_id),
      release: job.release,
      since: Number(job.since),
      cursor: Number(job.cursor),
      done: Number(job.done),
    };
    if (state.cursor < 0) {
      // The first event received in the window: ids grow with receive order.
      const first = await this.deps.store.db
        .selectFrom('events')
        .select('id')
        .where('received_at', '>=', state.since)
        .orderBy('received_at')
        .limit(1)
        .executeTakeFirst();
      state.cursor = first ? Number(first.id) - 1 : Number.MAX_SAFE_INTEGER;
    }
    const fresh = Number(job.cursor) < 0;
    this.deps.logger[fresh || !steps ? 'info' : 'debug'](
      { job: state.id, project: state.projectId, release: state.release, resumedAt: state.done },
      're-symbolicating the events of the last 48 hours',
    );
    return state;
  }

  private async run(job: JobRow): Promise<void> {
    const state = await this.begin(job);
    let batches = 0;
    for (;;) {
      if ((await this.batch(state, this.batchEvents, () => this.stopped)) === 0) break;
      batches++;
      // A line every ten batches (5 000 events): long runs show they are moving.
      if (batches % 10 === 0)
        this.deps.logger.info(
          { job: state.id, cursor: state.cursor, symbolicated: state.done },
          're-symbolication progress',
        );
      await this.deps.onBatch?.(state.id, state.done);
      if (this.stopped) return;
    }
    await this.finish(state);
  }

  private async finish(state: RunState): Promise<void> {
    await this.deps.store.db
      .updateTable('symbol_jobs')
      .set({ state: 'done', cursor: state.cursor, done: state.done, lease_until: 0 })
      .where('id', '=', state.id)
      .execute();
    this.deps.logger.info(
      { job: state.id, project: state.projectId, release: state.release, symbolicated: state.done },
      're-symbolication finished',
    );
  }

  /**
   * Symbolicates the next `limit` events after the cursor and stores their frames with the
   * advanced cursor, together. The events gone over (0: the run is at its end). When
   * `release` says so, the lease is given back with the cursor (a stopping server).
   */
  private async batch(state: RunState, limit: number, release: () => boolean): Promise<number> {
    const { store } = this.deps;
    const db = store.db;
    if (state.cursor === Number.MAX_SAFE_INTEGER) return 0;
    let q = db
      .selectFrom('events')
      .select([
        'id',
        'raw',
        'payload_chunk',
        'payload_start',
        'payload_length',
        'received_at',
        'issue_id',
        'fingerprint',
        'timestamp',
        'title',
        'message',
        'error_type',
        'error_location',
      ])
      .where('project_id', '=', state.projectId)
      .where('id', '>', state.cursor);
    if (state.release !== '') q = q.where('release', '=', state.release);
    const rows = await q.orderBy('id').limit(limit).execute();
    if (rows.length === 0) return 0;
    const payloads = await this.deps.readPayloads(db, rows);
    const inputs: {
      row: (typeof rows)[number];
      raw: Uint8Array;
      parsed: ParsedEventPayload;
      input: SymbolicationInput;
    }[] = [];
    for (const row of rows) {
      if (Number(row.received_at) < state.since) continue;
      const raw = payloads.get(Number(row.id));
      if (!raw || raw.byteLength === 0) continue;
      try {
        const parsed = parseEventPayload(raw);
        inputs.push({ row, raw, parsed, input: symbolicationInputOf(parsed.ev) });
      } catch {
        // A payload that no longer parses stays as it is.
      }
    }
    // One load for the batch: the files are read (or found in the cache) once, then each event is mapped.
    const symbolicate = await this.deps.prepare(
      state.projectId,
      inputs.map((i) => i.input),
    );
    const updates: EventFrameUpdate[] = [];
    const regrouped: RegroupedEvent[] = [];
    for (const { row, raw, parsed, input } of inputs) {
      const out = symbolicate(input);
      if (!out) continue;
      const update: EventFrameUpdate = { id: Number(row.id), symbolicated: encodeSymbolicated(out) };
      updates.push(update);
      // Grouping, title, type and location from the symbolicated frames, by ingest's own rules.
      let n: ReturnType<typeof normalizeEvent>;
      try {
        n = normalizeEvent(raw, {
          receivedAt: Number(row.received_at),
          sentAt: null,
          envelopeEventId: null,
          clientIp: null,
          md5Hex: this.deps.md5Hex,
          parsed,
          symbolicate: () => out,
        });
      } catch {
        continue; // the frames alone, as for a payload that no longer parses
      }
      Object.assign(update, { title: n.title, errorType: n.errorType, location: n.location });
      // An event stored under its issue's fingerprint that the frames leave as it was changes nothing about issues.
      if (
        n.fingerprint === row.fingerprint &&
        n.title === eventTitle(row) &&
        n.errorType === row.error_type &&
        n.location === row.error_location
      )
        continue;
      regrouped.push({
        issueId: Number(row.issue_id),
        timestamp: Number(row.timestamp),
        before: { title: eventTitle(row), errorType: row.error_type, location: row.error_location },
        after: { title: n.title, errorType: n.errorType, location: n.location, fingerprint: n.fingerprint },
      });
    }
    const cursor = Number(rows[rows.length - 1].id);
    const done = state.done + updates.length;
    const jobUpdate = () =>
      db
        .updateTable('symbol_jobs')
        .set({ cursor, done, lease_until: release() ? 0 : Date.now() + LEASE_MS })
        .where('id', '=', state.id)
        .compile();
    const now = this.deps.clock.now();
    const frames =
      store.dialect === 'sqlite'
        ? frameUpdatesForBatch(updates, store.capabilities.maxValueBytes, this.deps.logger)
        : updates.map((u) =>
            db
              .updateTable('events')
              .set({
                symbolicated: u.symbolicated,
                ...(u.title !== undefined
                  ? { title: u.title, error_type: u.errorType, error_location: u.location }
                  : {}),
              })
              .where('id', '=', u.id)
              .compile(),
          );
    if (regrouped.length === 0) {
      await store.atomic([...frames, jobUpdate()]);
    } else {
      // Issues may be merged: under the project's ingest lock (src/store/issue-merges.ts).
      await runLocked(store, state.projectId, async (reader) => ({
        statements: [...frames, ...(await regroupStatements(reader, state.projectId, regrouped, now)), jobUpdate()],
        result: undefined,
      }));
    }
    state.cursor = cursor;
    state.done = done;
    return rows.length;
  }
}

const utf8 = new TextEncoder();

/** An event's symbolicated frames, with the title, type and location they give. */
export interface EventFrameUpdate {
  id: number;
  symbolicated: string;
  title?: string;
  errorType?: string;
  location?: string;
}

/**
 * The frame updates of a batch as a few statements in SQLite's SQL (SQLite, D1): the events'
 * ids and frames travel as one JSON parameter per statement, each under the value limit
 * (D1 binds 100 parameters per statement, and each statement of a batch counts against
 * an invocation's queries). An event whose frames alone pass the limit keeps what it had.
 */
export function frameUpdatesForBatch(
  updates: EventFrameUpdate[],
  maxValueBytes: number,
  logger?: Logger,
): CompiledQuery[] {
  const statements: CompiledQuery[] = [];
  const max = maxValueBytes - 1024;
  let part: string[] = [];
  let bytes = 2;
  const flush = () => {
    if (part.length === 0) return;
    statements.push(
      CompiledQuery.raw(
        `UPDATE events SET symbolicated = u.s, title = coalesce(u.t, events.title), error_type = coalesce(u.et, events.error_type),
           error_location = coalesce(u.loc, events.error_location)
         FROM (SELECT json_extract(value, '$.id') AS id, json_extract(value, '$.s') AS s, json_extract(value, '$.t') AS t,
           json_extract(value, '$.et') AS et, json_extract(value, '$.loc') AS loc FROM json_each(?)) AS u
         WHERE events.id = u.id`,
        [`[${part.join(',')}]`],
      ),
    );
    part = [];
    bytes = 2;
  };
  for (const u of updates) {
    const item = JSON.stringify({ id: u.id, s: u.symbolicated, t: u.title, et: u.errorType, loc: u.location });
    const size = utf8.encode(item).byteLength + 1;
    if (size + 2 > max) {
      logger?.warn(
        { event: u.id, bytes: size },
        'symbolicated frames too large to store on this database; the event keeps its frames',
      );
      continue;
    }
    if (bytes + size > max) flush();
    part.push(item);
    bytes += size;
  }
  flush();
  return statements;
}
