// Ingest on both editions: the real SDKs' envelopes (test/fixtures/sdk-captures) sent
// over HTTP to the Node server (SQLite) and to the Worker (workerd, local D1), then
// every read answers the same on both, but for the times of receipt (each server
// stamps its own).
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../../src/clock.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import { startTestWorker, type TestWorker } from './harness.js';

const SETTINGS = { API_KEYS: 'k', PUBLIC_URL: 'https://errors.example.com', RATE_LIMIT: '0' };
const FIXTURES = path.join(import.meta.dirname, '../../fixtures/sdk-captures');

/** Envelopes as the SDKs sent them (body bytes after gunzip), and the gzip one as on the wire. */
const ENVELOPES: [string, Record<string, string>][] = [
  ['node-event.envelope', {}],
  ['node-message.envelope', {}],
  ['node-gzip-event.envelope.gz', { 'content-encoding': 'gzip' }],
  ['sentry-cli-event.envelope', {}],
  ['node-session-update.envelope', {}],
  ['node-session-crashed.envelope', {}],
  ['node-session-exited.envelope', {}],
  ['node-session-aggregates.envelope', {}],
  ['python-session.envelope', {}],
  ['python-session-aggregates.envelope', {}],
];

/** Fields that carry a server's time of receipt. */
const RECEIPT = new Set([
  'received',
  'received_at',
  'dateReceived',
  'created_at',
  'updated_at',
  'date_created',
  'dateCreated',
]);

function withoutReceipt(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutReceipt);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([k]) => !RECEIPT.has(k))
        .map(([k, v]) => [k, withoutReceipt(v)]),
    );
  }
  return value;
}

describe('ingest of the SDKs envelopes: reads on the Worker answer as on the Node server', () => {
  let node: TestServer;
  let worker: TestWorker;
  const sides = () => [node, worker] as const;
  let window: string;

  beforeAll(async () => {
    [node, worker] = await Promise.all([
      startTestServer('sqlite', { env: SETTINGS, clock: systemClock }),
      startTestWorker(SETTINGS),
    ]);
    for (const side of sides()) {
      const res = await fetch(`${side.url}/api/projects`, {
        method: 'POST',
        headers: { authorization: 'Bearer k', 'content-type': 'application/json' },
        body: JSON.stringify({ slug: 'app', platform: 'backend' }),
      });
      const created = await res.json();
      expect(res.status, JSON.stringify(created)).toBe(201);
      const key = new URL(created.dsn).username;
      for (const [file, headers] of ENVELOPES) {
        const res = await fetch(`${side.url}/api/${created.id}/envelope/?sentry_key=${key}`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-sentry-envelope', ...headers },
          body: fs.readFileSync(path.join(FIXTURES, file)),
        });
        expect(res.status, `${file} on ${side.url}`).toBe(200);
      }
    }
    // The captures are from 2026-11-21 and every read below goes by the events' and
    // sessions' own times, so a fixed window around that day holds them whatever today is.
    window = 'from=2026-11-20T00:00:00.000Z&to=2026-11-23T00:00:00.000Z';
  }, 120_000);

  afterAll(async () => {
    await Promise.all([node?.close(), worker?.close()]);
  });

  async function expectSame(pathname: string): Promise<any> {
    const [fromNode, fromWorker] = await Promise.all(
      sides().map(async (side) => {
        const res = await side.api(pathname);
        return [res.status, withoutReceipt(await res.json())] as const;
      }),
    );
    expect(fromNode[0], pathname).toBe(200);
    expect(fromWorker, pathname).toEqual(fromNode);
    return fromNode[1];
  }

  it('issues, issue detail and the overview', async () => {
    const issues = await expectSame(`/api/projects/app/issues?${window}&limit=100`);
    expect(issues.issues.length).toBeGreaterThanOrEqual(3);
    for (const issue of issues.issues) await expectSame(`/api/projects/app/issues/${issue.fingerprint}?${window}`);
    await expectSame(`/api/projects/app/overview?${window}`);
  });

  it('events and event detail from the stored payload', async () => {
    const page = await expectSame(`/api/projects/app/events?limit=50`);
    expect(page.events.length).toBe(4);
    for (const event of page.events) await expectSame(`/api/projects/app/events/${event.id}`);
  });

  it('releases, release detail with sessions (release health)', async () => {
    const releases = await expectSame(`/api/projects/app/releases?${window}`);
    const list = releases.releases ?? releases;
    expect(list.length).toBeGreaterThan(0);
    for (const r of list)
      await expectSame(`/api/projects/app/releases/${encodeURIComponent(r.version ?? r.release)}?${window}`);
  });
});
