// The symbolication service one process shares: which projects have symbol files (a
// flag cached for a few seconds, so events of projects without symbols pay one map
// lookup), which stored files an event's lookups resolve to (cached the same way), and
// the parsed files themselves in a least-recently-used cache bounded by bytes, so each
// file is parsed at most once while it stays cached. Ingest calls `prepare` before
// normalising (symbolication happens before grouping); re-symbolication and the routes
// call the rest. Uploads and deletes through this process forget the cached facts at
// once; another instance on the same PostgreSQL database sees them within FACTS_TTL_MS.
import type { Logger } from '../logger.js';
import { HOUR_MS, type Clock } from '../clock.js';
import type { Md5Hex } from '../ingest/grouping.js';
import type {
  EventSymbolicator,
  NormalizedException,
  SymbolicationInput,
  SymbolicationOutput,
} from '../ingest/types.js';
import type { Store } from '../store/database.js';
import { ByteLru, TtlMap } from './cache.js';
import {
  checkSymbolKinds,
  handlerOf,
  lookupKey,
  type LoadedSymbols,
  type SymbolKindHandler,
  type SymbolKinds,
  type SymbolParser,
  type SymbolicationState,
  type SymbolLookup,
} from './kinds.js';
import type { Demangler } from './native/demangle.js';
import { servesRank } from './sourcemap.js';
import { ResymbolicationRunner, scheduleResymbolication, type ReadPayloads, type StepResult } from './resymbolicate.js';
import {
  basenameOf,
  deleteSymbolFile,
  findAllByDebugId,
  findByRelease,
  INDEX_PART,
  isKeptKind,
  readSymbolBytes,
  saveDerivedIndex,
  storedFileSource,
  symbolKindsOf,
  sweepAbandonedWrites,
  SWEEP_BATCH,
  type ByteSource,
  type SymbolFileRow,
  type SymbolKind,
} from './storage.js';
import { StagedUpload, UPLOAD_LIMITS, type UploadLimits, type UploadTarget } from './upload.js';

/** How long a project's "has symbols" flag and a lookup's answer are reused. */
export const FACTS_TTL_MS = 5_000;
/** How often abandoned uploads are looked for after the start. */
export const SWEEP_INTERVAL_MS = 10 * 60_000;
/** Default bound of the parsed-file cache. */
export const DEFAULT_SYMBOL_CACHE_BYTES = 256 * 1024 * 1024;

export interface SymbolServiceOptions {
  store: Store;
  clock: Clock;
  logger: Logger;
  /**
   * The kinds this edition handles, in the order they rewrite an event's frames (the
   * editions pass `defaultSymbolKinds()`); uploads of other kinds are refused.
   */
  kinds: SymbolKinds;
  /**
   * C++/Rust demangling for native frames (src/symbols/native/demangle.ts), or a promise of
   * it while it loads (the serverless edition loads it as the isolate starts); absent or
   * undefined, native names stay mangled.
   */
  demangle?: Demangler | Promise<Demangler | undefined>;
  cacheBytes?: number;
  /** The fingerprint hash ingest uses: re-symbolication groups the symbolicated frames with it. */
  md5Hex: Md5Hex;
  /** Reads stored events' payloads for re-symbolication; without it uploads re-symbolicate nothing. */
  readPayloads?: ReadPayloads;
  /**
   * Where long parses (source maps) run: the Node edition's worker thread, so a 50 MB map
   * does not stop every request while it is parsed. Without it they run inline.
   */
  parser?: SymbolParser;
  /**
   * This process is the only one writing symbol files to the database (the Node server on
   * SQLite): a `writing` row found at start belongs to an upload that died with it.
   */
  soleWriter?: boolean;
  /** How often abandoned uploads are looked for after the start (SWEEP_INTERVAL_MS; tests shorten it). */
  sweepIntervalMs?: number;
  /**
   * Limits of an upload instead of UPLOAD_LIMITS (the serverless edition: what an isolate
   * can parse). They bound the sentry-cli routes' files too.
   */
  uploadLimits?: UploadLimits;
  /**
   * Re-symbolication in bounded steps the edition runs (`resymbolicationStep`) instead of
   * a loop in this process: the serverless edition, whose isolates live only while they
   * serve. Called when an upload recorded a run, so the edition can start a step.
   */
  steps?: { batchEvents: number; scheduled(): void };
}

