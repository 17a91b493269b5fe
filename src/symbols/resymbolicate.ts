// Re-symbolication after an upload (DECISIONS "Symbols"): the events of the upload's
// release received in the last 48 hours are symbolicated in the background and their
// `symbolicated` frames stored. Issues, fingerprints and titles are never touched, so no
// event moves to another issue. Each run is a `symbol_jobs` row with a cursor (the last
// event id done), advanced after every batch: a process that stops mid-way leaves the
// row pending, and the next start (of this or another instance) goes on from the cursor.
// An instance holds a run through a lease renewed with every batch, so two instances
// on one PostgreSQL database never run the same job.
import { DAY_MS, HOUR_MS } from '../clock.js';
import type { Logger } from '../logger.js';
import type { Store } from '../store/database.js';
import type { EventRow } from '../store/schema.js';
import { parseEventPayload, symbolicationInputOf } from '../ingest/normalize.js';
import type { EventSymbolicator, SymbolicationInput } from '../ingest/types.js';

export const RESYMBOLICATE_WINDOW_MS = 48 * HOUR_MS;
const BATCH_EVENTS = 500;
const LEASE_MS = 30_000;

type PayloadRow = Pick<EventRow, 'id' | 'raw' | 'payload_chunk' | 'payload_start' | 'payload_length'>;

/** Reads stored events' raw payloads (Node: src/store/payloads.ts storedPayloads). */
export type ReadPayloads = (db: Store['db'], rows: PayloadRow[]) => Promise<Map<number, Uint8Array>>;

export interface ResymbolicationDeps {
  store: Store;
  logger: Logger;
  readPayloads: ReadPayloads;
  /** Loads the symbol files these events need; a synchronous symbolicator (SymbolService.prepare). */
  prepare(projectId: number, inputs: SymbolicationInput[]): Promise<EventSymbolicator>;
  /** Called after every batch (tests pause here). */
  onBatch?: (jobId: number, done: number) => Promise<void> | void;
}

/** Records a run for the release ('' = every release) over the events of the last 48 hours. */
export async function scheduleResymbolication(store: Store, projectId: number, release: string, now: number): Promise<number> {
  // Finished runs are kept a week, to be looked at; then they go.
  await store.db.deleteFrom('symbol_jobs').where('state', '=', 'done').where('created_at', '<', now - 7 * DAY_MS).execute();
  const row = await store.db
    .insertInto('symbol_jobs')
    .values({ project_id: projectId, release, since: now - RESYMBOLICATE_WINDOW_MS, cursor: -1, state: 'pending', done: 0, lease_until: 0, created_at: now })
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

  /** Starts working through pending runs unless already doing so. */
  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.loop()
      .catch((err) => this.deps.logger.error({ err }, 're-symbolication stopped after an error; it resumes at the next upload or start'))
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

  private async claim() {
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

  private async run(job: { id: number; project_id: number; release: string; since: number; cursor: number; done: number }): Promise<void> {
    const { store, logger } = this.deps;
    const db = store.db;
    const id = Number(job.id);
    const projectId = Number(job.project_id);
    const since = Number(job.since);
    let cursor = Number(job.cursor);
    let done = Number(job.done);
    if (cursor < 0) {
      // The first event received in the window: ids grow with receive order.
      const first = await db.selectFrom('events').select('id').where('received_at', '>=', since).orderBy('received_at').limit(1).executeTakeFirst();
      cursor = first ? Number(first.id) - 1 : Number.MAX_SAFE_INTEGER;
    }
    logger.info({ job: id, project: projectId, release: job.release, resumedAt: done }, 're-symbolicating the events of the last 48 hours');
    let batches = 0;
    for (;;) {
      let q = db
        .selectFrom('events')
        .select(['id', 'raw', 'payload_chunk', 'payload_start', 'payload_length', 'received_at'])
        .where('project_id', '=', projectId)
        .where('id', '>', cursor);
      if (job.release !== '') q = q.where('release', '=', job.release);
      const rows = cursor === Number.MAX_SAFE_INTEGER ? [] : await q.orderBy('id').limit(BATCH_EVENTS).execute();
      if (rows.length === 0) break;
      const payloads = await this.deps.readPayloads(db, rows);
      const inputs: { id: number; input: SymbolicationInput }[] = [];
      for (const row of rows) {
        if (Number(row.received_at) < since) continue;
        const raw = payloads.get(Number(row.id));
        if (!raw || raw.byteLength === 0) continue;
        try {
          inputs.push({ id: Number(row.id), input: symbolicationInputOf(parseEventPayload(raw).ev) });
        } catch {
          // A payload that no longer parses stays as it is.
        }
      }
      // One load for the batch: the files are read (or found in the cache) once, then each event is mapped.
      const symbolicate = await this.deps.prepare(
        projectId,
        inputs.map((i) => i.input),
      );
      const updates: { id: number; symbolicated: string }[] = [];
      for (const { id: eventId, input } of inputs) {
        const out = symbolicate(input);
        if (out) updates.push({ id: eventId, symbolicated: JSON.stringify(out.frames) });
      }
      cursor = Number(rows[rows.length - 1].id);
      done += updates.length;
      await db.transaction().execute(async (trx) => {
        for (const u of updates) await trx.updateTable('events').set({ symbolicated: u.symbolicated }).where('id', '=', u.id).execute();
        await trx
          .updateTable('symbol_jobs')
          .set({ cursor, done, lease_until: this.stopped ? 0 : Date.now() + LEASE_MS })
          .where('id', '=', id)
          .execute();
      });
      batches++;
      // A line every ten batches (5 000 events): long runs show they are moving.
      if (batches % 10 === 0) logger.info({ job: id, cursor, symbolicated: done }, 're-symbolication progress');
      await this.deps.onBatch?.(id, done);
      if (this.stopped) return;
    }
    await db.updateTable('symbol_jobs').set({ state: 'done', cursor, done, lease_until: 0 }).where('id', '=', id).execute();
    logger.info({ job: id, project: projectId, release: job.release, symbolicated: done }, 're-symbolication finished');
  }
}
