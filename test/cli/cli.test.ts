// The `faultline` CLI as real processes: help and version, migrate, serve on each
// database (startup line, default SQLite file, graceful shutdown with a request
// in flight, refusals with a clear message), npm start, and two instances
// starting at once on one fresh PostgreSQL database.
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import Database from 'better-sqlite3';
import { beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, dialects } from '../helpers/server.js';
import { REPO, ensureBuilt, runCli, startServe, waitForLine } from '../helpers/cli.js';

const pkg = JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8'));

beforeAll(() => {
  ensureBuilt();
});

function tempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-cli-'));
}

async function migrationNames(url: string): Promise<string[]> {
  if (url.startsWith('sqlite:')) {
    const db = new Database(url.slice('sqlite:'.length), { readonly: true });
    try {
      return (db.prepare('select name from kysely_migration order by name').all() as { name: string }[]).map(
        (r) => r.name,
      );
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query('select name from kysely_migration order by name')).rows.map((r) => r.name);
  } finally {
    await client.end();
  }
}

/** Whether the database holds faultline's schema (any migration applied). */
async function isMigrated(url: string): Promise<boolean> {
  if (url.startsWith('sqlite:')) {
    const file = url.slice('sqlite:'.length);
    if (!fs.existsSync(file)) return false;
    const db = new Database(file);
    try {
      return db.prepare("select name from sqlite_master where name = 'kysely_migration'").get() !== undefined;
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query("select to_regclass('kysely_migration') as t")).rows[0].t !== null;
  } finally {
    await client.end();
  }
}

