#!/usr/bin/env node
// Peak memory of storing a large dSYM (#38 item 5): starts `faultline serve` (a built
// dist/, this tree's or --dist another's) on a fresh SQLite database and uploads one thin
// arm64 dSYM of about --mb MB with the real sentry-cli (`debug-files upload --wait`:
// chunk-upload, then difs/assemble, which stores the file and builds its index), then
// through the Symbols route (multipart), each on a fresh server. Prints the server's peak
// RSS (VmHWM) and its growth over the idle RSS before the upload, and the time it took.
//
// The dSYM: one C++ unit of bench/dsym-index.mjs compiled and linked for
// arm64-apple-macos11 (clang, ld64.lld-14, dsymutil), its __debug_info repeated until the
// file reaches the size asked (each copy a complete compile unit naming the same
// abbreviations, strings and line program), the other __DWARF sections (accelerator
// tables, location lists) once. Real DWARF the reader parses in full, at a size a
// compile of hundreds of units would take an hour to reach on a shared machine.
//
//   node bench/dsym-upload-memory.mjs [--mb 200] [--dist DIR] [--cache DIR] [--skip-route]
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { freePort, procStats, sleep, startProcess, waitForHealth } from './lib/proc.mjs';
import { COMMON_H, unitNamespace } from './lib/cpp-units.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values: args } = parseArgs({
  options: {
    mb: { type: 'string', default: '200' },
    dist: { type: 'string', default: path.join(root, 'dist') },
    cache: { type: 'string', default: path.join(os.tmpdir(), 'faultline-dsym-upload-bench') },
    'skip-route': { type: 'boolean', default: false },
  },
});
const KEY = 'bench-dsym-upload-key-0123456789abcdef';
const CLI = path.join(root, 'node_modules/@sentry/cli/bin/sentry-cli');

function unitSource(functions) {
  const out = unitNamespace(0, functions);
  out.push('int main(int argc, char**) { long s = argc;');
  for (let k = 0; k < functions; k += 8) out.push(`  s += mod0::fn${k}(s);`);
  out.push('  return (int)s; }');
  return out.join('\n');
}

/** The base dSYM (one unit), built once into the cache folder. */
function baseDsym(dir) {
  const dwarf = path.join(dir, 'Base.dSYM/Contents/Resources/DWARF/Base');
  if (fs.existsSync(dwarf)) return dwarf;
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'common.h'), COMMON_H);
  fs.writeFileSync(path.join(dir, 'cu0.cpp'), unitSource(600));
  const run = (cmd, a) => execFileSync(cmd, a, { cwd: dir, stdio: ['ignore', 'ignore', 'ignore'] });
  run('clang++', [
    '-target',
    'arm64-apple-macos11',
    '-g',
    '-O2',
    '-fno-exceptions',
    '-fno-rtti',
    '-c',
    'cu0.cpp',
    '-o',
    'cu0.o',
  ]);
  run('ld64.lld-14', [
    '-arch',
    'arm64',
    '-platform_version',
    'macos',
    '11.0',
    '11.0',
    '-e',
    '_main',
    '-undefined',
    'dynamic_lookup',
    'cu0.o',
    '-o',
    'Base',
  ]);
  run('dsymutil', ['Base', '-o', 'Base.dSYM']);
  return dwarf;
}

/** A thin dSYM of about `mb` MB: the base's __DWARF sections, __debug_info repeated. */
async function bigDsym(base, mb, out) {
  if (fs.existsSync(out) && fs.statSync(out).size >= mb * 1048576 * 0.95) return out;
  const { readMachO } = await import(path.join(args.dist, 'symbols/native/macho.js'));
  const bytes = new Uint8Array(fs.readFileSync(base));
  const [slice] = readMachO(bytes);
  const sections = {};
  for (const s of slice.sections)
    if (s.segment === '__DWARF' && s.fileOffset >= 0)
      sections[s.name] = bytes.subarray(s.fileOffset, s.fileOffset + s.size);
  const others = Object.values(sections).reduce((n, s) => n + s.length, 0) - sections.__debug_info.length;
  const copies = Math.max(1, Math.ceil((mb * 1048576 - others) / sections.__debug_info.length));
  const info = new Uint8Array(sections.__debug_info.length * copies);
  for (let i = 0; i < copies; i++) info.set(sections.__debug_info, i * sections.__debug_info.length);
  sections.__debug_info = info;
  // A thin MH_DSYM: LC_UUID and one __DWARF segment.
  const names = Object.keys(sections);
  const segSize = 72 + 80 * names.length;
  const cmdsSize = 24 + segSize;
  let offset = 32 + cmdsSize;
  const total = offset + names.reduce((n, k) => n + sections[k].length, 0);
  const file = new Uint8Array(total);
  const v = new DataView(file.buffer);
  const ascii = (at, text) => {
    for (let i = 0; i < text.length; i++) file[at + i] = text.charCodeAt(i);
  };
  v.setUint32(0, 0xfeedfacf, true);
  v.setUint32(4, 0x0100000c, true);
  v.setUint32(12, 0xa, true);
  v.setUint32(16, 2, true);
  v.setUint32(20, cmdsSize, true);
  v.setUint32(32, 0x1b, true);
  v.setUint32(36, 24, true);
  for (let i = 0; i < 16; i++) file[40 + i] = 0x30 + i;
  v.setUint32(56, 0x19, true);
  v.setUint32(60, segSize, true);
  ascii(64, '__DWARF');
  v.setUint32(56 + 64, names.length, true);
  names.forEach((name, i) => {
    const sect = 56 + 72 + 80 * i;
    ascii(sect, name.slice(0, 16));
    ascii(sect + 16, '__DWARF');
    v.setBigUint64(sect + 40, BigInt(sections[name].length), true);
    v.setUint32(sect + 48, offset, true);
    file.set(sections[name], offset);
    offset += sections[name].length;
  });
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, file);
  return out;
}

