// `faultline backup` on a live SQLite database: a copy taken while the real server
// keeps ingesting passes PRAGMA integrity_check and has the source's issues; the
// command refuses an existing file, a missing or non-directory parent, an unwritable
// directory and a PostgreSQL DATABASE_URL with clear errors, writing nothing.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backupCommand } from '../../src/cli/backup.js';
import { CliError } from '../../src/cli/context.js';
import type { ProjectRow } from '../../src/store/schema.js';
import { ensureBuilt, runCli } from '../helpers/cli.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { envelope, errorEvent, makeProject, post } from '../ingest/helpers.js';

describe('faultline backup', () => {
  let t: TestServer;
  let p: ProjectRow;
  let dir: string;

  beforeAll(async () => {
    t = await startTestServer('sqlite', { clock: { now: () => Date.now() } });
    p = await makeProject(t);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-backup-'));
    // Ten issues, each with enough events that the copy takes several steps.
    for (let round = 0; round < 20; round++) {
      const events = Array.from({ length: 50 }, (_, i) => ({
        type: 'event',
        payload: {
          ...errorEvent({ timestamp: Date.now(), fn: `fn${i % 10}` }),
          extra: { pad: 'x'.repeat(2000 + round * 10 + i) },
        },
      }));
      expect((await post(t, p, envelope({}, events))).status).toBe(200);
    }
  }, 120_000);
  afterAll(async () => {
    await t?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('copies the database while ingest goes on; the copy is sound and has the same issues', async () => {
    let ingesting = true;
    let sent = 0;
    const load = (async () => {
      while (ingesting) {
        const events = Array.from({ length: 20 }, (_, i) => ({
          type: 'event',
          payload: errorEvent({ timestamp: Date.now(), fn: `fn${i % 10}` }),
        }));
        expect((await post(t, p, envelope({}, events))).status).toBe(200);
        sent++;
      }
    })();
    const file = path.join(dir, 'copy.db');
    const lines: string[] = [];
    // Let ingest start before the copy does.
    await new Promise((r) => setTimeout(r, 50));
    const result = await backupCommand(t.database.url, file, (l) => lines.push(l));
    ingesting = false;
    await load;
    expect(sent).toBeGreaterThan(0);
    expect(result.integrity).toBe('ok');
    expect(lines[0]).toMatch(/^backup: .*copy\.db: \d+ bytes, \d+ pages, 10 issues, \d+ events, integrity ok/);
    expect(fs.existsSync(`${file}.partial`)).toBe(false);

    const copy = new BetterSqlite3(file, { readonly: true });
    const issuesInCopy = Number((copy.prepare('select count(*) as n from issues').get() as { n: number }).n);
    const eventsInCopy = Number((copy.prepare('select count(*) as n from events').get() as { n: number }).n);
    expect((copy.pragma('integrity_check') as { integrity_check: string }[])[0].integrity_check).toBe('ok');
    copy.close();
    const source = await t.deps.store.db
      .selectFrom('issues')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    expect(issuesInCopy).toBe(Number(source.n));
    expect(issuesInCopy).toBe(10);
    expect(eventsInCopy).toBeGreaterThanOrEqual(1000);
  }, 120_000);

  it('refuses targets it must not or cannot write, and PostgreSQL', async () => {
    const existing = path.join(dir, 'existing.db');
    fs.writeFileSync(existing, 'keep me');
    const cases: [string, string | undefined, RegExp][] = [
      [existing, t.database.url, /already exists; a backup never overwrites a file/],
      [path.join(dir, 'missing', 'x.db'), t.database.url, /the directory .*missing does not exist/],
      [path.join(existing, 'x.db'), t.database.url, /existing\.db is not a directory/],
      [path.join(dir, 'pg.db'), 'postgres://u@localhost/db', /for PostgreSQL use pg_dump/],
    ];
    for (const [file, url, message] of cases) {
      const err = await backupCommand(url, file, () => {}).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(CliError);
      expect((err as Error).message).toMatch(message);
    }
    expect(fs.readFileSync(existing, 'utf8')).toBe('keep me');
    expect(fs.existsSync(path.join(dir, 'pg.db'))).toBe(false);
  });

  it.skipIf(process.getuid?.() === 0)('refuses a directory it cannot write to', async () => {
    const locked = path.join(dir, 'locked');
    fs.mkdirSync(locked, { mode: 0o555 });
    const err = await backupCommand(t.database.url, path.join(locked, 'x.db'), () => {}).catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/is not writable by this user/);
  });

  it('the faultline program: exit code and message on standard error', async () => {
    ensureBuilt();
    const existing = path.join(dir, 'cli-existing.db');
    fs.writeFileSync(existing, '');
    const refused = await runCli(['backup', existing], { DATABASE_URL: t.database.url });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('already exists');
    const ok = await runCli(['backup', path.join(dir, 'cli.db')], { DATABASE_URL: t.database.url });
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/integrity ok/);
    expect(ok.stderr).toMatch(/backup/);
  }, 180_000);
});
