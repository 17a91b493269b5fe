// Test support for export and import: an instance filled through the real ingest path
// (`faultline seed`'s envelopes, envelopes captured from real SDKs, sampled-out events,
// sessions), then changed the ways people and symbolication change it, and helpers to
// export and import in-process.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { strToU8, zipSync } from 'fflate';
import { expect } from 'vitest';
import { runSeed } from '../../src/cli/seed.js';
import { nodeTransferRuntime } from '../../src/editions/node/transfer.js';
import { compress } from '../../src/editions/node/codec.js';
import type { Store } from '../../src/store/database.js';
import { storedPayload } from '../../src/editions/node/payloads.js';
import { prepareExport } from '../../src/transfer/export.js';
import { importNdjson, type ImportOptions, type ImportSummary } from '../../src/transfer/import.js';
import { ManualClock } from '../../src/clock.js';
import { type DialectName, startTestServer, type TestServer } from '../helpers/server.js';
import { dsnOf, envelope, errorEvent, eventId, post, sessionUpdate } from '../ingest/helpers.js';
import { androidCrashEnvelope, newEventId } from '../attachments/mobile-envelopes.js';
import { openTestStore, type TestStore } from '../helpers/factory.js';

const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/transfer');

export function fixture(name: string): Buffer {
  return fs.readFileSync(path.join(FIXTURES, name));
}

export interface FilledInstance {
  /** Project filled by `faultline seed` plus captured SDK envelopes. */
  demo: string;
  /** Project whose events are mostly sampled out, with a non-UTF-8 payload. */
  web: string;
}

/**
 * Fills the server's database: seed's week of demo data (as `faultline seed` sends it),
 * real SDK envelopes and sessions, a project that samples events out, an event whose
 * payload is not UTF-8, issue status changes through the API, symbolicated frames on
 * one event and one event stored as rows were before payload chunks.
 */