async function addFutureMigration(url: string): Promise<void> {
  if (url.startsWith('sqlite:')) {
    const db = new Database(url.slice('sqlite:'.length));
    db.prepare(
      "insert into kysely_migration (name, timestamp) values ('999_from_the_future', '2030-01-01T00:00:00.000Z')",
    ).run();
    db.close();
    return;
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(
    "insert into kysely_migration (name, timestamp) values ('999_from_the_future', '2030-01-01T00:00:00.000Z')",
  );
  await client.end();
}

describe('faultline --help and --version', () => {
  it('--help lists the commands', async () => {
    const res = await runCli(['--help']);
    expect(res.code).toBe(0);
    expect(res.stdout).toContain('Usage: faultline');
    expect(res.stdout).toMatch(/\n\s+serve\s/);
    expect(res.stdout).toMatch(/\n\s+migrate\s/);
  });

  it('--version prints the package version', async () => {
    const res = await runCli(['--version']);
    expect(res.code).toBe(0);
    expect(res.stdout.trim()).toBe(pkg.version);
  });

  it('an unknown command or option fails with exit code 1 and one faultline: line pointing at --help', async () => {
    for (const [args, message] of [
      [['frobnicate'], "faultline: unknown command 'frobnicate'"],
      [['serve', '--frobnicate'], "faultline: unknown option '--frobnicate'"],
    ] as [string[], string][]) {
      const res = await runCli(args);
      expect(res.code, args.join(' ')).toBe(1);
      expect(
        res.stderr.split('\n').filter((l) => l !== ''),
        args.join(' '),
      ).toEqual([message, '(add --help to see the commands and options)']);
    }
  });

  it('a bad setting stops serve with a message naming it', async () => {
    const res = await runCli(['serve'], { PORT: 'eighty', DATABASE_URL: `sqlite:${path.join(tempDir(), 'x.db')}` });
    expect(res.code).toBe(1);
    expect(res.stderr).toBe('faultline: PORT must be an integer between 0 and 65535 (got "eighty")\n');
  });

  it('an unusable DATABASE_URL stops serve and migrate with a clear message', async () => {
    for (const command of ['serve', 'migrate']) {
      const scheme = await runCli([command], { DATABASE_URL: 'mysql://root@localhost/db' });
      expect(scheme.code, command).toBe(1);
      expect(scheme.stderr).toContain('faultline: DATABASE_URL: unsupported value "mysql://root@localhost/db"');
      const closed = await runCli([command], { DATABASE_URL: 'postgres://postgres:hunter2@127.0.0.1:1/faultline' });
      expect(closed.code, command).toBe(1);
      expect(closed.stderr).toContain(
        'faultline: DATABASE_URL: cannot connect to PostgreSQL postgres://postgres:***@127.0.0.1:1/faultline',
      );
      expect(closed.stderr).not.toContain('hunter2');
      const dir = tempDir();
      fs.writeFileSync(path.join(dir, 'not-a-dir'), '');
      const sqlite = await runCli([command], { DATABASE_URL: `sqlite:${path.join(dir, 'not-a-dir', 'x.db')}` });
      expect(sqlite.code, command).toBe(1);
      expect(sqlite.stderr).toMatch(/^faultline: /);
      // A folder the kernel will not create fails at once (recursive mkdir looped for ever there).
      const started = Date.now();
      const proc = await runCli([command], { DATABASE_URL: 'sqlite:/proc/faultline-test/f.db' });
      expect(proc.code, command).toBe(1);
      expect(proc.stderr).toContain(
        'faultline: DATABASE_URL: cannot create the folder /proc/faultline-test for SQLite database /proc/faultline-test/f.db',
      );
      expect(Date.now() - started).toBeLessThan(10_000);
    }
    // Six starts of the CLI: on a loaded machine that takes longer than the default 30 s.
  }, 120_000);
});

describe('npm start with DATABASE_URL unset', () => {
  it('creates ./data/faultline.db in the working directory and answers /health', async () => {
    // A copy of the package's face (package.json) with the built code linked in, so
    // `npm start` runs exactly its script, in a directory of its own.
    const dir = tempDir();
    fs.copyFileSync(path.join(REPO, 'package.json'), path.join(dir, 'package.json'));
    fs.symlinkSync(path.join(REPO, 'dist'), path.join(dir, 'dist'));
    fs.symlinkSync(path.join(REPO, 'node_modules'), path.join(dir, 'node_modules'));
    const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
    const serve = await startServe({
      cwd: dir,
      command: [npm, ['start', '--silent']],
      env: { DATABASE_URL: undefined },
    });
    try {
      const res = await fetch(serve.url + '/health');
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ status: 'ok' });
      const file = path.join(fs.realpathSync(dir), 'data', 'faultline.db');
      expect(fs.existsSync(file)).toBe(true);
      const listening = serve.lines.find((l) => String(l.msg).includes('listening on'))!;
      expect(listening.database).toBe(`sqlite:${file}`);
      // The start script's heap limit: below 2 GB V8 collects at 1.3-2x the live heap, not 4x.
      expect(listening.heap_limit_mb).toBeGreaterThan(1000);
      expect(listening.heap_limit_mb).toBeLessThan(2048);
      // Two V8 helper threads, not four (README, Node options).
      expect(listening.node_options).toContain('--v8-pool-size=2');
      // Big request buffers go back to the system when freed (README, Node options).
      expect(listening.malloc_mmap_threshold).toBe('131072');
      const journal = new Database(file, { readonly: true });
      expect(journal.pragma('journal_mode', { simple: true })).toBe('wal');
      journal.close();

      // SIGTERM to npm alone, as a service manager or `kill <pid>` sends it: npm passes it
      // on, and the server itself must get it (not a shell between them) and stop cleanly.
      serve.child.kill('SIGTERM');
      const ended = await Promise.race([
        serve.exited.then(() => true),
        new Promise<boolean>((r) => setTimeout(() => r(false), 10_000)),
      ]);
      expect(ended, 'the server outlived npm').toBe(true);
      expect(serve.lines.some((l) => l.msg === 'stopped')).toBe(true);
    } finally {
      try {
        serve.signal('SIGKILL');
      } catch {
        // Every process of the group has ended.
      }
      await serve.exited;
    }
  });
});

