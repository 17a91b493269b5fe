// Hand-built ingest inputs for store-level tests: NormalizedEvent, session updates
// and aggregates, a project row, and a migrated store on a fresh test database.
// Other helpers may reuse it.
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { ManualClock } from '../../src/clock.js';
import { createIngestWriter, type IngestWriter, type WriterOptions } from '../../src/editions/node/writer.js';
import type { IngestWork, NormalizedEvent, SessionAggregate, SessionUpdate } from '../../src/ingest/types.js';
import { migrate, type Store } from '../../src/store/database.js';
import { openStore, type NodeStore } from '../../src/editions/node/open-store.js';
import type { NewProject, ProjectRow } from '../../src/store/schema.js';
import { createTestDatabase, type DialectName, type TestDatabase } from './server.js';

export function hex32(): string {
  return randomBytes(16).toString('hex');
}

/** A fingerprint derived from a readable name, so tests can write `fp('a')`. */
export function fp(name: string): string {
  return Buffer.from(name).toString('hex').padEnd(32, '0').slice(0, 32);
}

export function makeEvent(overrides: Partial<NormalizedEvent> = {}): NormalizedEvent {
  const eventId = overrides.eventId ?? hex32();
  return {
    eventId,
    timestamp: Date.UTC(2026, 0, 10, 12, 0, 0),
    level: 'error',
    platform: 'node',
    release: 'app@1.0.0',
    dist: '',
    environment: 'production',
    userId: null,
    userEmail: null,
    userUsername: null,
    userIp: null,
    userKey: null,
    deviceId: null,
    deviceModel: null,
    osName: null,
    osVersion: null,
    screen: 'GET /checkout',
    title: 'TypeError: x is undefined',
    message: '',
    errorType: 'TypeError',
    location: 'checkout.js:42',
    isCrash: false,
    sdkName: 'sentry.javascript.node',
    tags: { browser: 'Chrome' },
    fingerprint: fp('default'),
    raw: Buffer.from(JSON.stringify({ event_id: eventId, message: 'raw payload' })),
    ...overrides,
  };
}

export function makeSession(overrides: Partial<SessionUpdate> = {}): SessionUpdate {
  return {
    sid: hex32(),
    did: null,
    init: true,
    started: Date.UTC(2026, 0, 10, 12, 0, 0),
    timestamp: Date.UTC(2026, 0, 10, 12, 0, 1),
    status: 'ok',
    errors: 0,
    release: 'app@1.0.0',
    environment: 'production',
    ...overrides,
  };
}

export function makeAggregate(overrides: Partial<SessionAggregate> = {}): SessionAggregate {
  return {
    started: Date.UTC(2026, 0, 10, 12, 0, 0),
    release: 'app@1.0.0',
    environment: 'production',
    exited: 0,
    errored: 0,
    abnormal: 0,
    crashed: 0,
    unhandled: 0,
    ...overrides,
  };
}

export function makeWork(
  project: ProjectRow,
  parts: Partial<Pick<IngestWork, 'events' | 'sessions' | 'aggregates' | 'receivedAt'>> = {},
): IngestWork {
  return {
    project,
    receivedAt: parts.receivedAt ?? Date.UTC(2026, 0, 10, 12, 0, 5),
    events: parts.events ?? [],
    sessions: parts.sessions ?? [],
    aggregates: parts.aggregates ?? [],
  };
}

export async function createProject(store: Store, overrides: Partial<NewProject> = {}): Promise<ProjectRow> {
  const slug = overrides.slug ?? `p-${hex32().slice(0, 8)}`;
  const row = await store.db
    .insertInto('projects')
    .values({
      slug,
      name: slug,
      platform: 'other',
      dsn_key: hex32(),
      sample_keep_first: 100,
      sample_rate: 1,
      daily_quota: 0,
      created_at: Date.UTC(2026, 0, 1),
      ...overrides,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return { ...row, id: Number(row.id) };
}

export interface TestStore {
  store: NodeStore;
  database: TestDatabase;
  close(): Promise<void>;
}

/** A migrated store on a new empty database of the dialect. */
export async function openTestStore(
  dialect: DialectName,
  options: { backgroundCheckpoints?: boolean } = {},
): Promise<TestStore> {
  const database = await createTestDatabase(dialect);
  const store = await openStore(database.url, options);
  await migrate(store);
  return {
    store,
    database,
    async close() {
      await store.close();
      await database.drop();
    },
  };
}

/** A group-commit writer on the store with a silent logger and a manual clock. */
export function newWriter(store: Store, options: WriterOptions = {}): IngestWriter {
  return createIngestWriter(
    { store, clock: new ManualClock(Date.UTC(2026, 0, 10, 12)), logger: pino({ level: 'silent' }) },
    options,
  );
}

/** A random() that returns the given values in turn and throws when asked for more. */
export function sequence(values: number[]): () => number {
  let i = 0;
  return () => {
    if (i >= values.length) throw new Error(`random() called more than the ${values.length} expected times`);
    return values[i++];
  };
}