export async function fillInstance(t: TestServer): Promise<FilledInstance> {
  const now = t.clock.now();
  await runSeed({ slug: 'demo', url: t.url, days: 1, seed: 31, now });
  const demo = (await (await t.api('/api/projects/demo')).json()) as { id: number; dsn: string };
  const demoRow = await t.deps.store.db
    .selectFrom('projects')
    .selectAll()
    .where('slug', '=', 'demo')
    .executeTakeFirstOrThrow();
  for (const name of [
    'node-event.envelope',
    'node-session-aggregates.envelope',
    'python-session.envelope',
    'node-session-crashed.envelope',
  ]) {
    const res = await post(t, demoRow, fixture(name));
    expect(res.status, name).toBe(200);
  }

  // A mobile crash with a screenshot and a view hierarchy (attachment lines).
  const mobileId = newEventId();
  expect((await post(t, demoRow, androidCrashEnvelope(mobileId, now - 30_000, dsnOf(t, demoRow)))).status).toBe(200);
  const report = {
    event_id: mobileId,
    name: 'Grace',
    email: 'grace@example.com',
    comments: 'App closed while paying.',
  };
  expect(
    (await post(t, demoRow, envelope({ event_id: mobileId }, [{ type: 'user_report', payload: report }]))).status,
  ).toBe(200);

  // Events sent one per request each get a payload chunk of their own: an export page
  // then needs many chunks at once.
  for (let i = 0; i < 24; i++) {
    const event = errorEvent({
      timestamp: now - 60_000 * i,
      type: 'SingleError',
      value: `single ${i}`,
      level: 'fatal',
    });
    expect(
      (await post(t, demoRow, envelope({ event_id: event.event_id }, [{ type: 'event', payload: event }]))).status,
    ).toBe(200);
  }

  const created = await t.api('/api/projects', {
    method: 'POST',
    json: { slug: 'web', name: 'Web shop', platform: 'web', sample_keep_first: 1, sample_rate: 0 },
  });
  expect(created.status).toBe(201);
  const web = await t.deps.store.db
    .selectFrom('projects')
    .selectAll()
    .where('slug', '=', 'web')
    .executeTakeFirstOrThrow();
  for (let i = 0; i < 6; i++) {
    const event = errorEvent({
      timestamp: now - 3600_000 * i,
      type: i % 2 ? 'RangeError' : 'TypeError',
      user: `u${i}`,
      release: i < 3 ? 'web@1.0' : 'web@1.1',
    });
    const res = await post(t, web, envelope({ event_id: event.event_id }, [{ type: 'event', payload: event }]));
    expect(res.status).toBe(200);
  }
  // A payload that is not UTF-8 (a Latin-1 byte inside a string) is kept byte for byte.
  const latin = Buffer.concat([
    Buffer.from(`{"event_id":"${eventId()}","timestamp":${now / 1000},"level":"error","message":"caf`),
    Buffer.from([0xe9]),
    Buffer.from('","exception":{"values":[{"type":"EncodingError","value":"bad byte"}]}}'),
  ]);
  expect((await post(t, web, envelope({}, [{ type: 'event', payload: latin }]))).status).toBe(200);
  const sessions = [
    sessionUpdate({ started: now - 7200_000, release: 'web@1.0' }),
    sessionUpdate({ started: now - 3600_000, status: 'crashed', errors: 1, release: 'web@1.1' }),
  ];
  for (const s of sessions)
    expect((await post(t, web, envelope({}, [{ type: 'session', payload: s }]))).status).toBe(200);

  // Alert rules and channels, symbol files (a source map with its derived index, a
  // ProGuard mapping tied to a release by the build plugins' route, an ELF file and a
  // source bundle kept through difs/assemble), a sentry-cli release with commits and a deploy.
  expect(
    (
      await t.api('/api/projects/demo/alerts/new_issue', {
        method: 'PATCH',
        json: { enabled: false, cooldown_minutes: 45 },
      })
    ).status,
  ).toBe(200);
  expect(
    (
      await t.api('/api/projects/demo/alerts/regression', {
        method: 'PATCH',
        json: { environments: ['production', 'eu-prod'], min_level: 'warning' },
      })
    ).status,
  ).toBe(200);
  const hook = await t.api('/api/projects/demo/alerts/channels', {
    method: 'POST',
    json: { kind: 'webhook', config: { url: 'http://127.0.0.1:9/hook', secret: 's3cret' } },
  });
  expect(hook.status).toBe(201);
  const slack = await t.api('/api/projects/demo/alerts/channels', {
    method: 'POST',
    json: { kind: 'slack', config: { url: 'https://93.184.216.34/services/T0/B0/XXXX' } },
  });
  expect(slack.status).toBe(201);
  expect(
    (
      await t.api('/api/projects/demo/alerts/regression', {
        method: 'PATCH',
        json: { channels: [(await hook.json()).id] },
      })
    ).status,
  ).toBe(200);
  const map = {
    version: 3,
    file: 'app.min.js',
    sources: ['src/app.ts'],
    names: ['main'],
    mappings: 'AAAAA,SAASA',
    sourcesContent: ['export function main() {}\n'],
  };
  const mapForm = new FormData();
  mapForm.set('kind', 'sourcemap');
  mapForm.set('release', 'com.example.shop@1.2.0+120');
  mapForm.set('file', new Blob([JSON.stringify(map)]), 'app.min.js.map');
  const mapUpload = await t.api('/api/projects/demo/symbols', { method: 'POST', body: mapForm });
  expect(mapUpload.status, await mapUpload.clone().text()).toBe(201);
  const proguardForm = new FormData();
  proguardForm.set('kind', 'proguard');
  proguardForm.set('release', 'com.example.shop@1.2.0+120');
  proguardForm.set('file', new Blob([new Uint8Array(fixture('mapping.txt'))]), 'mapping.txt');
  const proguard = await t.api('/api/projects/demo/symbols', { method: 'POST', body: proguardForm });
  expect(proguard.status, await proguard.clone().text()).toBe(201);
  const uuid = ((await proguard.json()) as { symbols: { debug_id: string }[] }).symbols[0].debug_id;
  const tied = await t.api('/api/0/projects/org/demo/files/proguard-artifact-releases/', {
    method: 'POST',
    json: { release_name: 'com.example.shop@1.2.0+120', proguard_uuid: uuid },
  });
  expect(tied.status, await tied.clone().text()).toBe(201);
  // An ELF debug file (with its derived index) and a source bundle through sentry-cli's routes, moved like the others.
  const elf = new Uint8Array(
    fs.readFileSync(
      path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/elf-native/x86_64-dwarf4.so'),
    ),
  );
  const sourceZip = zipSync({
    'files/app.c': strToU8('int main(void) { return 0; }\n'),
    'manifest.json': strToU8(
      JSON.stringify({
        files: { 'files/app.c': { type: 'source', path: 'app.c' } },
        debug_id: 'fd63e528-8d34-a2de-d635-5af05fcbea86',
      }),
    ),
  });
  const sourceBundle = new Uint8Array([...strToU8('SYSB'), 2, 0, 0, 0, ...sourceZip]);
  for (const [name, bytes] of [
    ['libapp.so', elf],
    ['libapp.src.zip', sourceBundle],
  ] as const) {
    const sha1 = createHash('sha1').update(bytes).digest('hex');
    const chunkForm = new FormData();
    chunkForm.append('file_gzip', new Blob([gzipSync(bytes) as Uint8Array<ArrayBuffer>]), sha1);
    expect((await t.api('/api/0/organizations/org/chunk-upload/', { method: 'POST', body: chunkForm })).status).toBe(
      200,
    );
    const assembled = await t.api('/api/0/projects/org/demo/files/difs/assemble/', {
      method: 'POST',
      json: { [sha1]: { name, debug_id: 'fd63e528-8d34-a2de-d635-5af05fcbea86', chunks: [sha1] } },
    });
    expect(((await assembled.json()) as Record<string, { state: string }>)[sha1].state).toBe('ok');
  }
  const release = await t.api('/api/0/organizations/org/releases/', {
    method: 'POST',
    json: { version: 'com.example.shop@1.3.0+130', projects: ['demo'], url: 'https://example.com/1.3' },
  });
  expect(release.status, await release.clone().text()).toBe(201);
  // Its commits (set-commits from local git: two, the newest first) and a deploy.
  const commits = [
    {
      id: 'c'.repeat(40),
      repository: 'acme/shop',
      message: 'Fix checkout\n\nLonger text',
      author_name: 'Dev One',
      author_email: 'one@example.com',
      timestamp: '2026-11-20T09:30:00+01:00',
      patch_set: [{ path: 'a.ts', type: 'M' }],
    },
    {
      id: 'b'.repeat(40),
      repository: 'acme/shop',
      message: null,
      author_email: 'two@example.com',
      timestamp: '2026-11-19T08:00:00Z',
      patch_set: [],
    },
  ];
  expect(
    (await t.api('/api/0/organizations/org/releases/com.example.shop@1.3.0+130/', { method: 'PUT', json: { commits } }))
      .status,
  ).toBe(200);
  const deploy = await t.api('/api/0/organizations/org/releases/com.example.shop@1.3.0+130/deploys/', {
    method: 'POST',
    json: {
      environment: 'production',
      name: 'shop-7',
      url: 'https://example.com/deploys/7',
      dateStarted: '2026-11-20T10:00:00Z',
      dateFinished: '2026-11-20T10:05:00Z',
    },
  });
  expect(deploy.status, await deploy.clone().text()).toBe(201);

  // Cron monitors from check-ins: a run that closed, one that failed, one still running.
  const run = eventId();
  const checkIns = [
    {
      check_in_id: run,
      monitor_slug: 'nightly',
      status: 'in_progress',
      environment: 'production',
      monitor_config: {
        schedule: { type: 'crontab', value: '0 3 * * *' },
        timezone: 'Europe/Vienna',
        checkin_margin: 5,
      },
    },
    { check_in_id: run, monitor_slug: 'nightly', status: 'ok', duration: 12.5 },
    {
      check_in_id: eventId(),
      monitor_slug: 'sync',
      status: 'error',
      release: 'web@1.1',
      monitor_config: { schedule: { type: 'interval', value: 15, unit: 'minute' }, failure_issue_threshold: 2 },
    },
    { check_in_id: eventId(), monitor_slug: 'sync', status: 'in_progress' },
  ];
  expect(
    (
      await post(
        t,
        demoRow,
        envelope(
          {},
          checkIns.map((payload) => ({ type: 'check_in', payload })),
        ),
      )
    ).status,
  ).toBe(200);

  // People change issues; symbolication fills frames; old rows keep their own blobs.
  const issues = (await (await t.api('/api/projects/demo/issues?days=30')).json()) as {
    issues: { fingerprint: string }[];
  };
  expect(issues.issues.length).toBeGreaterThan(3);
  for (const [i, status] of ['resolved', 'ignored', 'triaged'].entries()) {
    const res = await t.api(`/api/projects/demo/issues/${issues.issues[i].fingerprint}`, {
      method: 'PATCH',
      json: { status },
    });
    expect(res.status).toBe(200);
  }
  // Two issues that are one bug: merged, so the file carries the merged fingerprint.
  const merge = await t.api('/api/projects/demo/issues/merge', {
    method: 'POST',
    json: { fingerprints: [issues.issues[3].fingerprint], into: issues.issues[0].fingerprint },
  });
  expect(merge.status, await merge.clone().text()).toBe(200);
  const db = t.deps.store.db;
  const first = await db
    .selectFrom('events')
    .select(['id'])
    .where('project_id', '=', demo.id)
    .orderBy('id')
    .executeTakeFirstOrThrow();
  await db
    .updateTable('events')
    .set({ symbolicated: JSON.stringify([[{ function: 'main', filename: 'src/main.ts', lineno: 3 }]]) })
    .where('id', '=', first.id)
    .execute();
  const old = await db
    .selectFrom('events')
    .selectAll()
    .where('project_id', '=', demo.id)
    .orderBy('id', 'desc')
    .executeTakeFirstOrThrow();
  const payload = await storedPayload(db, old);
  await db
    .updateTable('events')
    .set({
      raw: compress(payload),
      detail: compress(Buffer.from(JSON.stringify({ exceptions: [], breadcrumbs: [] }))),
      payload_chunk: null,
      payload_start: null,
      payload_length: null,
    })
    .where('id', '=', old.id)
    .execute();
  // Ingest stores payloads as valid UTF-8; a row written by an older version may hold
  // any bytes: the Latin-1 payload as received, which the export carries as base64.
  const encoding = await db
    .selectFrom('events')
    .select('id')
    .where('error_type', '=', 'EncodingError')
    .executeTakeFirstOrThrow();
  await db
    .updateTable('events')
    .set({ raw: compress(latin), payload_chunk: null, payload_start: null, payload_length: null })
    .where('id', '=', encoding.id)
    .execute();
  return { demo: 'demo', web: 'web' };
}