describe.each(dialects)('faultline CLI on %s', (dialect) => {
  it('migrate brings a new database to the current schema, then reports it up to date', async () => {
    const db = await createTestDatabase(dialect);
    try {
      const first = await runCli(['migrate'], { DATABASE_URL: db.url });
      expect(first.code, first.stderr).toBe(0);
      expect(first.stdout).toContain('applied 001_initial');
      const names = await migrationNames(db.url);
      expect(names[0]).toBe('001_initial');
      const second = await runCli(['migrate'], { DATABASE_URL: db.url });
      expect(second.code).toBe(0);
      expect(second.stdout).toContain(`is up to date (schema version ${names[names.length - 1]})`);
      expect(await migrationNames(db.url)).toEqual(names);
    } finally {
      await db.drop();
    }
  });

  it('serve logs where it listens and which database (no password), serves, and stops on SIGTERM', async () => {
    const db = await createTestDatabase(dialect);
    let url = db.url;
    if (dialect === 'postgres') {
      const u = new URL(db.url);
      u.password = 'hunter2'; // trust auth ignores it; the log must not show it
      url = u.toString();
    }
    const serve = await startServe({ env: { DATABASE_URL: url, API_KEYS: 'cli-key' } });
    try {
      const listening = serve.lines.filter((l) => String(l.msg).includes('listening on'));
      expect(listening).toHaveLength(1);
      expect(listening[0].url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(listening[0].msg).toContain(listening[0].url);
      expect(listening[0].database).toMatch(
        dialect === 'sqlite' ? /^sqlite:\// : /^postgres:\/\/postgres:\*\*\*@127\.0\.0\.1/,
      );
      expect(JSON.stringify(serve.lines)).not.toContain('hunter2');

      expect((await fetch(serve.url + '/health')).status).toBe(200);
      const created = await fetch(serve.url + '/api/projects', {
        method: 'POST',
        headers: { authorization: 'Bearer cli-key' },
        body: JSON.stringify({ slug: 'from-cli' }),
      });
      expect(created.status).toBe(201);
      const line = await waitForLine(serve, (l) => l.method === 'POST' && l.path === '/api/projects');
      expect(line).toMatchObject({ status: 201, request_id: created.headers.get('x-request-id') });
      expect(typeof line.duration_ms).toBe('number');
    } finally {
      serve.signal('SIGTERM');
    }
    expect(await serve.exited).toBe(0);
    expect(serve.lines.some((l) => l.msg === 'stopped')).toBe(true);
    if (dialect === 'sqlite') {
      // A cleanly closed SQLite database has checkpointed and removed its WAL file.
      const file = db.url.slice('sqlite:'.length);
      expect(fs.existsSync(`${file}-wal`)).toBe(false);
    }
    await db.drop();
  });

  it('finishes a request in flight on SIGINT, refuses new connections, then exits 0', async () => {
    const db = await createTestDatabase(dialect);
    const serve = await startServe({ env: { DATABASE_URL: db.url } });
    const { port } = new URL(serve.url);
    try {
      // A request whose body is still arriving when the signal comes.
      const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = http.request(
          { host: '127.0.0.1', port, method: 'POST', path: '/api/projects', agent: false },
          (res) => {
            let body = '';
            res.on('data', (d) => (body += d));
            res.on('end', () => resolve({ status: res.statusCode!, body }));
          },
        );
        req.on('error', reject);
        req.write('{"slug": "in-fl');
        // A failed check here rejects the response, so the test fails at its await.
        const midway = async () => {
          serve.signal('SIGINT');
          // Wait until the server has stopped accepting, then complete the request.
          await waitForLine(serve, (l) => String(l.msg).startsWith('stopping'));
          const refused = await new Promise<boolean>((r) => {
            const s = net.connect(Number(port), '127.0.0.1');
            s.on('connect', () => (s.destroy(), r(false)));
            s.on('error', () => r(true));
          });
          expect(refused).toBe(true);
          req.end('ight"}');
        };
        setTimeout(() => void midway().catch(reject), 300);
      });
      const res = await response;
      expect(res.status).toBe(201);
      expect(JSON.parse(res.body).slug).toBe('in-flight');
    } finally {
      // Only a server that did not stop on its own gets another signal: a second signal
      // during shutdown exits 1 at once, so sending it right away raced the shutdown.
      const stopped = await Promise.race([
        serve.exited.then(() => true),
        new Promise<false>((r) => setTimeout(() => r(false), 10_000)),
      ]);
      if (!stopped) serve.signal('SIGTERM');
    }
    expect(await serve.exited).toBe(0);
    await db.drop();
  });

  it('a second stop signal while a request keeps shutdown waiting exits at once with 1', async () => {
    const db = await createTestDatabase(dialect);
    const serve = await startServe({ env: { DATABASE_URL: db.url } });
    const { port } = new URL(serve.url);
    // A request whose body never completes: shutdown waits for it (up to 30 s).
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/api/projects', agent: false });
    req.on('error', () => {});
    req.write('{"slug": "never-fin');
    try {
      await new Promise((r) => setTimeout(r, 200));
      serve.signal('SIGTERM');
      await waitForLine(serve, (l) => String(l.msg).startsWith('stopping'));
      await new Promise((r) => setTimeout(r, 200));
      expect(serve.child.exitCode).toBeNull(); // still waiting for the request
      const sent = Date.now();
      serve.signal('SIGINT');
      expect(await serve.exited).toBe(1);
      expect(Date.now() - sent).toBeLessThan(5_000);
      expect(serve.lines.some((l) => String(l.msg).includes('second stop signal'))).toBe(true);
      expect(serve.lines.some((l) => l.msg === 'stopped')).toBe(false);
    } finally {
      req.destroy();
      if (serve.child.exitCode === null) serve.child.kill('SIGKILL');
      await db.drop();
    }
  });

  it('refuses to start when the port is taken', async () => {
    const db = await createTestDatabase(dialect);
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as net.AddressInfo).port;
    try {
      const res = await runCli(['serve'], {
        DATABASE_URL: db.url,
        PORT: String(port),
        HOST: '127.0.0.1',
        LOG_LEVEL: 'silent',
      });
      expect(res.code).toBe(1);
      expect(res.stderr).toBe(
        `faultline: cannot listen on 127.0.0.1:${port}: the port is already in use (stop the other process or set PORT)\n`,
      );
      // Found before the database is touched: nothing migrated.
      expect(await isMigrated(db.url)).toBe(false);
    } finally {
      blocker.close();
      await db.drop();
    }
  });

  it('names HOST, not the database, when HOST is not an address of this machine, and migrates nothing', async () => {
    const db = await createTestDatabase(dialect);
    try {
      const res = await runCli(['serve'], { DATABASE_URL: db.url, PORT: '0', HOST: '999.1.1.1', LOG_LEVEL: 'silent' });
      expect(res.code).toBe(1);
      expect(res.stderr).toBe(
        'faultline: cannot listen on 999.1.1.1:0: HOST "999.1.1.1" is not an address or host name of this machine (check HOST)\n',
      );
      expect(await isMigrated(db.url)).toBe(false);
    } finally {
      await db.drop();
    }
  });

  it('refuses a database whose schema is newer than this build', async () => {
    const db = await createTestDatabase(dialect);
    try {
      expect((await runCli(['migrate'], { DATABASE_URL: db.url })).code).toBe(0);
      await addFutureMigration(db.url);
      for (const command of ['serve', 'migrate']) {
        const res = await runCli([command], { DATABASE_URL: db.url, LOG_LEVEL: 'silent' });
        expect(res.code, command).toBe(1);
        expect(res.stderr).toContain('faultline: the database schema is newer than this version of faultline');
        expect(res.stderr).toContain('999_from_the_future');
      }
    } finally {
      await db.drop();
    }
  });
});

