// `faultline export` and `faultline import` as real processes: the file on stdout,
// progress and summaries on stderr/stdout, exit codes; an import killed mid-way
// (kill -9) and run again; an import into a database a running server is ingesting into.
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/editions/node/open-store.js';
import type { Store } from '../../src/store/database.js';
import { childEnv, CLI, ensureBuilt, REPO, runCli } from '../helpers/cli.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { generateDsnKey } from '../../src/store/projects.js';
import { envelope, errorEvent, post, sessionUpdate } from '../ingest/helpers.js';
import { bodyLines, emptyStore, exportText, filledSource } from './support.js';

async function count(store: Store, table: 'events' | 'issues'): Promise<number> {
  const row = await store.db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

describe.each(dialects)('faultline export and import on %s', (dialect) => {
  let t: TestServer;
  let file: string;

  beforeAll(async () => {
    ensureBuilt();
    ({ t, file } = await filledSource(dialect));
  }, 90_000);

  afterAll(async () => {
    await t?.close();
  });

  it('export writes the file to stdout, progress and a summary to stderr', async () => {
    const result = await runCli(['export'], { DATABASE_URL: t.database.url });
    expect(result.code, result.stderr).toBe(0);
    expect(bodyLines(result.stdout)).toEqual(bodyLines(file));
    const meta = JSON.parse(result.stdout.slice(0, result.stdout.indexOf('\n')));
    expect(meta).toMatchObject({
      type: 'meta',
      format: 1,
      source: { database: dialect, project: null },
      expected_lines: bodyLines(file).length + 1,
    });
    // Not a terminal: progress comes as plain lines, then the summary.
    expect(result.stderr).toMatch(/^export: \d+\/\d+ lines \(\d+%\), \d+ lines\/s, ETA /m);
    expect(result.stderr).toMatch(
      new RegExp(
        `export: wrote ${bodyLines(file).length + 1} lines \\(meta and 2 project, \\d+ alert_rule, .*, \\d+ issue,`,
      ),
    );

    const web = await runCli(['export', 'web'], { DATABASE_URL: t.database.url });
    expect(bodyLines(web.stdout)).toEqual(bodyLines(await exportText(t.deps.store, { project: 'web' })));
    const missing = await runCli(['export', 'nosuch'], { DATABASE_URL: t.database.url });
    expect([missing.code, missing.stdout, missing.stderr.trim()]).toEqual([
      1,
      '',
      'faultline: no project with slug "nosuch"',
    ]);
  }, 30_000);

  it('import reads stdin, prints a summary per type, and exits 1 naming the first line it could not import', async () => {
    const empty = await emptyStore(dialect);
    try {
      const ok = await runCli(['import'], { DATABASE_URL: empty.database.url }, REPO, file);
      expect(ok.code, ok.stderr).toBe(0);
      expect(ok.stdout).toMatch(/^Imported \d+ lines \(format 1\) into /);
      expect(ok.stdout).toMatch(
        new RegExp(
          `^  event +${bodyLines(file).filter((l) => l.startsWith('{"type":"event"')).length} added, 0 kept$`,
          'm',
        ),
      );
      expect(ok.stderr).toMatch(/^import: \d+\/\d+ lines/m);
      expect(bodyLines(await exportText(empty.store))).toEqual(bodyLines(file));

      const lines = file.split('\n');
      const bad = [
        lines[0],
        lines[1],
        '{"type":"session","project":"demo"}',
        '{"type":"later_thing"}',
        ...lines.slice(2),
      ].join('\n');
      const partly = await runCli(['import'], { DATABASE_URL: empty.database.url }, REPO, bad);
      expect(partly.code).toBe(1);
      expect(partly.stdout).toMatch(/^ {2}later_thing +1 skipped \(unknown type\)$/m);
      expect(partly.stdout).toMatch(/^ {2}line 3: session: sid: /m);
      expect(partly.stderr).toMatch(
        /faultline: 1 line was not imported \(first at line 3\); the other lines were imported/,
      );

      const newer = await runCli(
        ['import'],
        { DATABASE_URL: empty.database.url },
        REPO,
        '{"type":"meta","format":9}\n',
      );
      expect(newer.code).toBe(1);
      expect(newer.stderr).toMatch(/import refused, nothing written: the file is export format 9/);
    } finally {
      await empty.close();
    }
  }, 60_000);

  it('a file cut short is reported as where it ends against what its meta line announced', async () => {
    const empty = await emptyStore(dialect);
    try {
      const expected = JSON.parse(file.slice(0, file.indexOf('\n'))).expected_lines as number;
      const cut = file.slice(0, Math.floor(file.length * 0.6)); // mid-line, as a download that stopped
      const endsAt = cut.split('\n').length;
      expect(endsAt).toBeLessThan(expected);
      const res = await runCli(['import'], { DATABASE_URL: empty.database.url }, REPO, cut);
      expect(res.code).toBe(1);
      const message = `the file ends at line ${endsAt} of the ${expected} its meta line announced (cut short: copy or download it again)`;
      expect(res.stderr).toContain(`faultline: ${message}; the lines before it were imported`);
      expect(res.stdout).toContain(`${message}: the rest of it is missing`);
    } finally {
      await empty.close();
    }
  }, 60_000);

  it('an import killed mid-way keeps whole batches, and run again completes the copy', async () => {
    const empty = await emptyStore(dialect);
    const watcher = await openStore(empty.database.url);
    try {
      const lines = file.split('\n');
      const events = lines.map((l, i) => [l, i] as const).filter(([l]) => l.startsWith('{"type":"event"'));
      const cut = events[Math.floor(events.length * 0.8)][1];
      const child = spawn(process.execPath, [CLI, 'import', '--batch-size', '20'], {
        cwd: REPO,
        env: childEnv({ DATABASE_URL: empty.database.url }),
        stdio: ['pipe', 'ignore', 'ignore'],
      });
      const exited = new Promise((resolve) => child.on('close', resolve));
      child.stdin.on('error', () => {});
      child.stdin.write(lines.slice(0, cut).join('\n') + '\n');
      // It has written some batches of events and waits for more input: kill it there.
      const deadline = Date.now() + 20_000;
      while ((await count(watcher, 'events')) === 0 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 50));
      child.kill('SIGKILL');
      await exited;
      const partial = await count(watcher, 'events');
      expect(partial).toBeGreaterThan(0);
      expect(partial).toBeLessThan(events.length);
      expect(await count(watcher, 'issues')).toBe(
        bodyLines(file).filter((l) => l.startsWith('{"type":"issue"')).length,
      );

      const resumed = await runCli(['import'], { DATABASE_URL: empty.database.url }, REPO, file);
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(resumed.stdout).toMatch(new RegExp(`^  event +${events.length - partial} added, ${partial} kept$`, 'm'));
      expect(bodyLines(await exportText(empty.store))).toEqual(bodyLines(file));
    } finally {
      await watcher.close();
      await empty.close();
    }
  }, 60_000);

  it('imports into a database while a server ingests into it: both sides are complete and nothing is counted twice', async () => {
    const live = await startTestServer(dialect, { clock: { now: () => t.clock.now() } });
    try {
      // An id the file's projects do not use, so they keep theirs.
      const project = await live.deps.store.db
        .insertInto('projects')
        .values({
          id: 100,
          slug: 'live',
          name: 'live',
          platform: 'backend',
          dsn_key: generateDsnKey(),
          sample_keep_first: 100,
          sample_rate: 1,
          daily_quota: 0,
          created_at: t.clock.now(),
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      let acknowledged = 0;
      let sessions = 0;
      let running = true;
      const sender = (async () => {
        for (let i = 0; running || i < 20; i++) {
          const event = errorEvent({
            timestamp: t.clock.now() - i * 1000,
            type: `LiveError${i % 7}`,
            user: `u${i % 13}`,
          });
          const items = [{ type: 'event', payload: event }];
          if (i % 5 === 0)
            items.push({ type: 'session', payload: sessionUpdate({ started: t.clock.now() - i * 1000 }) as never });
          const res = await post(live, project, envelope({ event_id: event.event_id }, items));
          expect(res.status).toBe(200);
          acknowledged++;
          if (i % 5 === 0) sessions++;
        }
      })();
      const imported = await runCli(['import'], { DATABASE_URL: live.database.url }, REPO, file);
      running = false;
      await sender;
      expect(imported.code, imported.stderr).toBe(0);

      const after = bodyLines(await exportText(live.deps.store));
      const isLive = (l: string) => {
        const line = JSON.parse(l);
        return line.type === 'project' ? line.slug === project.slug : line.project === project.slug;
      };
      expect(after.filter((l) => !isLive(l))).toEqual(bodyLines(file));
      const liveLines = after.filter(isLive).map((l) => JSON.parse(l));
      expect(liveLines.filter((l) => l.type === 'event').length).toBe(acknowledged);
      expect(liveLines.filter((l) => l.type === 'issue').reduce((s, l) => s + l.event_count, 0)).toBe(acknowledged);
      expect(liveLines.filter((l) => l.type === 'session').length).toBe(sessions);
    } finally {
      await live.close();
    }
  }, 60_000);
});
