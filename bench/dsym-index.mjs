#!/usr/bin/env node
// dSYM index benchmark (issue #29): generates a C++ program of many compile units whose
// dSYM holds at least 50 MB of DWARF (clang for arm64-apple-macos11, ld64.lld-14,
// dsymutil), then, in a fresh child process per measurement, times building the lookup
// index at upload (inspectMachO: slices, DWARF, symbol table, serialisation), its peak RSS
// growth over the process with the file already read, the index size relative to the
// dSYM, and per-frame lookup latency (p50/p95/p99 of single lookups at random __text
// addresses, and with demangling). Uses the built code in dist/ (run `npm run build`).
// Never asserts on speed; prints JSON. The generated build is kept in the cache folder
// (default: $TMPDIR/faultline-dsym-bench) so reruns skip compiling.
//
//   node bench/dsym-index.mjs [--units 70] [--functions 600] [--cache DIR] [--lookups 200000]
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
    cache: { type: 'string', default: path.join(os.tmpdir(), 'faultline-dsym-bench') },
    lookups: { type: 'string', default: '200000' },
    measure: { type: 'string' },
  },
});

/** One compile unit: many functions, each with its own record type and inlined templates. */
function unitSource(unit, functions) {
  const out = unitNamespace(unit, functions);
  out.push(`long entry${unit}(long v) { long s = 0;`);
  for (let k = 0; k < functions; k += 8) out.push(`  s += mod${unit}::fn${k}(v + s);`);
  out.push('  return s; }');
  return out.join('\n');
}

async function buildDsym(dir, units, functions) {
  const dwarf = path.join(dir, 'Big.dSYM/Contents/Resources/DWARF/Big');
  if (fs.existsSync(dwarf)) return dwarf;
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'common.h'), COMMON_H);
  const objects = [];
  const jobs = [];
  for (let u = 0; u < units; u++) {
    const src = path.join(dir, `cu${u}.cpp`);
    fs.writeFileSync(src, unitSource(u, functions));
    const obj = path.join(dir, `cu${u}.o`);
    objects.push(obj);
    jobs.push([
      'clang++',
      '-target',
      'arm64-apple-macos11',
      '-g',
      '-O2',
      '-fno-exceptions',
      '-fno-rtti',
      '-c',
      src,
      '-o',
      obj,
    ]);
  }
  const main = path.join(dir, 'main.cpp');
  const decls = Array.from({ length: units }, (_, u) => `long entry${u}(long);`).join('\n');
  fs.writeFileSync(
    main,
    `${decls}\nint main(int argc, char**) { long s = argc;\n${Array.from({ length: units }, (_, u) => `  s += entry${u}(s);`).join('\n')}\n  return (int)s; }\n`,
  );
  objects.push(path.join(dir, 'main.o'));
  jobs.push(['clang++', '-target', 'arm64-apple-macos11', '-g', '-O2', '-c', main, '-o', path.join(dir, 'main.o')]);
  const started = Date.now();
  process.stderr.write(`compiling ${jobs.length} units (2 at a time)...\n`);
  await runPool(jobs, 2);
  const exe = path.join(dir, 'Big');
  execFileSync('ld64.lld-14', [
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
    ...objects,
    '-o',
    exe,
  ]);
  execFileSync('dsymutil', [exe, '-o', path.join(dir, 'Big.dSYM')], { stdio: ['ignore', 'ignore', 'ignore'] });
  process.stderr.write(`built in ${Math.round((Date.now() - started) / 1000)} s\n`);
  return dwarf;
}

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

/** Runs in a child process: one measurement on a clean heap. */
async function measure(file, lookups) {
  const { inspectMachO } = await import(path.join(root, 'dist/symbols/dsym.js'));
  const { NativeIndex } = await import(path.join(root, 'dist/symbols/native/lookup-index.js'));
  const { readMachO } = await import(path.join(root, 'dist/symbols/native/macho.js'));
  const { loadNodeDemangler } = await import(path.join(root, 'dist/editions/node/demangle.js'));
  const bytes = new Uint8Array(fs.readFileSync(file));
  const demangle = await loadNodeDemangler();
  globalThis.gc?.();
  const rssBefore = process.memoryUsage().rss;
  const maxBefore = process.resourceUsage().maxRSS * 1024;
  const t0 = performance.now();
  const [inspected] = await inspectMachO('Big', bytes);
  const buildMs = performance.now() - t0;
  const peakRss = process.resourceUsage().maxRSS * 1024;
  const index = new NativeIndex(inspected.index);
  const [slice] = readMachO(bytes);
  const text = slice.sections.find((s) => s.name === '__text');
  const dwarfBytes = slice.sections.filter((s) => s.segment === '__DWARF').reduce((n, s) => n + s.size, 0);
  let seed = 42;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const addrs = Array.from({ length: lookups }, () => text.addr + Math.floor(random() * text.size));
  for (let i = 0; i < 20000; i++) index.lookup(addrs[i % addrs.length]); // warm-up
  const times = new Float64Array(lookups);
  const timesDemangled = new Float64Array(lookups);
  let frames = 0;
  for (let i = 0; i < lookups; i++) {
    const a = process.hrtime.bigint();
    const found = index.lookup(addrs[i]);
    const b = process.hrtime.bigint();
    for (const f of found) demangle(f.function);
    const c = process.hrtime.bigint();
    times[i] = Number(b - a) / 1000;
    timesDemangled[i] = Number(c - a) / 1000;
    frames += found.length;
  }
  times.sort();
  timesDemangled.sort();
  const mb = (n) => Math.round((n / 1048576) * 10) / 10;
  const us = (n) => Math.round(n * 100) / 100;
  return {
    dsym_mb: mb(bytes.length),
    dwarf_mb: mb(dwarfBytes),
    text_kb: Math.round(text.size / 1024),
    index_build_s: Math.round(buildMs) / 1000,
    peak_rss_growth_mb: mb(Math.max(peakRss, maxBefore) - rssBefore),
    index_mb: mb(inspected.index.byteLength),
    index_to_dsym: Math.round((inspected.index.byteLength / bytes.length) * 1000) / 1000,
    lookups,
    frames_per_lookup: Math.round((frames / lookups) * 100) / 100,
    lookup_us: { p50: us(percentile(times, 50)), p95: us(percentile(times, 95)), p99: us(percentile(times, 99)) },
    lookup_and_demangle_us: {
      p50: us(percentile(timesDemangled, 50)),
      p95: us(percentile(timesDemangled, 95)),
      p99: us(percentile(timesDemangled, 99)),
    },
  };
}

if (args.measure) {
  const result = await measure(args.measure, Number(args.lookups));
  process.stdout.write(JSON.stringify(result));
} else {
  if (!fs.existsSync(path.join(root, 'dist/symbols/dsym.js'))) throw new Error('run `npm run build` first');
  const file = await buildDsym(args.cache, Number(args.units), Number(args.functions));
  const out = execFileSync(
    process.execPath,
    ['--expose-gc', fileURLToPath(import.meta.url), '--measure', file, '--lookups', args.lookups],
    { maxBuffer: 1 << 24 },
  );
  const result = {
    machine: `${os.cpus().length} cores (shared: numbers are noisy)`,
    node: process.version,
    ...JSON.parse(out.toString()),
  };
  console.log(JSON.stringify(result, null, 2));
}
