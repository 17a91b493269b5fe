// Group commit: concurrent submits share transactions, a batch cap, statements
// chunked under the bound-parameter limits, shutdown flushing, and a database
// failure in the middle of a batch (every request rejected, nothing written, the
// writer carries on).
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { ManualClock } from '../../../src/clock.js';
import { IngestUnavailableError } from '../../../src/errors.js';
import { BatchThread } from '../../../src/editions/node/batch-thread.js';
import { openStore } from '../../../src/editions/node/open-store.js';
import type { Store } from '../../../src/store/database.js';
import type { Database } from '../../../src/store/schema.js';
import { createIngestWriter, THREAD_HANDOVER_ITEMS, type WriterOptions } from '../../../src/editions/node/writer.js';
import { storedPayload } from '../../../src/editions/node/payloads.js';
import { ensureBuilt } from '../../helpers/cli.js';
import { dialects, type DialectName } from '../../helpers/server.js';
import {
  createProject,
  fp,
  hex32,
  makeAggregate,
  makeEvent,
  makeSession,
  makeWork,
  newWriter as newTestWriter,
  openTestStore,
  type TestStore,
} from '../../helpers/factory.js';

const TABLES: (keyof Database)[] = [
  'projects',
  'issues',
  'issue_releases',
  'issue_users',
  'issue_hourly',
  'issue_changes',
  'events',
  'event_tags',
  'seen_events',
  'project_hourly',
  'releases',
  'daily_usage',
  'sessions',
  'session_hourly',
  'session_users',
];

/** Every row of every table, in a comparable form. */
async function snapshot(store: Store): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const table of TABLES) {
    const rows = await store.db.selectFrom(table).selectAll().execute();
    out[table] = rows
      .map((r) =>
        JSON.stringify(r, (_k, v) =>
          v && typeof v === 'object' && v.type === 'Buffer' ? Buffer.from(v.data).toString('hex') : v,
        ),
      )
      .sort();
  }
  return out;
}

async function failOnEventId(store: Store, eventId: string): Promise<void> {
  // Replaces the trigger a previous test of the same database left behind.
  await sql
    .raw(
      store.dialect === 'sqlite' ? 'drop trigger if exists fail_event' : 'drop trigger if exists fail_event on events',
    )
    .execute(store.db);
  if (store.dialect === 'sqlite') {
    await sql
      .raw(
        `create trigger fail_event before insert on events when new.event_id = '${eventId}' begin select raise(abort, 'injected failure'); end`,
      )
      .execute(store.db);
  } else {
    await sql
      .raw(
        `create or replace function fail_event() returns trigger language plpgsql as $$ begin if new.event_id = '${eventId}' then raise exception 'injected failure'; end if; return new; end $$`,
      )
      .execute(store.db);
    await sql
      .raw('create trigger fail_event before insert on events for each row execute function fail_event()')
      .execute(store.db);
  }
}

/**
 * On SQLite the server commits batches on a worker thread (src/editions/node/batch-thread.ts);
 * its program exists only compiled, so these runs use dist/'s, built from these sources.
 */
const DIST_BATCH_THREAD = new URL('../../../dist/editions/node/batch-thread-worker.js', import.meta.url);
const modes: [DialectName, 'main thread' | 'batch thread'][] = [
  ['sqlite', 'main thread'],
  ['sqlite', 'batch thread'],
  ...dialects.filter((d) => d !== 'sqlite').map((d): [DialectName, 'main thread'] => [d, 'main thread']),
];

function writerMaker(mode: (typeof modes)[number][1]) {
  return (store: Store, options: WriterOptions = {}) =>
    newTestWriter(
      store,
      mode === 'batch thread' ? { batchThread: true, batchThreadFile: DIST_BATCH_THREAD, ...options } : options,
    );
}