export interface SymbolServiceStats {
  cachedFiles: number;
  cachedBytes: number;
  loads: number;
}

/**
 * One upload's files, all stored or none (the parts of one request): `stage` or
 * `stageFile` each, then `commit`, which also forgets cached facts and starts the
 * re-symbolication runs; or `abort`. SymbolInputError (400) from `stage`/`stageFile` when a
 * file is refused; everything staged is removed then.
 */
export interface SymbolIntake {
  /** An upload that may be a ZIP of files of its kind (the Symbols routes). */
  stage(target: UploadTarget, source: ByteSource): Promise<void>;
  /** One file as it is (sentry-cli: archives are read on its side, entry by entry). */
  stageFile(target: UploadTarget, source: ByteSource): Promise<void>;
  commit(): Promise<SymbolFileRow[]>;
  abort(): Promise<void>;
}

export class SymbolService {
  private readonly projectKinds = new TtlMap<number, Set<SymbolKind>>(FACTS_TTL_MS);
  private readonly lookups = new TtlMap<string, SymbolFileRow[]>(FACTS_TTL_MS, 50_000);
  private readonly parsed: ByteLru<number, LoadedSymbols>;
  /** Loads in flight, so concurrent requests parse a file once. */
  private readonly loading = new Map<number, Promise<LoadedSymbols | null>>();
  /** Files that failed to parse (corrupt), not retried for a while. */
  private readonly broken = new TtlMap<number, true>(60_000);
  private loads = 0;
  private sweepTimer: ReturnType<typeof setInterval> | null = null;
  private sweeping: Promise<unknown> = Promise.resolve();
  /** Background re-symbolication (null when the edition cannot read stored payloads). */
  readonly jobs: ResymbolicationRunner | null;

  constructor(private readonly options: SymbolServiceOptions) {
    checkSymbolKinds(options.kinds);
    this.parsed = new ByteLru(options.cacheBytes ?? DEFAULT_SYMBOL_CACHE_BYTES);
    const readPayloads = options.readPayloads;
    this.jobs = readPayloads
      ? new ResymbolicationRunner({
          store: options.store,
          logger: options.logger,
          readPayloads,
          clock: options.clock,
          md5Hex: options.md5Hex,
          batchEvents: options.steps?.batchEvents,
          prepare: (projectId, inputs) => this.prepare(projectId, inputs),
        })
      : null;
  }

  /**
   * Resumes re-symbolication runs left pending (a restart in the middle of one) and removes
   * the half-written files of uploads a stopped process left: with `soleWriter` (the Node
   * server on SQLite) every `writing` row there is at start; else (PostgreSQL, where other
   * instances may be writing) those begun over an hour ago, at start and every
   * SWEEP_INTERVAL_MS after (docs/architecture.md "Symbolication").
   */
  start(): void {
    if (!this.options.steps) this.jobs?.kick();
    const sweep = (everything: boolean) =>
      this.sweepAbandoned(everything).catch((err) =>
        this.options.logger.warn({ err }, 'could not remove half-written symbol files'),
      );
    this.sweeping = sweep(this.options.soleWriter === true);
    this.sweepTimer ??= setInterval(() => {
      this.sweeping = sweep(false);
    }, this.options.sweepIntervalMs ?? SWEEP_INTERVAL_MS);
    (this.sweepTimer as { unref?: () => void }).unref?.();
  }

