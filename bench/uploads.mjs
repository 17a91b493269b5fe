#!/usr/bin/env node
// Upload benchmark (`node bench/uploads.mjs [--size-mb 500] [--db sqlite|postgres]`): starts
// the real server as its own process on a fresh database, has the real sentry-cli 3.x
// upload one large debug file (a generated ProGuard mapping, the kind that needs no
// platform toolchain) through chunk-upload + assemble, waits until the file is stored,
// and prints the wall time and the server's peak RSS growth over its idle RSS. The
// goal is that memory stays flat (≤ 100 MB growth for 500 MB): chunks go to the
// database as they arrive and the file is assembled from them one chunk at a time.
// Never asserts on speed; the machine is shared, numbers are noisy.
import { createHash } from 'node:crypto';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createBenchDatabase } from './lib/db.mjs';
import { freePort, sampler, sleep, startProcess, waitForHealth } from './lib/proc.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');
const { values: opts } = parseArgs({
  options: {
    'size-mb': { type: 'string', default: '500' },
    db: { type: 'string', default: 'sqlite' },
    'skip-build': { type: 'boolean', default: false },
  },
});
const sizeBytes = Number(opts['size-mb']) * 1024 * 1024;
const KEY = 'bench-upload-key-0123456789abcdef';
const CLI = path.join(root, 'node_modules/@sentry/cli/bin/sentry-cli');

/** Writes a valid ProGuard mapping of about `bytes` bytes, streamed to disk. */
async function writeMapping(file, bytes) {
  const out = fs.createWriteStream(file);
  let written = 0;
  let n = 0;
  while (written < bytes) {
    let block = '';
    for (let i = 0; i < 2000; i++, n++) {
      block += `com.example.feature${n % 97}.Class${n} -> a.b${n.toString(36)}:\n`;
      block += `    ${(n % 900) + 1}:${(n % 900) + 4}:void handle${n}(int,java.lang.String):${(n % 700) + 10}:${(n % 700) + 13} -> a\n`;
      block += `    java.lang.String field${n} -> b\n`;
    }
    written += Buffer.byteLength(block);
    if (!out.write(block)) await new Promise((r) => out.once('drain', r));
  }
  await new Promise((r) => out.end(r));
  return written;
}

function uuid5OfFile(file) {
  const ns = Buffer.from('4f44f30f24be53d0bab6f47c7120ad6c', 'hex');
  const h = createHash('sha1').update(ns);
  const fd = fs.openSync(file, 'r');
  const buf = Buffer.alloc(8 * 1024 * 1024);
  let n;
  while ((n = fs.readSync(fd, buf)) > 0) h.update(buf.subarray(0, n));
  fs.closeSync(fd);
  const d = h.digest();
  d[6] = (d[6] & 0x0f) | 0x50;
  d[8] = (d[8] & 0x3f) | 0x80;
  const x = d.subarray(0, 16).toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

function runCli(args, env) {
  return new Promise((resolve) => {
    const child = spawn(CLI, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('close', (code) => resolve({ code, out }));
  });
}

const mb = (b) => Math.round((b / 1024 / 1024) * 10) / 10;

async function main() {
  if (!opts['skip-build']) spawnSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit' });
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-bench-upload-'));
  const db = await createBenchDatabase(opts.db);
  let server;
  try {
    const file = path.join(work, 'mapping.txt');
    process.stderr.write(`writing a ${opts['size-mb']} MB ProGuard mapping…\n`);
    const size = await writeMapping(file, sizeBytes);
    const uuid = uuid5OfFile(file);

    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    server = startProcess(
      process.execPath,
      ['--max-old-space-size=1536', path.join(root, 'dist/cli/main.js'), 'serve'],
      {
        cwd: root,
        env: {
          ...process.env,
          DATABASE_URL: db.url,
          PORT: String(port),
          HOST: '127.0.0.1',
          API_KEYS: KEY,
          LOG_LEVEL: 'warn',
          RATE_LIMIT: '0',
        },
        logFile: path.join(work, 'server.log'),
      },
    );
    await waitForHealth(url, server);
    const created = await fetch(`${url}/api/projects`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ slug: 'bench', platform: 'android' }),
    });
    if (!created.ok) throw new Error(`creating the project failed: ${created.status}`);
    await sleep(1000);
    const mem = sampler(server.pid, 50);
    const idle = mem.now().rss;
    mem.mark();

    process.stderr.write(`uploading ${mb(size)} MB with sentry-cli 3.x (proguard upload)…\n`);
    const started = performance.now();
    const env = {
      PATH: process.env.PATH,
      HOME: os.tmpdir(),
      SENTRY_URL: url,
      SENTRY_AUTH_TOKEN: KEY,
      SENTRY_ORG: 'bench',
      SENTRY_PROJECT: 'bench',
      SENTRY_DISABLE_UPDATE_CHECK: '1',
    };
    const cli = await runCli(['proguard', 'upload', file], env);
    const cliDone = performance.now();
    if (cli.code !== 0) throw new Error(`sentry-cli failed:\n${cli.out}`);
    // Large files may still be assembling when the CLI returns ("processing pending"): wait until stored.
    for (;;) {
      const r = await fetch(`${url}/api/0/projects/bench/bench/files/dsyms/?debug_id=${uuid}`, {
        headers: { authorization: `Bearer ${KEY}` },
      });
      const list = await r.json();
      if (Array.isArray(list) && list.length > 0) {
        if (list[0].size !== size) throw new Error(`stored ${list[0].size} bytes, expected ${size}`);
        break;
      }
      if (performance.now() - started > 30 * 60_000) throw new Error('the upload was not stored within 30 minutes');
      await sleep(200);
    }
    const stored = performance.now();
    const peak = mem.mark();
    const hwm = mem.now().hwm;
    mem.stop();
    const result = {
      database: opts.db,
      file_mb: mb(size),
      cli_seconds: Math.round((cliDone - started) / 100) / 10,
      until_stored_seconds: Math.round((stored - started) / 100) / 10,
      server_idle_rss_mb: mb(idle),
      server_peak_rss_mb: mb(Math.max(peak, hwm ?? 0)),
      server_peak_rss_growth_mb: mb(Math.max(peak, hwm ?? 0) - idle),
      throughput_mb_s: Math.round((mb(size) / ((stored - started) / 1000)) * 10) / 10,
    };
    console.log(JSON.stringify(result, null, 2));
  } finally {
    await server?.stop();
    await db.drop();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
