// `faultline seed` against a real test server: the project is created through the
// management API, and a week of events and sessions arrives through ingest.
import { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { defaultSeedUrl, register, runSeed, SeedError } from '../../src/cli/seed.js';
import { buildSeedPlan, SEED_RELEASES } from '../../src/ingest/seed-data.js';
import { DAY_MS } from '../../src/clock.js';
import { findProjectBySlug } from '../../src/store/projects.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { eventsOf, issuesOf, sessionTotals } from './helpers.js';

const API_KEY = 'seed-test-key-0123456789';

describe('seed data', () => {
  it('is deterministic per seed and spread over the days asked for, never in the future', () => {
    const now = Date.UTC(2026, 10, 21, 12, 0, 0);
    const a = buildSeedPlan({ now, seed: 7 });
    const b = buildSeedPlan({ now, seed: 7 });
    expect(a).toEqual(b);
    expect(buildSeedPlan({ now, seed: 8 }).envelopes[0].body).not.toBe(a.envelopes[0].body);
    const times: number[] = [];
    const platforms = new Set<string>();
    for (const env of a.envelopes.filter((e) => e.kind === 'events')) {
      const lines = env.body.split('\n');
      expect((lines.length - 1) / 2).toBe(env.items);
      expect(env.items).toBeLessThanOrEqual(100);
      for (let i = 2; i < lines.length; i += 2) {
        const event = JSON.parse(lines[i]);
        times.push(event.timestamp * 1000);
        platforms.add(event.platform);
      }
    }
    expect(Math.max(...times)).toBeLessThan(now);
    expect(Math.min(...times)).toBeGreaterThanOrEqual(now - 7 * DAY_MS);
    expect(Math.min(...times)).toBeLessThan(now - 6 * DAY_MS);
    expect([...platforms].sort()).toEqual(['cocoa', 'java', 'javascript']);
    expect(a.releases).toEqual([...SEED_RELEASES]);
    expect(a.crashes).toBeGreaterThan(0);
    expect(a.crashedSessions).toBeGreaterThan(0);
  });
});

describe.each(dialects)('faultline seed on %s', (dialect) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(dialect, { env: { API_KEYS: API_KEY }, clock: { now: () => Date.now() } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('refuses to run without a valid API key', async () => {
    await expect(runSeed({ slug: 'nokey', url: t.url })).rejects.toThrow(SeedError);
    expect(await findProjectBySlug(t.deps.store.db, 'nokey')).toBeUndefined();
  });

  it('creates the project and fills a week of issues, events and sessions through ingest', async () => {
    const lines: string[] = [];
    // The plan follows the clock (traffic by time of day, each hour's random draws), so one
    // seed gives other data a minute later, and in a few minutes of a day 1.2.0's sessions
    // drew too few crashes for the ordering below. It runs at one time of day instead:
    // 12:00 UTC yesterday gives the same data every day.
    const now = Math.floor(Date.now() / DAY_MS) * DAY_MS - DAY_MS / 2;
    const result = await runSeed({
      slug: 'demo',
      url: t.url,
      apiKey: API_KEY,
      seed: 42,
      now,
      progress: (l) => lines.push(l),
    });
    expect(result.created).toBe(true);
    expect(result.refused).toBe(0);
    expect(lines[0]).toMatch(/created project "demo"/);
    const project = await findProjectBySlug(t.deps.store.db, 'demo');
    expect(project?.id).toBe(result.projectId);
    expect(project?.platform).toBe('react-native');

    const issues = await issuesOf(t, project!);
    expect(issues.length).toBeGreaterThanOrEqual(8);
    const counted = issues.reduce((s, i) => s + Number(i.event_count), 0);
    expect(counted).toBe(result.plan.events);
    const events = await eventsOf(t, project!);
    expect(events.length).toBe(result.plan.events);
    expect(events.filter((e) => e.is_crash === 1).length).toBe(result.plan.crashes);
    expect(new Set(events.map((e) => e.release))).toEqual(new Set(SEED_RELEASES));
    expect(new Set(events.map((e) => e.device_model)).size).toBeGreaterThanOrEqual(5);
    const oldest = Math.min(...events.map((e) => Number(e.timestamp)));
    expect(oldest).toBeLessThan(Date.now() - 6 * DAY_MS);

    const totals = await sessionTotals(t, project!);
    expect(totals.total).toBe(result.plan.sessions);
    expect(totals.crashed).toBe(result.plan.crashedSessions);
    expect(totals.errored).toBeGreaterThan(0);

    // What the docs say of the seeded releases: 1.2.0 brings a new crash and the lowest
    // crash-free rate; nothing is resolved, so the overview counts no regressions.
    const releases = (await (await t.api('/api/projects/demo/releases?days=30')).json()).releases as any[];
    const byVersion = new Map(releases.map((r) => [r.version ?? r.release, r]));
    const latest = byVersion.get('com.example.shop@1.2.0+120');
    expect(latest.new_issues).toBeGreaterThanOrEqual(1);
    for (const other of ['com.example.shop@1.0.0+100', 'com.example.shop@1.1.0+110']) {
      expect(latest.crash_free_rate).toBeLessThan(byVersion.get(other).crash_free_rate);
    }
    expect((await (await t.api('/api/projects/demo/overview?days=30')).json()).regressions).toBe(0);
  });

  it('without --url sends to the server that PORT and HOST describe (127.0.0.1 for a wildcard HOST)', async () => {
    const port = new URL(t.url).port;
    const run = async (env: Record<string, string | undefined>) => {
      const program = new Command();
      program.exitOverride();
      register(program);
      const out: string[] = [];
      const saved = { PORT: process.env.PORT, HOST: process.env.HOST };
      Object.assign(process.env, env);
      for (const [k, v] of Object.entries(env)) if (v === undefined) delete process.env[k];
      const stdout = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => (out.push(String(chunk)), true));
      const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
      try {
        await program.parseAsync(['seed', 'by-port', '--api-key', API_KEY, '--days', '1', '--seed', '3'], {
          from: 'user',
        });
      } finally {
        stdout.mockRestore();
        stderr.mockRestore();
        for (const [k, v] of Object.entries(saved))
          if (v === undefined) delete process.env[k];
          else process.env[k] = v;
      }
      return out.join('');
    };
    for (const host of ['0.0.0.0', '127.0.0.1', '::']) {
      expect(await run({ PORT: port, HOST: host })).toContain(`Seeded project "by-port" (id `);
    }
    expect(await run({ PORT: port, HOST: '0.0.0.0' })).toContain(`on http://127.0.0.1:${port}`);
    // PORT=0 means "any free port": there is nothing to guess.
    await expect(run({ PORT: '0', HOST: undefined })).rejects.toThrow(/PORT is 0.*--url/);
    // The localhost URL form of an IPv6 address is bracketed.
    expect(defaultSeedUrl({ PORT: '9000', HOST: '::1' })).toBe('http://[::1]:9000');
    expect(defaultSeedUrl({})).toBe('http://127.0.0.1:8080');
  });

  it('runs as a CLI command on an existing project and adds to it', async () => {
    const program = new Command();
    program.exitOverride();
    register(program);
    const out: string[] = [];
    const stdout = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      out.push(String(chunk));
      return true;
    });
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    const project = (await findProjectBySlug(t.deps.store.db, 'demo'))!;
    const before = (await eventsOf(t, project)).length;
    try {
      await program.parseAsync(['seed', 'demo', '--url', t.url, '--api-key', API_KEY, '--days', '1', '--seed', '5'], {
        from: 'user',
      });
    } finally {
      stdout.mockRestore();
      stderr.mockRestore();
    }
    const summary = out.join('');
    expect(summary).toMatch(/Seeded project "demo"/);
    const added = Number(/events:\s+(\d+)/.exec(summary)?.[1]);
    expect(added).toBeGreaterThan(0);
    expect((await eventsOf(t, project)).length).toBe(before + added);
  });
});
