// `npm run worker` as a user runs it: a real process serving the edition on 127.0.0.1
// with settings from the environment and a local D1 under WORKER_DATA_DIR, stopping
// cleanly on SIGTERM (to it, or to `npm run worker`: no node or workerd left behind);
// what it stored is there when the edition starts again.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, startLocalWorker } from '../../../src/editions/workers/local.js';
import { childEnv, ensureBuilt } from '../../helpers/cli.js';

describe('npm run worker', () => {
  let dataDir: string;
  beforeAll(() => {
    ensureBuilt();
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-worker-local-'));
  });
  afterAll(() => {
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  // Two workerd starts and a wrangler bundle: over 30 s on a loaded 2-core machine.
  it('serves on 127.0.0.1 with the environment settings, stops on SIGTERM, keeps its D1', async () => {
    const child = spawn(process.execPath, [path.join(REPO_ROOT, 'dist/editions/workers/local.js')], {
      cwd: REPO_ROOT,
      env: childEnv({
        PORT: '0',
        API_KEYS: 'local-key',
        PUBLIC_URL: 'https://crash.example.org',
        LOG_LEVEL: 'info',
        WORKER_DATA_DIR: dataDir,
      }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    let stdout = '';
    child.stdout.on('data', (d) => (stdout += d));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const url = await new Promise<string>((resolve, reject) => {
      child.stderr.on('data', (d) => {
        stderr += d;
        const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(stderr);
        if (m) resolve(m[1]);
      });
      void exited.then((code) => reject(new Error(`exited with ${code} before listening:\n${stderr}`)));
    });
    try {
      const auth = { authorization: 'Bearer local-key' };
      expect((await fetch(url + '/api/projects')).status).toBe(401);
      const created = await fetch(url + '/api/projects', {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: '{"slug":"kept"}',
      });
      expect(created.status).toBe(201);
      expect((await created.json()).dsn).toMatch(/^https:\/\/[0-9a-f]{32}@crash\.example\.org\/1$/);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    // The Worker's JSON log lines reach the terminal.
    expect(stdout).toContain('"msg":"project created"');

    // The same D1, served again from the bundle that run built.
    const bundleDir = path.join(REPO_ROOT, 'dist/worker');
    const file = path.join(bundleDir, 'index.js');
    const again = await startLocalWorker({
      bundle: { dir: bundleDir, file, modules: [], bytes: 0, gzipBytes: 0 },
      dataDir,
      port: 0,
      settings: { API_KEYS: 'local-key', LOG_LEVEL: 'silent' },
    });
    try {
      const list = await fetch(again.url + '/api/projects', { headers: { authorization: 'Bearer local-key' } });
      expect((await list.json()).map((p: { slug: string }) => p.slug)).toEqual(['kept']);
    } finally {
      await again.close();
    }
    // Two bundles built by wrangler and two Miniflare starts: on a loaded machine, over 30 s.
  }, 120_000);

  it('SIGTERM to `npm run worker` ends its node process and workerd too', async () => {
    const npm = spawn('npm', ['run', 'worker'], {
      cwd: REPO_ROOT,
      env: childEnv({ PORT: '0', API_KEYS: 'local-key', LOG_LEVEL: 'silent', WORKER_DATA_DIR: dataDir }),
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    const exited = new Promise<void>((resolve) => npm.on('exit', () => resolve()));
    await new Promise<void>((resolve, reject) => {
      npm.stderr.on('data', (d) => {
        stderr += d;
        if (/listening on http:\/\/127\.0\.0\.1:\d+/.test(stderr)) resolve();
      });
      void exited.then(() => reject(new Error(`npm exited before listening:\n${stderr}`)));
    });
    /** Every process below `pid`. */
    const descendants = (pid: number): number[] => {
      let children: number[] = [];
      try {
        children = execFileSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' })
          .split('\n')
          .filter((l) => l.trim() !== '')
          .map(Number);
      } catch {
        // ps exits 1 when there are none
      }
      return children.flatMap((c) => [c, ...descendants(c)]);
    };
    const below = descendants(npm.pid!);
    const alive = (pid: number) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    const names = below.map((pid) => fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' '));
    expect(names.some((n) => n.includes('workers/local.js'))).toBe(true);
    expect(names.some((n) => n.includes('workerd'))).toBe(true);
    npm.kill('SIGTERM');
    await exited;
    const deadline = Date.now() + 15_000;
    while (below.some(alive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    const left = below.filter(alive);
    for (const pid of left) process.kill(pid, 'SIGKILL');
    expect(left).toEqual([]);
  }, 120_000);
});