  /** Removes abandoned `writing` rows and their chunks; how many. */
  async sweepAbandoned(everything: boolean): Promise<number> {
    const cutoff = everything ? Number.MAX_SAFE_INTEGER : this.options.clock.now() - HOUR_MS;
    let swept = 0;
    for (;;) {
      const n = await sweepAbandonedWrites(this.db, cutoff);
      swept += n;
      if (n < SWEEP_BATCH) break;
    }
    if (swept > 0) this.options.logger.info({ symbol_files: swept }, 'half-written symbol uploads removed');
    return swept;
  }

  /** Stops background work after its current batch. */
  async close(): Promise<void> {
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    this.sweepTimer = null;
    await this.sweeping;
    await this.jobs?.stop();
    await this.options.parser?.close();
  }

  /**
   * Stores an upload (a file or a zip), forgets cached facts of the project, and starts
   * re-symbolicating the release's events of the last 48 hours in the background.
   * SymbolInputError (400) when anything in it is refused; then nothing is stored.
   */
  async upload(target: UploadTarget, source: ByteSource): Promise<SymbolFileRow[]> {
    const intake = this.beginUpload();
    await intake.stage(target, source);
    return intake.commit();
  }

  /** The one way symbol files are stored: the Symbols routes and the sentry-cli routes both stage here. */
  beginUpload(): SymbolIntake {
    const staged = new StagedUpload(
      this.db,
      this.options.kinds,
      this.options.clock.now(),
      this.options.uploadLimits,
      this.options.store,
    );
    const projects = new Set<number>();
    return {
      stage: async (target, source) => {
        projects.add(target.projectId);
        await staged.stage(target, source);
      },
      stageFile: async (target, source) => {
        projects.add(target.projectId);
        await staged.stageFile(target, source);
      },
      commit: async () => {
        const { rows, replaced } = await staged.commit();
        for (const projectId of projects) this.invalidate(projectId, replaced);
        // Kept-only files symbolicate nothing: no event changes, so none is re-symbolicated.
        const runs = new Set(rows.filter((r) => !isKeptKind(r.kind)).map((r) => `${r.project_id}\n${r.release}`));
        for (const run of runs) {
          const [projectId, release] = run.split('\n');
          await this.resymbolicate(Number(projectId), release);
        }
        return rows;
      },
      abort: () => staged.abort(),
    };
  }

  /** The kinds this service stores (the edition's handlers). */
  get kindNames(): ReadonlySet<SymbolKind> {
    return new Set(this.options.kinds.map((h) => h.kind));
  }

  /** The upload limits: they bound the sentry-cli routes' files and archives as the Symbols routes'. */
  get uploaderLimits(): UploadLimits {
    return this.options.uploadLimits ?? UPLOAD_LIMITS;
  }

  /** Schedules (and starts) a re-symbolication run; for files stored by other routes too. */
  async resymbolicate(projectId: number, release: string): Promise<void> {
    if (!this.jobs) return;
    await scheduleResymbolication(this.options.store, projectId, release, this.options.clock.now());
    if (this.options.steps) this.options.steps.scheduled();
    else this.jobs.kick();
  }

  /** One bounded step of the pending re-symbolication runs (editions built with `steps`). */
  async resymbolicationStep(maxEvents: number): Promise<StepResult> {
    if (!this.jobs) return { ran: false, events: 0, pending: false };
    return this.jobs.step(maxEvents);
  }

  /** Deletes a file of the project; false when there is none. */
  async deleteFile(projectId: number, id: number): Promise<boolean> {
    const deleted = await deleteSymbolFile(this.db, projectId, id);
    if (deleted) this.invalidate(projectId, [id]);
    return deleted;
  }

  private get db() {
    return this.options.store.db;
  }

  private now(): number {
    return Date.now();
  }

  /** True when the project has symbol files: synchronous while the cached flag is fresh. */
  projectHasSymbols(projectId: number): boolean | Promise<boolean> {
    const known = this.projectKinds.get(projectId, this.now());
    if (known) return known.size > 0;
    return this.kindsOf(projectId).then((k) => k.size > 0);
  }