describe.skipIf(!dialects.includes('postgres'))('two serve instances on one fresh PostgreSQL database', () => {
  it('both come up and the schema is migrated once', async () => {
    const db = await createTestDatabase('postgres');
    const started = await Promise.allSettled([
      startServe({ env: { DATABASE_URL: db.url } }),
      startServe({ env: { DATABASE_URL: db.url } }),
    ]);
    const servers = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    try {
      for (const s of started) if (s.status === 'rejected') throw s.reason;
      expect(servers).toHaveLength(2);
      expect(servers[0].url).not.toBe(servers[1].url);
      for (const s of servers) expect((await fetch(s.url + '/health')).status).toBe(200);
      // Exactly one instance applied the migrations; the other found nothing to do.
      const migrated = servers.filter((s) => s.lines.some((l) => l.msg === 'database schema migrated'));
      expect(migrated).toHaveLength(1);
      const names = await migrationNames(db.url);
      expect(names[0]).toBe('001_initial');
      expect(new Set(names).size).toBe(names.length);
      expect(migrated[0].lines.find((l) => l.msg === 'database schema migrated')!.applied).toEqual(names);
      // Both serve the same data.
      const created = await fetch(servers[0].url + '/api/projects', {
        method: 'POST',
        body: JSON.stringify({ slug: 'shared' }),
      });
      expect(created.status).toBe(201);
      expect((await fetch(servers[1].url + '/api/projects/shared')).status).toBe(200);
    } finally {
      for (const s of servers) s.signal('SIGTERM');
      for (const s of servers) expect(await s.exited).toBe(0);
      await db.drop();
    }
  });
});
