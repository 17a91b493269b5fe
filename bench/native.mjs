#!/usr/bin/env node
// Native benchmark (issue #44): generates a C++ shared object of many compile units whose
// ELF debug info is at least 50 MB (clang for x86_64-linux-gnu, ld.lld), then, in a fresh
// child process, times building its lookup index at upload (inspectElf: headers, DWARF,
// symbol tables, serialisation) with its peak RSS growth, and per-frame lookup latency
// (p50/p95/p99); and times processing the committed Breakpad-client minidump
// (test/fixtures/breakpad: read, walk both threads with its .sym's CFI cached, build the
// event). Uses the built code in dist/ (run `npm run build`). Never asserts on speed;
// prints JSON. The generated build is kept in the cache folder (default:
// $TMPDIR/faultline-elf-bench) so reruns skip compiling.
//
//   node bench/native.mjs [--units 70] [--functions 600] [--cache DIR] [--lookups 200000] [--dumps 2000]
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { COMMON_H, runPool, unitNamespace } from './lib/cpp-units.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');
const { values: args } = parseArgs({
  options: {
    units: { type: 'string', default: '70' },
    functions: { type: 'string', default: '600' },
    cache: { type: 'string', default: path.join(os.tmpdir(), 'faultline-elf-bench') },
    lookups: { type: 'string', default: '200000' },
    dumps: { type: 'string', default: '2000' },
    measure: { type: 'string' },
  },
});

function unitSource(unit, functions) {
  const out = unitNamespace(unit, functions);
  out.push(`long entry${unit}(long v) { long s = 0;`);
  for (let k = 0; k < functions; k += 8) out.push(`  s += mod${unit}::fn${k}(v + s);`);
  out.push('  return s; }');
  return out.join('\n');
}

async function buildElf(dir, units, functions) {
  const out = path.join(dir, 'libbig.so');
  if (fs.existsSync(out)) return out;
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'common.h'), COMMON_H);
  const objects = [];
  const jobs = [];
  for (let u = 0; u < units; u++) {
    const src = path.join(dir, `cu${u}.cpp`);
    fs.writeFileSync(src, unitSource(u, functions));
    objects.push(path.join(dir, `cu${u}.o`));
    jobs.push(['clang++', '--target=x86_64-linux-gnu', '-g', '-O2', '-fPIC', '-fno-exceptions', '-fno-rtti', '-c', src, '-o', objects.at(-1)]);
  }
  const started = Date.now();
  process.stderr.write(`compiling ${jobs.length} units (2 at a time)...\n`);
  await runPool(jobs, 2);
  execFileSync('clang++', ['--target=x86_64-linux-gnu', '-fuse-ld=lld', '-shared', '-nostdlib', '-Wl,--build-id=sha1', ...objects, '-o', out]);
  process.stderr.write(`built in ${Math.round((Date.now() - started) / 1000)} s\n`);
  return out;
}

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
const us = (n) => Math.round(n * 100) / 100;
const mb = (n) => Math.round((n / 1048576) * 10) / 10;

async function measure(file, lookups, dumps) {
  const { inspectElf } = await import(path.join(root, 'dist/symbols/elf.js'));
  const { NativeIndex } = await import(path.join(root, 'dist/symbols/native/lookup-index.js'));
  const { readElf } = await import(path.join(root, 'dist/symbols/native/elf.js'));
  const { breakpadIndex } = await import(path.join(root, 'dist/symbols/breakpad.js'));
  const { breakpadUnwindInfo, processMinidump, readBreakpadUnwind } = await import(path.join(root, 'dist/minidump/process.js'));
  const bytes = new Uint8Array(fs.readFileSync(file));
  globalThis.gc?.();
  const rssBefore = process.memoryUsage().rss;
  const t0 = performance.now();
  const [inspected] = await inspectElf('libbig.so', bytes);
  const buildMs = performance.now() - t0;
  const peakRss = process.resourceUsage().maxRSS * 1024;
  const index = new NativeIndex(inspected.index);
  const elf = await readElf(bytes);
  const text = elf.sections.find((s) => s.name === '.text');
  const debugBytes = elf.sections.filter((s) => s.name.startsWith('.debug_')).reduce((n, s) => n + s.size, 0);
  let seed = 42;
  const random = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
  const addrs = Array.from({ length: lookups }, () => text.addr + Math.floor(random() * text.size));
  for (let i = 0; i < 20000; i++) index.lookup(addrs[i % addrs.length]);
  const times = new Float64Array(lookups);
  for (let i = 0; i < lookups; i++) {
    const a = process.hrtime.bigint();
    index.lookup(addrs[i]);
    times[i] = Number(process.hrtime.bigint() - a) / 1000;
  }
  times.sort();

  const fixtures = path.join(root, 'test/fixtures/breakpad');
  const dump = new Uint8Array(fs.readFileSync(path.join(fixtures, 'crash.dmp')));
  const sym = readBreakpadUnwind(new Uint8Array(fs.readFileSync(path.join(fixtures, 'crasher.sym'))));
  const info = breakpadUnwindInfo(sym, new NativeIndex(breakpadIndex(sym)));
  for (let i = 0; i < 200; i++) processMinidump(dump, () => info);
  const dumpTimes = new Float64Array(dumps);
  for (let i = 0; i < dumps; i++) {
    const a = performance.now();
    processMinidump(dump, (m) => (m.debugId === sym.module.debugId ? info : null));
    dumpTimes[i] = performance.now() - a;
  }
  dumpTimes.sort();
  return {
    elf_mb: mb(bytes.length),
    debug_sections_mb: mb(debugBytes),
    index_build_s: Math.round(buildMs) / 1000,
    peak_rss_growth_mb: mb(peakRss - rssBefore),
    index_mb: mb(inspected.index.byteLength),
    lookup_us: { p50: us(percentile(times, 50)), p95: us(percentile(times, 95)), p99: us(percentile(times, 99)) },
    minidump: { bytes: dump.byteLength, runs: dumps, ms: { p50: us(percentile(dumpTimes, 50)), p95: us(percentile(dumpTimes, 95)), p99: us(percentile(dumpTimes, 99)) } },
  };
}

if (args.measure) {
  console.log(JSON.stringify(await measure(args.measure, Number(args.lookups), Number(args.dumps))));
} else {
  const file = await buildElf(args.cache, Number(args.units), Number(args.functions));
  const out = execFileSync(process.execPath, ['--expose-gc', fileURLToPath(import.meta.url), '--measure', file, '--lookups', args.lookups, '--dumps', args.dumps], { maxBuffer: 1 << 24 }).toString();
  console.log(JSON.stringify(JSON.parse(out), null, 1));
}