describe.each(modes)('writer group commit (%s, %s)', (dialect, mode) => {
  let t: TestStore;
  const newWriter = writerMaker(mode);
  beforeAll(async () => {
    if (mode === 'batch thread') ensureBuilt();
    t = await openTestStore(dialect);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('writes concurrent submits together in fewer transactions, answering each after the commit', async () => {
    const project = await createProject(t.store);
    const writer = newWriter(t.store);
    const works = Array.from({ length: 30 }, (_, i) =>
      makeWork(project, { events: [makeEvent({ fingerprint: fp(`c${i % 3}`) })], sessions: [makeSession()] }),
    );
    const outcomes = await Promise.all(works.map((w) => writer.submit(w)));
    expect(outcomes.every((o) => o.kind === 'ok')).toBe(true);
    const stats = writer.stats();
    expect(stats.batchesCommitted).toBeGreaterThanOrEqual(1);
    expect(stats.batchesCommitted).toBeLessThan(30);
    expect(stats).toMatchObject({
      worksCommitted: 30,
      eventsAccepted: 30,
      eventsStored: 30,
      sessionUpdates: 30,
      batchesFailed: 0,
      queued: 0,
    });
    expect(stats.averageBatchWorks).toBe(30 / stats.batchesCommitted);
    expect(stats.batchesOnThread).toBe(mode === 'batch thread' ? stats.batchesCommitted : 0);
    // Resolved means committed: the rows are visible right away.
    const n = await t.store.db
      .selectFrom('events')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('project_id', '=', project.id)
      .executeTakeFirstOrThrow();
    expect(Number(n.n)).toBe(30);
    await writer.close();
  });

  it('answers a work with nothing to write at once, without a transaction', async () => {
    const project = await createProject(t.store);
    const writer = newWriter(t.store);
    expect(await writer.submit(makeWork(project))).toEqual({ kind: 'ok' });
    expect(writer.stats().batchesCommitted).toBe(0);
    await writer.close();
  });

  it('caps a transaction at maxBatchItems, but never splits a work', async () => {
    const project = await createProject(t.store);
    const writer = newWriter(t.store, { maxBatchItems: 5 });
    const works = [
      ...Array.from({ length: 10 }, () => makeWork(project, { events: [makeEvent()] })),
      makeWork(project, { events: Array.from({ length: 12 }, () => makeEvent()) }),
    ];
    await Promise.all(works.map((w) => writer.submit(w)));
    const stats = writer.stats();
    expect(stats.batchesCommitted).toBe(3);
    expect(stats.largestBatchItems).toBe(12);
    await writer.close();
  });

  it('chunks large batches under the bound-parameter limits', async () => {
    const project = await createProject(t.store);
    const writer = newWriter(t.store, { maxBatchItems: 10_000 });
    const tags = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, `v${i}`]));
    const works = Array.from({ length: 12 }, (_, w) =>
      makeWork(project, {
        events: Array.from({ length: 100 }, (_, i) =>
          makeEvent({ fingerprint: fp(`f${(w * 100 + i) % 700}`), tags, userKey: `u${i}` }),
        ),
      }),
    );
    await Promise.all(works.map((w) => writer.submit(w)));
    // The batch thread gets each work as it comes (100 items are past the hand-over size)
    // and may start on the first before the others arrive; it merges the rest.
    if (mode === 'batch thread') expect(writer.stats().batchesCommitted).toBeLessThanOrEqual(2);
    else expect(writer.stats().batchesCommitted).toBe(1);
    await writer.close();
    const count = async (table: 'events' | 'event_tags' | 'seen_events' | 'issues') => {
      const r = await t.store.db
        .selectFrom(table)
        .select((eb) => eb.fn.countAll().as('n'))
        .where('project_id', '=', project.id)
        .executeTakeFirstOrThrow();
      return Number(r.n);
    };
    expect(await count('events')).toBe(1200);
    expect(await count('event_tags')).toBe(24_000);
    expect(await count('seen_events')).toBe(1200);
    expect(await count('issues')).toBe(700);
  });

  it('drops the work of a project deleted meanwhile and writes the rest of the batch', async () => {
    const gone = await createProject(t.store);
    const kept = await createProject(t.store);
    await t.store.db.deleteFrom('projects').where('id', '=', gone.id).execute();
    const writer = newWriter(t.store);
    const outcomes = await Promise.all([
      writer.submit(makeWork(gone, { events: [makeEvent()], sessions: [makeSession()] })),
      writer.submit(makeWork(kept, { events: [makeEvent()] })),
    ]);
    await writer.close();
    expect(outcomes).toEqual([{ kind: 'ok' }, { kind: 'ok' }]);
    const rows = await t.store.db
      .selectFrom('events')
      .select('project_id')
      .where('project_id', 'in', [gone.id, kept.id])
      .execute();
    expect(rows.map((r) => Number(r.project_id))).toEqual([kept.id]);
  });

  it('flushes queued work on close and refuses work after it', async () => {
    const project = await createProject(t.store);
    const writer = newWriter(t.store);
    const pending = Array.from({ length: 5 }, () => writer.submit(makeWork(project, { events: [makeEvent()] })));
    await writer.close();
    expect(await Promise.all(pending)).toEqual(Array.from({ length: 5 }, () => ({ kind: 'ok' })));
    await expect(writer.submit(makeWork(project, { events: [makeEvent()] }))).rejects.toBeInstanceOf(
      IngestUnavailableError,
    );
  });
});