function cli(url, argv, cwd) {
  return new Promise((resolve, reject) => {
    const child = spawn(CLI, argv, {
      cwd,
      env: {
        PATH: process.env.PATH,
        HOME: os.tmpdir(),
        SENTRY_URL: url,
        SENTRY_AUTH_TOKEN: KEY,
        SENTRY_ORG: 'o',
        SENTRY_PROJECT: 'app',
        SENTRY_DISABLE_UPDATE_CHECK: '1',
        SENTRY_LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`sentry-cli exited ${code}: ${out}`))));
  });
}

/** Peak RSS (VmHWM) over the idle RSS before `work`, sampled from /proc. */
async function measure(pid, work) {
  await sleep(1500);
  const idle = procStats(pid).rss;
  fs.writeFileSync(`/proc/${pid}/clear_refs`, '5'); // resets VmHWM to the current RSS
  const started = Date.now();
  await work();
  const stats = procStats(pid);
  return {
    idle_rss_mb: Math.round(idle / 1048576),
    peak_rss_mb: Math.round(stats.hwm / 1048576),
    peak_growth_mb: Math.round((stats.hwm - idle) / 1048576),
    seconds: (Date.now() - started) / 1000,
  };
}

if (!fs.existsSync(path.join(args.dist, 'cli/main.js')))
  throw new Error(`no built server at ${args.dist}: run \`npx tsc -p tsconfig.build.json\``);
const base = baseDsym(args.cache);
const big = await bigDsym(
  base,
  Number(args.mb),
  path.join(args.cache, `Big${args.mb}.dSYM/Contents/Resources/DWARF/Big`),
);

/** One upload on a fresh server and database: its peak RSS and time. */
async function onFreshServer(upload) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-dsym-upload-'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const server = startProcess(
    process.execPath,
    ['--max-old-space-size=4096', path.join(args.dist, 'cli/main.js'), 'serve'],
    {
      env: {
        ...process.env,
        DATABASE_URL: `sqlite:${path.join(dir, 'db.sqlite')}`,
        PORT: String(port),
        HOST: '127.0.0.1',
        LOG_LEVEL: 'warn',
        RATE_LIMIT: '0',
        API_KEYS: KEY,
      },
      logFile: path.join(dir, 'server.log'),
    },
  );
  try {
    await waitForHealth(url, server);
    const created = await fetch(`${url}/api/projects`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ slug: 'app', platform: 'ios' }),
    });
    if (created.status !== 201) throw new Error(`project: ${created.status} ${await created.text()}`);
    const result = await measure(server.child.pid, () => upload(url));
    const listed = await (
      await fetch(`${url}/api/projects/app/symbols`, { headers: { authorization: `Bearer ${KEY}` } })
    ).json();
    result.stored = listed.symbols.map((s) => `${s.kind} ${Math.round(s.size / 1048576)} MB`);
    return result;
  } finally {
    server.child.kill('SIGTERM');
    await sleep(500);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const result = {
  machine: `${os.cpus().length} cores (shared: numbers are noisy)`,
  load: os.loadavg()[0].toFixed(1),
  node: process.version,
  dist: args.dist,
  dsym_mb: Math.round(fs.statSync(big).size / 1048576),
};
result.sentry_cli_upload = await onFreshServer((url) =>
  cli(url, ['debug-files', 'upload', '--wait', path.dirname(big)]),
);
if (!args['skip-route']) {
  result.symbols_route_upload = await onFreshServer(async (url) => {
    const form = new FormData();
    form.append('kind', 'dsym');
    form.append('release', 'bench');
    form.append('file', await fs.openAsBlob(big), 'Big');
    const res = await fetch(`${url}/api/projects/app/symbols`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}` },
      body: form,
    });
    if (res.status !== 201) throw new Error(`symbols route: ${res.status} ${await res.text()}`);
  });
}
console.log(JSON.stringify(result, null, 2));
