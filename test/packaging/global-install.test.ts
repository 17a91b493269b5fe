// The npm package as a user installs it: `npm pack`, then `npm install -g` of the
// tarball into a temporary prefix, and the `faultline` command from another folder
// (--version, migrate, serve) keeping its data under that folder.
//
// Compiling better-sqlite3 from source takes 1-2 minutes on an idle two-core machine
// and much longer on a busy one, and `npm ci` already compiles it for every run; so
// the install skips install scripts, takes packages from the npm cache when it has
// them, and gets the checkout's compiled addon (same Node, same better-sqlite3
// version). BENCHMARKS.md has the time of a full install that compiles.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO, childEnv, ensureBuilt } from '../helpers/cli.js';

const pkg = JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8'));
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
let temp: string;
let tarball: string;
let files: string[];
let bin: string;

function run(cmd: string, args: string[], cwd: string, env: Record<string, string | undefined> = {}): string {
  return execFileSync(cmd, args, { cwd, env: childEnv(env), encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

beforeAll(() => {
  ensureBuilt();
  temp = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-pack-'));
  // prepare (the build) already ran through ensureBuilt.
  const packed = JSON.parse(run(npm, ['pack', '--ignore-scripts', '--json', '--pack-destination', temp], REPO));
  tarball = path.join(temp, packed[0].filename);
  files = packed[0].files.map((f: { path: string }) => f.path);
  const prefix = path.join(temp, 'prefix');
  run(
    npm,
    ['install', '-g', '--prefix', prefix, '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund', tarball],
    temp,
  );
  const installed = path.join(prefix, 'lib/node_modules/faultline/node_modules/better-sqlite3');
  const local = path.join(REPO, 'node_modules/better-sqlite3');
  expect(JSON.parse(fs.readFileSync(path.join(installed, 'package.json'), 'utf8')).version).toBe(
    JSON.parse(fs.readFileSync(path.join(local, 'package.json'), 'utf8')).version,
  );
  fs.mkdirSync(path.join(installed, 'build/Release'), { recursive: true });
  fs.copyFileSync(
    path.join(local, 'build/Release/better_sqlite3.node'),
    path.join(installed, 'build/Release/better_sqlite3.node'),
  );
  bin = path.join(prefix, 'bin/faultline');
}, 300_000);

afterAll(() => {
  if (temp) fs.rmSync(temp, { recursive: true, force: true });
});

describe('npm package', () => {
  it('ships what runs: the compiled JavaScript, README and package.json; no sources, tests, maps or the Workers edition', () => {
    expect(files).toContain('dist/cli/main.js');
    expect(files).toContain('dist/editions/node/batch-thread-worker.js');
    expect(files).toContain('README.md');
    expect(files).toContain('package.json');
    const stray = files.filter(
      (f) => !f.startsWith('dist/') && f !== 'README.md' && f !== 'package.json' && !/^LICEN[CS]E/i.test(f),
    );
    expect(stray).toEqual([]);
    expect(
      files.filter((f) => f.endsWith('.map') || f.endsWith('.ts') || f.startsWith('dist/editions/workers/')),
    ).toEqual([]);
  });

  it('installed globally, `faultline` works from another folder with its data there', async () => {
    const folder = fs.mkdtempSync(path.join(temp, 'elsewhere-'));
    expect(run(bin, ['--version'], folder).trim()).toBe(pkg.version);

    const migrated = run(bin, ['migrate'], folder, { DATABASE_URL: undefined });
    expect(migrated).toContain(`sqlite:${fs.realpathSync(folder)}/data/faultline.db`);
    expect(fs.existsSync(path.join(folder, 'data/faultline.db'))).toBe(true);

    const child = spawn(bin, ['serve'], {
      cwd: folder,
      env: childEnv({ HOST: '127.0.0.1', PORT: '0', DATABASE_URL: undefined }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    let out = '';
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`serve did not start: ${out}`)), 30_000);
      child.stdout!.on('data', (d) => {
        out += d;
        const m = /"url":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(out);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]);
        }
      });
      child.on('close', (code) => reject(new Error(`serve exited with ${code}: ${out}`)));
    });
    try {
      expect((await fetch(`${url}/health`)).status).toBe(200);
      expect(out).toContain(`"database":"sqlite:${fs.realpathSync(folder)}/data/faultline.db"`);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  });
});