  private async kindsOf(projectId: number): Promise<Set<SymbolKind>> {
    const cached = this.projectKinds.get(projectId, this.now());
    if (cached) return cached;
    const kinds = await symbolKindsOf(this.db, projectId);
    this.projectKinds.set(projectId, kinds, this.now());
    return kinds;
  }

  /** Forgets what this process cached about a project's files (after an upload or delete). */
  invalidate(projectId: number, removedFileIds: number[] = []): void {
    this.projectKinds.delete(projectId);
    this.lookups.clear();
    for (const id of removedFileIds) this.parsed.delete(id);
  }

  stats(): SymbolServiceStats {
    return { cachedFiles: this.parsed.size, cachedBytes: this.parsed.bytes, loads: this.loads };
  }

  private async resolveRows(projectId: number, lookup: SymbolLookup): Promise<SymbolFileRow[]> {
    const key = `${projectId}|${lookupKey(lookup)}`;
    const cached = this.lookups.get(key, this.now());
    if (cached) return cached;
    let rows: SymbolFileRow[];
    if (lookup.by === 'debug_id') {
      rows = await findAllByDebugId(this.db, projectId, lookup.kind, lookup.debugId);
    } else if (lookup.name !== undefined) {
      const candidates = await findByRelease(this.db, projectId, lookup.kind, lookup.release, {
        dist: lookup.dist,
        servesBasename: basenameOf(lookup.name),
      });
      const name = lookup.name;
      rows = candidates
        .map((row) => ({ row, rank: servesRank(row.serves, name) }))
        .filter((c) => c.rank >= 0)
        .sort((a, b) => a.rank - b.rank || Number(b.row.id) - Number(a.row.id))
        .map((c) => c.row);
    } else {
      rows = await findByRelease(this.db, projectId, lookup.kind, lookup.release);
    }
    this.lookups.set(key, rows, this.now());
    return rows;
  }

  /** The parsed file, from the cache or parsed now (once, however many callers wait for it). */
  async loadFile(row: SymbolFileRow): Promise<LoadedSymbols | null> {
    const id = Number(row.id);
    const hit = this.parsed.get(id);
    if (hit) return hit;
    if (this.broken.get(id, this.now())) return null;
    let pending = this.loading.get(id);
    if (!pending) {
      pending = (async () => {
        const handler = handlerOf(this.options.kinds, row.kind);
        if (!handler) return null;
        try {
          let index = Number(row.index_size) > 0 ? await readSymbolBytes(this.db, id, INDEX_PART) : null;
          if (index && handler.indexIsCurrent && handler.rebuildIndex && !handler.indexIsCurrent(index))
            index = await this.rebuildIndex(row, handler.rebuildIndex);
          const bytes = index && handler.loadsFromIndex ? new Uint8Array(0) : await readSymbolBytes(this.db, id);
          if (!bytes) return null;
          const parser = this.options.parser;
          const loaded =
            parser && handler.parse && handler.fromParsed
              ? handler.fromParsed(await parser.parse(handler.kind, row, bytes, index))
              : handler.load(row, bytes, index);
          this.loads++;
          this.parsed.set(id, loaded);
          return loaded;
        } catch (err) {
          this.broken.set(id, true, this.now());
          this.options.logger.warn(
            { err, file: id, kind: row.kind },
            'symbol file could not be loaded; frames that need it stay unsymbolicated',
          );
          return null;
        }
      })().finally(() => this.loading.delete(id));
      this.loading.set(id, pending);
    }
    return pending;
  }