/** A test server on a new database of the dialect, filled (fillInstance), and its export. */
export async function filledSource(dialect: DialectName): Promise<{ t: TestServer; file: string }> {
  // The webhook channel points at this machine.
  const t = await startTestServer(dialect, {
    clock: new ManualClock(Date.now()),
    env: { WEBHOOK_ALLOW_PRIVATE: 'true' },
  });
  await fillInstance(t);
  return { t, file: await exportText(t.deps.store) };
}

/** The export file's text, in-process. */
export async function exportText(store: Store, options: { project?: string; pageRows?: number } = {}): Promise<string> {
  const prepared = await prepareExport(store, nodeTransferRuntime, { version: 'test', ...options });
  const decoder = new TextDecoder();
  let text = '';
  for await (const chunk of prepared.chunks()) text += decoder.decode(chunk, { stream: true });
  return text;
}

/** The file's lines without the meta line (which names the export time). */
export function bodyLines(text: string): string[] {
  const lines = text.split('\n').filter((l) => l !== '');
  expect(JSON.parse(lines[0]).type).toBe('meta');
  return lines.slice(1);
}

export async function importText(
  store: Store,
  text: string | string[],
  options: ImportOptions = {},
): Promise<ImportSummary> {
  const parts = Array.isArray(text) ? text : [text];
  async function* source() {
    for (const p of parts) yield new TextEncoder().encode(p);
  }
  return importNdjson(store, nodeTransferRuntime, source(), options);
}

/** A new migrated database of the dialect, as after "start the service once". */
export const emptyStore = openTestStore;
export type EmptyStore = TestStore;

/** Counts of rows added per type. */
export function added(summary: ImportSummary): Record<string, number> {
  return Object.fromEntries(Object.entries(summary.types).map(([t, c]) => [t, c.added]));
}

/** Line counts per type of an export's text. */
export function typeCounts(text: string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const line of bodyLines(text)) {
    const type = JSON.parse(line).type as string;
    counts[type] = (counts[type] ?? 0) + 1;
  }
  return counts;
}
