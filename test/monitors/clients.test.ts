// Real clients' check-ins against the real server on each database: sentry-cli
// `monitors run` (3.x and 2.x) wrapping a command that succeeds and one that fails, and
// @sentry/node's `withMonitor`. The server runs on the real clock (the clients stamp
// nothing it reads, but their runs take real time).
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { dsnOf, makeProject } from '../ingest/helpers.js';
import { CLIS, runCli, type CliVersion } from '../uploads/cli.js';
import { checkinRows, monitorAlerts, monitorRows } from './support.js';

const CLIENT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'clients', 'with-monitor.mjs');

function runNode(scenario: string, dsn: string): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLIENT, scenario],
      { env: { ...process.env, FAULTLINE_DSN: dsn }, timeout: 30_000 },
      (err, _stdout, stderr) => {
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stderr });
      },
    );
  });
}

describe.each(dialects)("real clients' check-ins (%s)", (dialect) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(dialect, { clock: { now: () => Date.now() } });
  });
  afterAll(async () => {
    await t?.close();
  });

  describe.each(Object.keys(CLIS) as CliVersion[])('sentry-cli %s.x monitors run', (version) => {
    it('a command that succeeds: the monitor is created from the flags, one ok check-in with its duration', async () => {
      const p = await makeProject(t);
      const target = { url: t.url, token: 'unused', project: p.slug };
      const result = await runCli(
        version,
        target,
        [
          'monitors',
          'run',
          `nightly-${version}`,
          '--schedule',
          '0 3 * * *',
          '--timezone',
          'Europe/Vienna',
          '--check-in-margin',
          '5',
          '--max-runtime',
          '20',
          '--',
          process.execPath,
          '-e',
          'setTimeout(() => {}, 200)',
        ],
        { env: { SENTRY_DSN: dsnOf(t, p) } },
      );
      expect(result.code, result.stderr).toBe(0);
      const [m] = await monitorRows(t, p);
      expect(m).toMatchObject({
        slug: `nightly-${version}`,
        schedule_type: 'crontab',
        schedule: '0 3 * * *',
        timezone: 'Europe/Vienna',
        checkin_margin: 5,
        max_runtime: 20,
        health: 'ok',
        last_status: 'ok',
      });
      const checkins = await checkinRows(t, p);
      expect(checkins.map((c) => [c.status, c.environment])).toEqual([['ok', 'production']]);
      expect(Number(checkins[0].duration_ms)).toBeGreaterThanOrEqual(150);
      const detail = await (await t.api(`/api/projects/${p.slug}/monitors/nightly-${version}`)).json();
      expect(detail.checkins[0]).toMatchObject({ status: 'ok', environment: 'production' });
    });

    it("a command that fails: an error check-in, the monitor alert, and the command's exit code", async () => {
      const p = await makeProject(t);
      const target = { url: t.url, token: 'unused', project: p.slug };
      const result = await runCli(
        version,
        target,
        ['monitors', 'run', 'failing', '--schedule', '*/5 * * * *', '--', process.execPath, '-e', 'process.exit(3)'],
        { env: { SENTRY_DSN: dsnOf(t, p) } },
      );
      expect(result.code).toBe(3);
      expect((await checkinRows(t, p)).map((c) => c.status)).toEqual(['error']);
      expect((await monitorRows(t, p))[0]).toMatchObject({ health: 'failing', failures: 1 });
      expect(await monitorAlerts(t, p)).toEqual([
        {
          title: 'Monitor failing reported a failure',
          monitor: 'failing',
          reason: 'error',
          failures: 1,
          environment: 'production',
        },
      ]);
    });

    it('without a schedule for a monitor that does not exist: nothing stored', async () => {
      const p = await makeProject(t);
      const result = await runCli(
        version,
        { url: t.url, token: 'unused', project: p.slug },
        ['monitors', 'run', 'ghost', '--', process.execPath, '-e', '0'],
        { env: { SENTRY_DSN: dsnOf(t, p) } },
      );
      expect(result.code, result.stderr).toBe(0);
      expect(await monitorRows(t, p)).toEqual([]);
      expect(await checkinRows(t, p)).toEqual([]);
    });
  });

  it('@sentry/node withMonitor: in_progress then ok, or error when the job throws', async () => {
    const p = await makeProject(t);
    const [ok, fail] = await Promise.all([runNode('ok', dsnOf(t, p)), runNode('fail', dsnOf(t, p))]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(fail.code, fail.stderr).toBe(0);
    const monitors = await monitorRows(t, p);
    expect(
      monitors.map((m) => [
        m.slug,
        m.schedule_type,
        m.schedule,
        m.schedule_unit,
        m.timezone,
        Number(m.checkin_margin),
        Number(m.max_runtime),
        m.last_status,
      ]),
    ).toEqual([
      ['node-fail', 'interval', '10', 'minute', 'Europe/Vienna', 2, 5, 'error'],
      ['node-ok', 'interval', '10', 'minute', 'Europe/Vienna', 2, 5, 'ok'],
    ]);
    const checkins = await checkinRows(t, p);
    expect(checkins.map((c) => [c.status, c.environment, c.release]).sort()).toEqual([
      ['error', 'staging', 'cron@2.0.0'],
      ['ok', 'staging', 'cron@2.0.0'],
    ]);
    for (const c of checkins) expect(Number(c.duration_ms)).toBeGreaterThanOrEqual(40);
  }, 60_000);
});