  /**
   * A derived index of an older format, built again from the stored file and saved for
   * the next load (docs/architecture.md "Symbolication"). Saving is best effort: two
   * processes rebuilding one file at once may clash, and the next load rebuilds again.
   */
  private async rebuildIndex(
    row: SymbolFileRow,
    rebuild: NonNullable<SymbolKindHandler['rebuildIndex']>,
  ): Promise<Uint8Array> {
    const id = Number(row.id);
    const index = await rebuild(row, storedFileSource(this.db, id, Number(row.size)));
    try {
      await saveDerivedIndex(this.db, id, [index]);
    } catch (err) {
      this.options.logger.warn(
        { err, file: id },
        'a rebuilt symbol index could not be saved; it is rebuilt again on the next load',
      );
    }
    this.options.logger.info({ file: id, kind: row.kind }, 'symbol index rebuilt for the current format');
    return index;
  }

  /**
   * Loads every file these events may need and returns a synchronous symbolicator for
   * them (ingest runs it inside normalisation, before grouping).
   */
  async prepare(projectId: number, inputs: SymbolicationInput[]): Promise<EventSymbolicator> {
    const kinds = await this.kindsOf(projectId);
    const handlers = this.options.kinds.filter((h) => kinds.has(h.kind));
    const demangle = (await this.options.demangle) ?? undefined;
    const resolved = new Map<string, LoadedSymbols[]>();
    for (const input of inputs) {
      const view = withThreadStacks(input);
      for (const h of handlers) {
        for (const lookup of h.lookups(view)) {
          const key = lookupKey(lookup);
          if (resolved.has(key)) continue;
          resolved.set(key, []);
          const rows = await this.resolveRows(projectId, lookup);
          const loaded: LoadedSymbols[] = [];
          for (const row of rows) {
            const l = await this.loadFile(row);
            if (l) loaded.push(l);
          }
          resolved.set(key, loaded);
        }
      }
    }
    return (input) => runHandlers(input, handlers, resolved, demangle);
  }

  /** Symbolicates one event (re-symbolication); null when nothing changed. */
  async symbolicate(projectId: number, input: SymbolicationInput): Promise<SymbolicationOutput | null> {
    const run = await this.prepare(projectId, [input]);
    return run(input);
  }
}

/** Threads whose stacks are symbolicated with the exceptions (crashed first): an ANR's hundred threads would cost more than they tell. */
export const MAX_SYMBOLICATED_THREADS = 32;

/**
 * The event as handlers see it: the exception chain, then one stack per thread (a
 * stack without type or value), so every handler maps thread frames as it maps the
 * exceptions' (docs/api.md "Event detail").
 */
function withThreadStacks(input: SymbolicationInput): SymbolicationInput {
  const threads = (input.threads ?? []).slice(0, MAX_SYMBOLICATED_THREADS);
  if (threads.length === 0) return input;
  return {
    ...input,
    exceptions: [
      ...input.exceptions,
      ...threads.map((t): NormalizedException => ({ type: '', value: '', frames: t.frames })),
    ],
  };
}

/** Runs the handlers of the project's kinds over an event, in the list's order, each on the frames the previous one left. */
export function runHandlers(
  input: SymbolicationInput,
  handlers: SymbolKinds,
  resolved: Map<string, LoadedSymbols[]>,
  demangle?: Demangler,
): SymbolicationOutput | null {
  const view = withThreadStacks(input);
  if (view.exceptions.length === 0) return null;
  const state: SymbolicationState = {
    frames: view.exceptions.map((e) => e.frames),
    types: view.exceptions.map(() => undefined),
    changed: false,
    demangle,
  };
  for (const h of handlers) {
    try {
      h.symbolicate(view, state, (lookup) => resolved.get(lookupKey(lookup)) ?? []);
    } catch {
      // A handler that trips over an odd frame leaves the event as the others made it.
    }
  }
  if (!state.changed) return null;
  const n = input.exceptions.length;
  const frames = state.frames.map((f, i) => (f === view.exceptions[i].frames ? null : f));
  const out: SymbolicationOutput = { frames: frames.slice(0, n), types: state.types.slice(0, n) };
  if (frames.length > n && frames.slice(n).some((f) => f !== null)) out.threads = frames.slice(n);
  return out;
}
