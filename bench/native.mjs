#!/usr/bin/env node
// Native benchmark (issue #44): generates a C++ shared object of many compile units whose
// ELF debug info is at least 50 MB (clang for x86_64-linux-gnu, ld.lld), then, in a fresh
// child process, times building its lookup index at upload (inspectElf: headers, DWARF,
// symbol tables, serialisation) with its peak RSS growth, and per-frame lookup latency
// (p50/p95/p99); and times processing the committed Breakpad-client minidump
// (test/fixtures/breakpad: read, walk both threads with its .sym's CFI cached, build the
// event); and times processing a generated minidump of the size (1 MB, 40
// modules, 20 threads with 30 frames each, written by test/fixtures/minidump/synth.mjs)
// with the modules' Breakpad symbols (FUNC and STACK CFI records) read once and cached.
// Uses the built code in dist/ (run `npm run build`). Never asserts on speed;
// prints JSON. The generated build is kept in the cache folder (default:
// $TMPDIR/faultline-elf-bench) so reruns skip compiling.
//
//   node bench/native.mjs [--units 70] [--functions 600] [--cache DIR] [--lookups 200000] [--dumps 2000]
//   node bench/native.mjs --only minidump [--dumps 500]     (no compiler needed)
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
    only: { type: 'string' },
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
    jobs.push([
      'clang++',
      '--target=x86_64-linux-gnu',
      '-g',
      '-O2',
      '-fPIC',
      '-fno-exceptions',
      '-fno-rtti',
      '-c',
      src,
      '-o',
      objects.at(-1),
    ]);
  }
  const started = Date.now();
  process.stderr.write(`compiling ${jobs.length} units (2 at a time)...\n`);
  await runPool(jobs, 2);
  execFileSync('clang++', [
    '--target=x86_64-linux-gnu',
    '-fuse-ld=lld',
    '-shared',
    '-nostdlib',
    '-Wl,--build-id=sha1',
    ...objects,
    '-o',
    out,
  ]);
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
  const { breakpadUnwindInfo, processMinidump, readBreakpadUnwind } = await import(
    path.join(root, 'dist/minidump/process.js')
  );
  // The file is read by ranges, as an upload reads its stored chunks: what the build holds
  // is what it reads, never the file.
  const fd = fs.openSync(file, 'r');
  const source = {
    size: fs.fstatSync(fd).size,
    async read(offset, length) {
      const out = new Uint8Array(Math.max(0, Math.min(length, this.size - offset)));
      fs.readSync(fd, out, 0, out.byteLength, offset);
      return out;
    },
  };
  globalThis.gc?.();
  const rssBefore = process.memoryUsage().rss;
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const [inspected] = await inspectElf('libbig.so', source);
  const buildCpu = process.cpuUsage(cpu0);
  const buildMs = performance.now() - t0;
  const peakRss = process.resourceUsage().maxRSS * 1024;
  fs.closeSync(fd);
  const bytes = new Uint8Array(fs.readFileSync(file));
  const index = new NativeIndex(inspected.index);
  const elf = await readElf(bytes);
  const text = elf.sections.find((s) => s.name === '.text');
  const debugBytes = elf.sections.filter((s) => s.name.startsWith('.debug_')).reduce((n, s) => n + s.size, 0);
  let seed = 42;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
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
    index_build_cpu_s: Math.round((buildCpu.user + buildCpu.system) / 1000) / 1000,
    peak_rss_growth_mb: mb(peakRss - rssBefore),
    index_mb: mb(inspected.index.byteLength),
    lookup_us: { p50: us(percentile(times, 50)), p95: us(percentile(times, 95)), p99: us(percentile(times, 99)) },
    minidump: {
      bytes: dump.byteLength,
      runs: dumps,
      ms: {
        p50: us(percentile(dumpTimes, 50)),
        p95: us(percentile(dumpTimes, 95)),
        p99: us(percentile(dumpTimes, 99)),
      },
    },
    synthetic_minidump: await measureSyntheticDump(Math.min(dumps, 500)),
  };
}

