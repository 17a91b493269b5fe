// The real @sentry/node SDK against the real server. Each scenario runs in its own
// child process (Sentry.init is process-global; a crash must really be uncaught)
// against its own project; all scenarios start together, then each test checks
// what was stored.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storedPayload } from '../../src/editions/node/payloads.js';
import type { ProjectRow } from '../../src/store/schema.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { dsnOf, eventsOf, issuesOf, makeProject, sessionsOf, sessionTotals } from './helpers.js';

const CLIENT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'clients', 'node-sdk.mjs');

interface RunResult {
  code: number;
  stderr: string;
}

function runClient(scenario: string, dsn: string): Promise<RunResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLIENT, scenario],
      { env: { ...process.env, FAULTLINE_DSN: dsn }, timeout: 30_000 },
      (err, _stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
        resolve({ code, stderr });
      },
    );
  });
}

const SCENARIOS = ['handled', 'message', 'large', 'crash', 'sessions', 'server'] as const;
type Scenario = (typeof SCENARIOS)[number];

describe.each(dialects)('@sentry/node against the server on %s', (dialect) => {
  let t: TestServer;
  const projects = {} as Record<Scenario, ProjectRow>;
  const results = {} as Record<Scenario, RunResult>;

  beforeAll(async () => {
    // The SDK stamps events with the real time; the server's clock must agree.
    t = await startTestServer(dialect, { clock: { now: () => Date.now() } });
    for (const s of SCENARIOS) projects[s] = await makeProject(t);
    const runs = SCENARIOS.map(async (s) => {
      results[s] = await runClient(s, dsnOf(t, projects[s]));
    });
    // The handled scenario runs twice, in two processes: grouping must not depend on the process.
    runs.push(
      runClient('handled', dsnOf(t, projects.handled)).then((r) => {
        expect(r.code, r.stderr).toBe(0);
      }),
    );
    await Promise.all(runs);
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  it('handled exceptions: one issue, a stable fingerprint across calls and processes', async () => {
    expect(results.handled.code, results.handled.stderr).toBe(0);
    const p = projects.handled;
    const issues = await issuesOf(t, p);
    expect(issues).toHaveLength(1);
    const [issue] = issues;
    expect(Number(issue.event_count)).toBe(4);
    expect(Number(issue.stored_count)).toBe(4);
    expect(Number(issue.users)).toBe(1);
    expect(issue.error_type).toBe('TypeError');
    expect(issue.title).toMatch(/^TypeError: Cannot read properties of undefined/);
    expect(issue.level).toBe('error');
    expect(issue.first_release).toBe('sdk-test@1.0.0');
    expect(issue.platform).toBe('node');
    const events = await eventsOf(t, p);
    expect(events).toHaveLength(4);
    for (const e of events) {
      expect(e.fingerprint).toBe(issue.fingerprint);
      expect(e.is_crash).toBe(0);
      expect(e.user_id).toBe('user-1');
      expect(e.environment).toBe('test');
      expect(e.sdk_name).toBe('sentry.javascript.node');
    }
  });

  it('a message: a warning issue titled by the message', async () => {
    expect(results.message.code, results.message.stderr).toBe(0);
    const issues = await issuesOf(t, projects.message);
    expect(issues).toHaveLength(1);
    expect(issues[0].level).toBe('warning');
    expect(issues[0].title).toBe('sdk test message 42');
    const [event] = await eventsOf(t, projects.message);
    expect(event.is_crash).toBe(0);
    expect(event.message).toContain('sdk test message 42');
  });

  it('a large event the SDK gzips is decoded and stored', async () => {
    expect(results.large.code, results.large.stderr).toBe(0);
    const issues = await issuesOf(t, projects.large);
    expect(issues).toHaveLength(1);
    expect(issues[0].title).toBe('RangeError: large event');
    const [event] = await eventsOf(t, projects.large);
    // The raw payload is kept whole (the 48 KiB of padding and all), compressed at rest.
    const chunk = await t.deps.store.db
      .selectFrom('payload_chunks')
      .select('data')
      .where('id', '=', Number(event.payload_chunk))
      .executeTakeFirstOrThrow();
    expect(chunk.data.byteLength).toBeLessThan(48 * 1024);
    const raw = JSON.parse((await storedPayload(t.deps.store.db, event)).toString('utf8'));
    expect(raw.event_id).toBe(event.event_id);
    expect(raw.extra.padding).toBe('x'.repeat(48 * 1024));
    expect(raw.exception.values.at(-1)).toMatchObject({ type: 'RangeError', value: 'large event' });
    expect(raw.exception.values.at(-1).stacktrace.frames.length).toBeGreaterThan(0);
  });

  it('an uncaught exception in the process arrives as a crash', async () => {
    // The SDK's handler reports, flushes, then exits the process with 1.
    expect(results.crash.code).toBe(1);
    const issues = await issuesOf(t, projects.crash);
    expect(issues).toHaveLength(1);
    expect(issues[0].title).toBe('Error: unhandled crash in child');
    expect(issues[0].level).toBe('fatal');
    const [event] = await eventsOf(t, projects.crash);
    expect(event.is_crash).toBe(1);
    expect(event.level).toBe('fatal');
  });

  it('single sessions: one exited, one crashed', async () => {
    expect(results.sessions.code, results.sessions.stderr).toBe(0);
    const p = projects.sessions;
    const sessions = await sessionsOf(t, p);
    expect(sessions).toHaveLength(2);
    const byDid = Object.fromEntries(sessions.map((s) => [s.did, s]));
    expect(byDid.u1.status).toBe('exited');
    expect(Number(byDid.u1.errors)).toBe(0);
    expect(byDid.u2.status).toBe('crashed');
    expect(Number(byDid.u2.errors)).toBe(1);
    for (const s of sessions) expect(s.release).toBe('sdk-test@1.0.0');
    expect(await sessionTotals(t, p)).toEqual({ total: 2, crashed: 1, errored: 0 });
    // The crash that ended the second session is an event too.
    const [event] = await eventsOf(t, p);
    expect(event.is_crash).toBe(1);
  });

  it('server-mode request sessions arrive as aggregates', async () => {
    expect(results.server.code, results.server.stderr).toBe(0);
    const p = projects.server;
    // 4 requests: 3 exited, 1 errored (the one that captured an exception).
    expect(await sessionTotals(t, p)).toEqual({ total: 4, crashed: 0, errored: 1 });
    const issues = await issuesOf(t, p);
    expect(issues).toHaveLength(1);
    expect(issues[0].title).toBe('Error: request failed in handler');
  });
});
