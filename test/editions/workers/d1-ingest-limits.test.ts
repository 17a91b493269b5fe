// Size guards for the D1 ingest commit: every statement it builds stays within D1's
// limits (100 bound parameters, 100 KB of SQL, 2 MB per value) whatever the envelope
// holds: 100 events with long messages, large payloads split over chunks, many tags
// and sessions. What cannot fit (one event whose payload compresses past 2 MB) is
// refused with 413 before anything is sent. The statements themselves run in
// test/editions/workers/runtime/d1-ingest.test.ts.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { compressBlob } from '../../../src/editions/workers/runtime.js';
import { PayloadTooLargeError } from '../../../src/errors.js';
import { prepareWork } from '../../../src/ingest/prepare.js';
import type { IngestWork, NormalizedEvent } from '../../../src/ingest/types.js';
import { buildD1IngestCommit } from '../../../src/ingest/d1-commit.js';
import { D1_MAX_BOUND_PARAMETERS, D1_MAX_STATEMENT_BYTES, D1_MAX_VALUE_BYTES, fitToD1 } from '../../../src/store/d1.js';
import { PROJECT_DEFAULTS } from '../../../src/store/projects.js';

const project = { ...PROJECT_DEFAULTS, id: 1, slug: 'p', name: 'p', dsn_key: 'k', created_at: 0 };

function event(i: number, raw: Uint8Array, extra: Partial<NormalizedEvent> = {}): NormalizedEvent {
  return {
    eventId: i.toString(16).padStart(32, '0'),
    timestamp: 1_700_000_000_000 + i,
    level: 'error',
    platform: 'node',
    release: `app@${i % 3}`,
    dist: '',
    environment: 'production',
    userId: `user-${i}`,
    userEmail: null,
    userUsername: null,
    userIp: null,
    userKey: `user-${i}`,
    deviceId: null,
    deviceModel: null,
    osName: null,
    osVersion: null,
    screen: '',
    title: `TypeError: boom ${i}`,
    message: 'm',
    errorType: 'TypeError',
    location: 'app.js',
    isCrash: false,
    sdkName: 'sentry.javascript.node',
    tags: Object.fromEntries(Array.from({ length: 50 }, (_, t) => [`tag${t}`, 'v'.repeat(200)])),
    fingerprint: (i % 7).toString(16).padStart(32, 'f'),
    raw,
    ...extra,
  };
}

function work(events: NormalizedEvent[], sessions = 0): IngestWork {
  return {
    project,
    receivedAt: 1_700_000_100_000,
    events,
    sessions: Array.from({ length: sessions }, (_, i) => ({
      sid: i.toString(16).padStart(32, '0'),
      did: null,
      init: true,
      started: 1_700_000_000_000,
      timestamp: 1_700_000_000_000 + i,
      status: 'ok' as const,
      errors: 0,
      release: 'app@1',
      environment: 'production',
    })),
    aggregates: [],
  };
}

const valueBytes = (v: unknown) =>
  typeof v === 'string' ? Buffer.byteLength(v) : v instanceof Uint8Array ? v.byteLength : 8;

function expectWithinD1(w: IngestWork) {
  const commit = buildD1IngestCommit(prepareWork(w), { random: Math.random, compress: compressBlob });
  for (const q of commit.statements) {
    const fitted = fitToD1(q); // throws past a limit
    expect(fitted.parameters.length).toBeLessThanOrEqual(D1_MAX_BOUND_PARAMETERS);
    expect(fitted.parameters.length).toBeLessThanOrEqual(12);
    expect(Buffer.byteLength(fitted.sql)).toBeLessThanOrEqual(D1_MAX_STATEMENT_BYTES);
    for (const v of fitted.parameters) expect(valueBytes(v)).toBeLessThanOrEqual(D1_MAX_VALUE_BYTES);
  }
  return commit.statements;
}

describe('the D1 ingest commit within D1 limits', () => {
  it('binds a fixed handful of parameters for 100 events of 50 tags each, whatever their number', () => {
    const one = expectWithinD1(work([event(0, new Uint8Array(100))]));
    const hundred = expectWithinD1(work(Array.from({ length: 100 }, (_, i) => event(i, new Uint8Array(1000).fill(i)))));
    expect(hundred.length).toBe(one.length);
  });

  it('splits large payloads over chunks of at most 2 MB and rows over several inserts', () => {
    // 100 events of 190 KB incompressible payload each (19 MB, near the 20 MB envelope limit).
    const events = Array.from({ length: 100 }, (_, i) =>
      event(i, randomBytes(190 * 1024), { message: 'x'.repeat(100_000) }),
    );
    const statements = expectWithinD1(work(events));
    const chunks = statements.filter((q) => q.sql.includes('INSERT INTO payload_chunks'));
    expect(chunks.length).toBeGreaterThan(10);
    const inserts = statements.filter((q) => q.sql.includes('INSERT INTO events'));
    expect(inserts.length).toBeGreaterThan(1);
  });

  it('stores one event whose payload compresses to under 2 MB in a chunk of its own', () => {
    const statements = expectWithinD1(work([event(1, randomBytes(1_900_000))]));
    expect(statements.filter((q) => q.sql.includes('INSERT INTO payload_chunks'))).toHaveLength(1);
  });

  it('refuses with 413 an event whose payload compresses past D1 value limit', () => {
    expect(() =>
      buildD1IngestCommit(prepareWork(work([event(1, randomBytes(2_500_000))])), {
        random: Math.random,
        compress: compressBlob,
      }),
    ).toThrow(PayloadTooLargeError);
  });

  it('takes many sessions in one statement', () => {
    expectWithinD1(work([], 1000));
  });
});