/** A 1 MB amd64 Linux dump: 40 modules with .sym files, 20 threads whose stacks hold 30 CFI frames each. */
async function syntheticDump() {
  const { writeMinidump } = await import(path.join(root, 'test/fixtures/minidump/synth.mjs'));
  const MODULES = 40;
  const THREADS = 20;
  const FRAMES = 30;
  const STACK = 48 * 1024;
  const FUNCS = 500;
  let seed = 7;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const modules = Array.from({ length: MODULES }, (_, m) => ({
    base: 0x7f0000000000 + m * 0x1000000,
    size: 0x100000,
    name: `/usr/lib/libbench${m}.so`,
    elf: { buildId: (m + 1).toString(16).padStart(8, '0').repeat(5) },
  }));
  const syms = modules.map((_, m) => {
    const lines = [
      `MODULE Linux x86_64 ${(m + 1).toString(16).padStart(8, '0').repeat(4).toUpperCase()}0 libbench${m}.so`,
    ];
    for (let f = 0; f < FUNCS; f++) lines.push(`FUNC ${(0x1000 + f * 0x100).toString(16)} 100 0 bench${m}_fn${f}`);
    for (let f = 0; f < FUNCS; f++)
      lines.push(
        `STACK CFI INIT ${(0x1000 + f * 0x100).toString(16)} 100 .cfa: $rsp 16 + .ra: .cfa -8 + ^ $rbp: .cfa -16 + ^`,
      );
    return new TextEncoder().encode(`${lines.join('\n')}\n`);
  });
  const pc = () => {
    const mod = modules[Math.floor(random() * MODULES)];
    return mod.base + 0x1000 + Math.floor(random() * FUNCS) * 0x100 + 0x10;
  };
  const threads = Array.from({ length: THREADS }, (_, t) => {
    const start = 0x7ffd00000000 + t * 0x100000;
    const bytes = new Uint8Array(STACK);
    const view = new DataView(bytes.buffer);
    // Each frame: [rsp] the saved rbp, [rsp + 8] the return address.
    for (let f = 0; f < FRAMES; f++) {
      view.setBigUint64(f * 16, BigInt(start + (f + 1) * 16), true);
      view.setBigUint64(f * 16 + 8, BigInt(pc()), true);
    }
    return { id: 100 + t, regs: { rip: pc(), rsp: start, rbp: start }, stack: { start, bytes } };
  });
  const dump = writeMinidump({
    arch: 'amd64',
    os: 'linux',
    osVersion: '6.1.0',
    threads,
    modules,
    exception: { threadId: 100, code: 11, flags: 1 },
  });
  return { dump, syms };
}

async function measureSyntheticDump(dumps) {
  const { NativeIndex } = await import(path.join(root, 'dist/symbols/native/lookup-index.js'));
  const { breakpadIndex } = await import(path.join(root, 'dist/symbols/breakpad.js'));
  const { breakpadUnwindInfo, processMinidump, readBreakpadUnwind } = await import(
    path.join(root, 'dist/minidump/process.js')
  );
  const { dump, syms } = await syntheticDump();
  const cache = new Map();
  for (const sym of syms) {
    const reader = readBreakpadUnwind(sym);
    cache.set(reader.module.debugId, breakpadUnwindInfo(reader, new NativeIndex(breakpadIndex(reader))));
  }
  const unwind = (m) => cache.get(m.debugId) ?? null;
  const { event } = processMinidump(dump, unwind);
  const frames = event.threads.values.reduce((n, t) => n + (t.stacktrace?.frames.length ?? 0), 0);
  for (let i = 0; i < 50; i++) processMinidump(dump, unwind);
  const times = new Float64Array(dumps);
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < dumps; i++) {
    const a = performance.now();
    processMinidump(dump, unwind);
    times[i] = performance.now() - a;
  }
  const cpu = process.cpuUsage(cpu0);
  times.sort();
  return {
    bytes: dump.byteLength,
    modules: 40,
    threads: 20,
    frames,
    runs: dumps,
    ms: { p50: us(percentile(times, 50)), p95: us(percentile(times, 95)), p99: us(percentile(times, 99)) },
    cpu_ms_per_dump: us((cpu.user + cpu.system) / 1000 / dumps),
  };
}

if (args.only === 'minidump') {
  console.log(JSON.stringify({ synthetic_minidump: await measureSyntheticDump(Number(args.dumps)) }, null, 1));
} else if (args.measure) {
  console.log(JSON.stringify(await measure(args.measure, Number(args.lookups), Number(args.dumps))));
} else {
  const file = await buildElf(args.cache, Number(args.units), Number(args.functions));
  const out = execFileSync(
    process.execPath,
    [
      '--expose-gc',
      fileURLToPath(import.meta.url),
      '--measure',
      file,
      '--lookups',
      args.lookups,
      '--dumps',
      args.dumps,
    ],
    { maxBuffer: 1 << 24 },
  ).toString();
  console.log(JSON.stringify(JSON.parse(out), null, 1));
}
