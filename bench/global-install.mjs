#!/usr/bin/env node
// Times what a user does to get `faultline` on the PATH: `npm pack` in the checkout,
// then `npm install -g` of the tarball into a temporary prefix with better-sqlite3
// compiled from source (against /usr's Node headers, as .ci/run does), then
// `faultline --version`. Prints wall times and the load average (the machine is
// shared: compare runs on a quiet machine). Usage: node bench/global-install.mjs
// [--prebuilt] (--prebuilt lets better-sqlite3 fetch its prebuilt binary instead).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const prebuilt = process.argv.includes('--prebuilt');
const temp = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-global-install-'));
const env = {
  ...process.env,
  npm_config_fund: 'false',
  npm_config_audit: 'false',
  npm_config_update_notifier: 'false',
};
if (prebuilt) delete env.npm_config_build_from_source;
else
  Object.assign(env, {
    npm_config_build_from_source: 'true',
    npm_config_nodedir: process.env.npm_config_nodedir ?? '/usr',
  });

function timed(label, cmd, args, cwd) {
  const started = performance.now();
  const out = execFileSync(cmd, args, { cwd, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const seconds = (performance.now() - started) / 1000;
  console.log(`${label}: ${seconds.toFixed(1)} s (load average ${os.loadavg()[0].toFixed(1)})`);
  return out;
}

try {
  console.log(
    `node ${process.version}, ${os.availableParallelism()} cores, load average ${os.loadavg()[0].toFixed(1)}`,
  );
  const packed = JSON.parse(
    timed('npm pack (build included)', 'npm', ['pack', '--json', '--pack-destination', temp], repo),
  );
  const tarball = path.join(temp, packed[0].filename);
  console.log(`tarball: ${(packed[0].size / 1024).toFixed(0)} KiB, ${packed[0].entryCount} files`);
  const prefix = path.join(temp, 'prefix');
  timed(
    `npm install -g (${prebuilt ? 'prebuilt better-sqlite3' : 'better-sqlite3 compiled'})`,
    'npm',
    ['install', '-g', '--prefix', prefix, '--allow-scripts=better-sqlite3', tarball],
    temp,
  );
  const version = timed('faultline --version', path.join(prefix, 'bin/faultline'), ['--version'], temp).trim();
  console.log(`installed faultline ${version}`);
} finally {
  fs.rmSync(temp, { recursive: true, force: true });
}