describe.each(modes)('writer database failure (%s, %s)', (dialect, mode) => {
  let t: TestStore;
  const newWriter = writerMaker(mode);
  beforeAll(async () => {
    if (mode === 'batch thread') ensureBuilt();
    t = await openTestStore(dialect);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('isolates a work the database refuses: the rest of its batch commits, it alone fails and leaves nothing', async () => {
    const project = await createProject(t.store);
    const writer = newWriter(t.store);
    const f = fp('existing');
    const session = makeSession({ status: 'ok' });
    await writer.submit(
      makeWork(project, { events: [makeEvent({ fingerprint: f, userKey: 'u1' })], sessions: [session] }),
    );

    const bad = hex32();
    await failOnEventId(t.store, bad);
    const batch = [
      makeWork(project, {
        events: [makeEvent({ fingerprint: f, userKey: 'u2', release: 'app@9' }), makeEvent({ fingerprint: fp('new') })],
      }),
      makeWork(project, {
        sessions: [{ ...session, timestamp: session.timestamp + 1000, status: 'crashed' }, makeSession()],
        aggregates: [makeAggregate({ exited: 3 })],
      }),
      makeWork(project, { events: [makeEvent({ eventId: bad, fingerprint: fp('other') })] }),
      makeWork(project, { events: [makeEvent({ fingerprint: f, isCrash: true })] }),
    ];
    const settled = await Promise.allSettled(batch.map((w) => writer.submit(w)));
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect((settled[2] as PromiseRejectedResult).reason).toBeInstanceOf(IngestUnavailableError);
    // The shared transaction failed, then each work went alone: three commits, one failure.
    expect(writer.stats()).toMatchObject({ batchesFailed: 2, worksFailed: 1, batchesCommitted: 4 });

    const issue = await t.store.db
      .selectFrom('issues')
      .select(['event_count', 'users'])
      .where('project_id', '=', project.id)
      .where('fingerprint', '=', f)
      .executeTakeFirstOrThrow();
    expect([Number(issue.event_count), Number(issue.users)]).toEqual([3, 2]);
    const s = await t.store.db
      .selectFrom('sessions')
      .select('status')
      .where('sid', '=', session.sid)
      .executeTakeFirstOrThrow();
    expect(s.status).toBe('crashed');
    // Nothing of the refused work: no issue, no event, and its event_id is not marked seen.
    expect(await t.store.db.selectFrom('issues').select('id').where('fingerprint', '=', fp('other')).execute()).toEqual(
      [],
    );
    expect(await t.store.db.selectFrom('seen_events').select('event_id').where('event_id', '=', bad).execute()).toEqual(
      [],
    );
    await writer.close();
  });

  it('rejects every request when every work of a batch fails, leaving no table changed, and keeps working', async () => {
    const project = await createProject(t.store);
    const writer = newWriter(t.store);
    const bad = hex32();
    await failOnEventId(t.store, bad);
    const before = await snapshot(t.store);
    const batch = [
      makeWork(project, { events: [makeEvent({ eventId: bad, fingerprint: fp('x') })] }),
      makeWork(project, {
        events: [makeEvent({ fingerprint: fp('y') }), makeEvent({ eventId: bad, fingerprint: fp('x') })],
        sessions: [makeSession()],
      }),
    ];
    const settled = await Promise.allSettled(batch.map((w) => writer.submit(w)));
    for (const s of settled) {
      expect(s.status).toBe('rejected');
      expect((s as PromiseRejectedResult).reason).toBeInstanceOf(IngestUnavailableError);
    }
    expect(writer.stats()).toMatchObject({ worksFailed: 2, batchesCommitted: 0 });
    expect(await snapshot(t.store)).toEqual(before);
    // The next work without the refused event goes through.
    expect(await writer.submit(makeWork(project, { events: [makeEvent({ fingerprint: fp('y') })] }))).toEqual({
      kind: 'ok',
    });
    await writer.close();
  });
});

describe.runIf(dialects.includes('postgres'))('writer batch deadline on postgres', () => {
  it('answers 503 when the database hangs, and counts the late commit once when the SDK resends', async () => {
    const t = await openTestStore('postgres');
    const locker = await openStore(t.database.url);
    try {
      const project = await createProject(t.store);
      const writer = createIngestWriter(
        { store: t.store, clock: new ManualClock(Date.UTC(2026, 0, 10, 12)), logger: pino({ level: 'silent' }) },
        { batchDeadlineMs: 300 },
      );
      // Another connection holds the project row: the batch waits for it, as on a hung server.
      let release!: () => void;
      const released = new Promise<void>((r) => (release = r));
      let locked!: () => void;
      const isLocked = new Promise<void>((r) => (locked = r));
      const holder = locker.db.transaction().execute(async (trx) => {
        await sql`select id from projects where id = ${project.id} for update`.execute(trx);
        locked();
        await released;
      });
      await isLocked;
      const work = makeWork(project, { events: [makeEvent({ fingerprint: fp('late') })] });
      const other = makeWork(project, { events: [makeEvent({ fingerprint: fp('late too') })] });
      const started = Date.now();
      const settled = await Promise.allSettled([writer.submit(work), writer.submit(other)]);
      for (const s of settled) expect((s as PromiseRejectedResult).reason).toBeInstanceOf(IngestUnavailableError);
      expect(Date.now() - started).toBeLessThan(5_000);
      // One failed batch: a deadline is not retried work by work (each would wait again).
      expect(writer.stats()).toMatchObject({ batchesFailed: 1, worksFailed: 2 });
      release();
      await holder;
      // The SDK resends the same event; the batch that committed late counted it already.
      await expect(writer.submit(work)).resolves.toEqual({ kind: 'ok' });
      await writer.close();
      const issue = await t.store.db
        .selectFrom('issues')
        .select('event_count')
        .where('fingerprint', '=', fp('late'))
        .executeTakeFirstOrThrow();
      expect(Number(issue.event_count)).toBe(1);
    } finally {
      await locker.close();
      await t.close();
    }
  });
});

describe.each(modes)('two writers on one database, as two server instances (%s, %s)', (dialect, mode) => {
  const newWriter = writerMaker(mode);
  let t: TestStore;
  let second: Store;
  beforeAll(async () => {
    if (mode === 'batch thread') ensureBuilt();
    t = await openTestStore(dialect);
    second = await openStore(t.database.url);
  });
  afterAll(async () => {
    await second?.close();
    await t?.close();
  });

  it('counts resends and shared issues exactly when both write at once', async () => {
    const project = await createProject(t.store, { daily_quota: 70 });
    const a = newWriter(t.store);
    const b = newWriter(second);
    // 60 distinct events over 4 fingerprints, each sent to both instances (an SDK resend
    // landing on the other instance), in 3-event envelopes.
    const events = Array.from({ length: 60 }, (_, i) =>
      makeEvent({ fingerprint: fp(`shared${i % 4}`), userKey: `u${i % 7}` }),
    );
    const works = Array.from({ length: 20 }, (_, i) => makeWork(project, { events: events.slice(i * 3, i * 3 + 3) }));
    const outcomes = await Promise.all(
      works.flatMap((w, i) => (i % 2 ? [b.submit(w), a.submit(w)] : [a.submit(w), b.submit(w)])),
    );
    expect(outcomes.every((o) => o.kind === 'ok')).toBe(true);
    await Promise.all([a.close(), b.close()]);
    expect(a.stats().batchesFailed + b.stats().batchesFailed).toBe(0);

    const issues = await t.store.db
      .selectFrom('issues')
      .select(['fingerprint', 'event_count', 'stored_count', 'users'])
      .where('project_id', '=', project.id)
      .orderBy('fingerprint')
      .execute();
    expect(issues.map((r) => [Number(r.event_count), Number(r.stored_count), Number(r.users)])).toEqual([
      [15, 15, 7],
      [15, 15, 7],
      [15, 15, 7],
      [15, 15, 7],
    ]);
    const stored = await t.store.db
      .selectFrom('events')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('project_id', '=', project.id)
      .executeTakeFirstOrThrow();
    expect(Number(stored.n)).toBe(60);
    const usage = await t.store.db
      .selectFrom('daily_usage')
      .select('events')
      .where('project_id', '=', project.id)
      .executeTakeFirstOrThrow();
    expect(Number(usage.events)).toBe(60);
    const hourly = await t.store.db
      .selectFrom('issue_hourly')
      .innerJoin('issues', 'issues.id', 'issue_hourly.issue_id')
      .select((eb) => eb.fn.sum<number>('issue_hourly.events').as('n'))
      .where('issues.project_id', '=', project.id)
      .executeTakeFirstOrThrow();
    expect(Number(hourly.n)).toBe(60);
    const changes = await t.store.db
      .selectFrom('issue_changes')
      .select('kind')
      .where('project_id', '=', project.id)
      .execute();
    expect(changes).toHaveLength(4);
  });
});

describe('writer when the SQLite batch thread fails', () => {
  let t: TestStore;
  let dir: string;
  beforeAll(async () => {
    t = await openTestStore('sqlite');
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-thread-'));
  });
  afterAll(async () => {
    await t?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  function countEvents(projectId: number) {
    return t.store.db
      .selectFrom('events')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('project_id', '=', projectId)
      .executeTakeFirstOrThrow()
      .then((r) => Number(r.n));
  }

  it('commits on the main thread when the thread cannot start', async () => {
    const project = await createProject(t.store);
    const writer = newTestWriter(t.store, {
      batchThread: true,
      batchThreadFile: pathToFileURL(path.join(dir, 'missing.js')),
    });
    const outcomes = await Promise.all(
      Array.from({ length: 5 }, () => writer.submit(makeWork(project, { events: [makeEvent()] }))),
    );
    expect(outcomes.every((o) => o.kind === 'ok')).toBe(true);
    expect(writer.stats()).toMatchObject({ worksCommitted: 5, batchesOnThread: 0, worksFailed: 0 });
    expect(await countEvents(project.id)).toBe(5);
    await writer.close();
  });

  it('answers 503 for the batch a dying thread held, without retrying it, then commits on the main thread', async () => {
    // A thread program that starts, then dies on its first batch.
    const program = path.join(dir, 'dies.mjs');
    fs.writeFileSync(
      program,
      "import { parentPort } from 'node:worker_threads';\nparentPort.postMessage({ ready: true });\nparentPort.on('message', () => process.exit(3));\n",
    );
    const project = await createProject(t.store);
    const writer = newTestWriter(t.store, { batchThread: true, batchThreadFile: pathToFileURL(program) });
    const settled = await Promise.allSettled(
      [1, 2].map(() => writer.submit(makeWork(project, { events: [makeEvent()] }))),
    );
    for (const s of settled) {
      expect(s.status).toBe('rejected');
      expect((s as PromiseRejectedResult).reason).toBeInstanceOf(IngestUnavailableError);
    }
    // Not retried work by work: whether the batch committed is unknown.
    expect(writer.stats()).toMatchObject({ batchesFailed: 1, worksFailed: 2, batchesCommitted: 0 });
    expect(await writer.submit(makeWork(project, { events: [makeEvent()] }))).toEqual({ kind: 'ok' });
    expect(writer.stats()).toMatchObject({ batchesCommitted: 1, batchesOnThread: 0 });
    expect(await countEvents(project.id)).toBe(1);
    await writer.close();
  });
});

describe('the SQLite batch thread', () => {
  it('runs with a bounded old generation, so V8 collects its dead batches early, and a small page cache', async () => {
    // A thread program that answers each batch with the limits it runs under.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-thread-'));
    const program = path.join(dir, 'limits.mjs');
    fs.writeFileSync(
      program,
      "import { parentPort, resourceLimits, workerData } from 'node:worker_threads';\nparentPort.postMessage({ ready: true });\nparentPort.on('message', (m) => parentPort.postMessage({ id: m.id, result: { resourceLimits, workerData } }));\n",
    );
    const thread = new BatchThread('sqlite::memory:', pathToFileURL(program));
    try {
      const { resourceLimits: limits, workerData } = (await thread.commit([], 0)) as unknown as {
        resourceLimits: { maxOldGenerationSizeMb: number; maxYoungGenerationSizeMb: number };
        workerData: { pageCacheMb: number };
      };
      // At most 256 MB: V8 then grows the old generation by 1.3x between full collections instead of up to 4x.
      expect(limits.maxOldGenerationSizeMb).toBeGreaterThan(0);
      expect(limits.maxOldGenerationSizeMb).toBeLessThanOrEqual(256);
      expect(limits.maxYoungGenerationSizeMb).toBeLessThanOrEqual(16);
      // And a page cache smaller than the other connections' 16 MB.
      expect(workerData.pageCacheMb).toBeLessThan(16);
    } finally {
      await thread.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('keeps a process with nothing else to do alive while a commit waits for the thread to start', () => {
    ensureBuilt();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-thread-'));
    try {
      // A thread that takes a while to start, and a process that only commits one batch.
      const program = path.join(dir, 'slow-start.mjs');
      fs.writeFileSync(
        program,
        "import { parentPort } from 'node:worker_threads';\nsetTimeout(() => {\n  parentPort.postMessage({ ready: true });\n  parentPort.on('message', (m) => (m === 'close' ? process.exit(0) : parentPort.postMessage({ id: m.id, result: { committed: m.id } })));\n}, 300);\n",
      );
      const main = path.join(dir, 'main.mjs');
      fs.writeFileSync(
        main,
        `import { BatchThread } from ${JSON.stringify(new URL('../../../dist/editions/node/batch-thread.js', import.meta.url).href)};\n` +
          `const thread = new BatchThread('sqlite::memory:', new URL(${JSON.stringify(pathToFileURL(program).href)}));\n` +
          'console.log(JSON.stringify(await thread.commit([], 0)));\nawait thread.close();\n',
      );
      const out = execFileSync(process.execPath, [main], { encoding: 'utf8', timeout: 20_000 });
      expect(JSON.parse(out)).toEqual({ committed: 1 });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** The SQLite store of a describe block whose writers run the compiled batch thread. */
function batchThreadStore(): { readonly store: Store } {
  let opened: TestStore | undefined;
  beforeAll(async () => {
    ensureBuilt();
    opened = await openTestStore('sqlite');
  });
  afterAll(async () => {
    await opened?.close();
  });
  return {
    get store() {
      return opened!.store;
    },
  };
}

describe('writer with the SQLite batch thread: payloads', () => {
  const t = batchThreadStore();
  const newWriter = writerMaker('batch thread');

  async function storedPayloads(projectId: number): Promise<Map<string, string>> {
    const rows = await t.store.db.selectFrom('events').selectAll().where('project_id', '=', projectId).execute();
    const out = new Map<string, string>();
    for (const r of rows) out.set(r.event_id, (await storedPayload(t.store.db, r)).toString('utf8'));
    return out;
  }

  it('stores every payload of a batch in chunks of the project, each event at its own range', async () => {
    const project = await createProject(t.store);
    const writer = newWriter(t.store);
    const events = Array.from({ length: 10 }, (_, i) =>
      makeEvent({ raw: Buffer.from(JSON.stringify({ n: i, pad: 'x'.repeat(200 * i) })) }),
    );
    await Promise.all(events.map((e) => writer.submit(makeWork(project, { events: [e] }))));
    await writer.close();
    const stored = await storedPayloads(project.id);
    for (const e of events) expect(stored.get(e.eventId)).toBe(Buffer.from(e.raw).toString('utf8'));
    const chunks = await t.store.db
      .selectFrom('payload_chunks')
      .select(['id'])
      .where('project_id', '=', project.id)
      .execute();
    // Ten events submitted in one turn: fewer chunks than events.
    expect(chunks.length).toBeGreaterThan(0);
    expect(chunks.length).toBeLessThan(10);
  });

  // A batch that failed is posted to the thread again, one work at a time: the works'
  // own bytes must still be there, whether they are views into a larger buffer (copied
  // for the thread) or whole buffers (posted as they are).
  it('keeps every payload of a failed batch for its second try', async () => {
    const project = await createProject(t.store);
    const writer = newWriter(t.store);
    const json = (i: number) => JSON.stringify({ n: i, noise: crypto.randomBytes(3000 + 1000 * i).toString('base64') });
    const whole = (text: string) => new Uint8Array(Buffer.from(text));
    const slab = Buffer.from(`${json(0)}\n${json(1)}`);
    const views = [slab.subarray(0, slab.indexOf(10)), slab.subarray(slab.indexOf(10) + 1)];
    const payloads = [...views, whole(json(2)), whole(json(3)), whole(json(4))];
    const bad = hex32();
    await failOnEventId(t.store, bad);
    const events = payloads.map((raw) => makeEvent({ raw }));
    const works = [...events, makeEvent({ eventId: bad })].map((e) => makeWork(project, { events: [e] }));
    const sent = payloads.map((p) => Buffer.from(p).toString('utf8'));

    const settled = await Promise.allSettled(works.map((w) => writer.submit(w)));
    expect(settled.map((r) => r.status)).toEqual([
      'fulfilled',
      'fulfilled',
      'fulfilled',
      'fulfilled',
      'fulfilled',
      'rejected',
    ]);
    expect(writer.stats()).toMatchObject({ batchesFailed: 2, eventsStored: 5 });
    await writer.close();
    expect(payloads.map((p) => Buffer.from(p).toString('utf8'))).toEqual(sent);
    const stored = await storedPayloads(project.id);
    expect(events.map((e) => stored.get(e.eventId))).toEqual(sent);
  });
});

describe('writer with the SQLite batch thread: batches waiting for the thread share its next transaction', () => {
  const t = batchThreadStore();
  const newWriter = writerMaker('batch thread');
  const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

  /**
   * Holds SQLite's write lock from the test's own connection, so the thread's
   * transaction for `first` waits in `begin immediate` while the works of `next` are
   * submitted one per turn of the event loop (so each is handed over on its own) and
   * queue up at the thread. Then lets go and returns how all of them settled.
   */
  async function whileThreadBlocked(first: () => Promise<unknown>, next: (() => Promise<unknown>)[]) {
    await sql`begin immediate`.execute(t.store.db);
    const submitted: Promise<unknown>[] = [];
    try {
      submitted.push(first());
      await nextTurn();
      await nextTurn();
      for (const submit of next) {
        submitted.push(submit());
        await nextTurn();
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      await sql`commit`.execute(t.store.db);
    }
    return Promise.allSettled(submitted);
  }

  it('hands each waiting work over at once, and the thread commits them in one transaction', async () => {
    const project = await createProject(t.store);
    const writer = newWriter(t.store);
    // Starts the thread and opens its connection before the lock is taken.
    await writer.submit(makeWork(project, { events: [makeEvent()] }));
    const before = writer.stats();
    const submit = () => writer.submit(makeWork(project, { events: [makeEvent()] }));
    const settled = await whileThreadBlocked(submit, [submit, submit, submit]);
    expect(settled.every((s) => s.status === 'fulfilled')).toBe(true);
    const stats = writer.stats();
    // Four works, each handed over alone (largest batch: 1 item), in two transactions:
    // the blocked one, then the three that waited for it together (or in one, when all
    // four reached the thread before it began the first).
    expect(stats.worksCommitted - before.worksCommitted).toBe(4);
    expect(stats.largestBatchItems).toBe(1);
    expect(stats.batchesCommitted - before.batchesCommitted).toBeLessThanOrEqual(2);
    expect(stats.batchesOnThread).toBe(stats.batchesCommitted);
    expect(stats.eventsStored).toBe(5);
    await writer.close();
  });

  it('hands a burst over as soon as THREAD_HANDOVER_ITEMS items wait, without waiting for the turn to end', async () => {
    const project = await createProject(t.store);
    const writer = newWriter(t.store);
    await writer.submit(makeWork(project, { events: [makeEvent()] }));
    const submitted: Promise<unknown>[] = [];
    // All in one turn of the event loop, as the requests of a burst are read.
    for (let i = 0; i < THREAD_HANDOVER_ITEMS - 1; i++)
      submitted.push(writer.submit(makeWork(project, { events: [makeEvent()] })));
    expect(writer.stats().queued).toBe(THREAD_HANDOVER_ITEMS - 1);
    submitted.push(writer.submit(makeWork(project, { events: [makeEvent()] })));
    expect(writer.stats().queued).toBe(0);
    submitted.push(writer.submit(makeWork(project, { events: [makeEvent()] })));
    expect(writer.stats().queued).toBe(1);
    await Promise.all(submitted);
    expect(writer.stats()).toMatchObject({ worksCommitted: THREAD_HANDOVER_ITEMS + 2, queued: 0, batchesFailed: 0 });
    await writer.close();
  });

  it('commits the other works of a merged transaction that one work made fail', async () => {
    const project = await createProject(t.store);
    const writer = newWriter(t.store);
    await writer.submit(makeWork(project, { events: [makeEvent()] }));
    const bad = hex32();
    await failOnEventId(t.store, bad);
    const good = [makeEvent({ fingerprint: fp('merged-a') }), makeEvent({ fingerprint: fp('merged-c') })];
    const submit = (e: ReturnType<typeof makeEvent>) => () => writer.submit(makeWork(project, { events: [e] }));
    const settled = await whileThreadBlocked(submit(makeEvent()), [
      submit(good[0]),
      submit(makeEvent({ eventId: bad, fingerprint: fp('merged-b') })),
      submit(good[1]),
    ]);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect((settled[2] as PromiseRejectedResult).reason).toBeInstanceOf(IngestUnavailableError);
    const stored = await t.store.db
      .selectFrom('events')
      .select('event_id')
      .where('project_id', '=', project.id)
      .execute();
    expect(stored.map((r) => r.event_id)).toEqual(expect.arrayContaining(good.map((e) => e.eventId)));
    expect(stored.map((r) => r.event_id)).not.toContain(bad);
    expect(stored).toHaveLength(4);
    await sql.raw('drop trigger if exists fail_event').execute(t.store.db);
    await writer.close();
  });
});

describe('writer with the SQLite batch thread: the WAL checkpointer hears of its transactions', () => {
  let t: TestStore;
  beforeAll(async () => {
    ensureBuilt();
    t = await openTestStore('sqlite', { backgroundCheckpoints: true });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('counts every committed transaction and the works it carried in the store’s tally', async () => {
    const tally = t.store.commitTally!;
    const project = await createProject(t.store);
    const writer = writerMaker('batch thread')(t.store);
    const before = tally.read();
    const outcomes = await Promise.all(
      Array.from({ length: 30 }, () => writer.submit(makeWork(project, { events: [makeEvent()] }))),
    );
    expect(outcomes.every((o) => o.kind === 'ok')).toBe(true);
    expect(writer.stats().batchesOnThread).toBeGreaterThan(0);
    const after = tally.read();
    expect(after.works - before.works).toBe(30);
    expect(after.transactions - before.transactions).toBeGreaterThanOrEqual(1);
    expect(after.transactions - before.transactions).toBeLessThanOrEqual(30);
    await writer.close();
  });
});
