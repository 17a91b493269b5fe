#!/usr/bin/env node
// The main thread's ingest work of several builds, compared in one process
// (BENCHMARKS.md "Ingest against an older build, paired"): envelope parse, buildWork
// (normalisation, scrubbing, grouping) and prepareWork on the benchmark's SDK-shaped
// envelopes (1 request in 10 a session), in rounds whose order rotates, timed in CPU
// time (on a shared machine the wall clock also counts other processes). Whole-server
// pairs there cannot resolve a few per cent; this can. Usage:
//   node bench/ingest-main.mjs DIR[:noscrub] DIR[:noscrub] ... [--rounds 31] [--requests 2000] [--no-prepare]
// where DIR is a checkout with dist/ built (a `git worktree` of an older commit) and
// `:noscrub` runs that build for a project with scrubbing off. The first build is the base.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { buildTemplates, createFiller, EXCEPTION_TYPES, RELEASES } from './lib/payloads.mjs';

const { values: argv, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    rounds: { type: 'string', default: '31' },
    requests: { type: 'string', default: '2000' },
    'no-prepare': { type: 'boolean', default: false },
  },
});
if (positionals.length === 0) throw new Error('name at least one build directory (DIR or DIR:noscrub)');

const project = {
  id: 1,
  slug: 'b',
  name: 'b',
  platform: 'backend',
  dsn_key: 'k',
  sample_keep_first: 100,
  sample_rate: 1,
  daily_quota: 0,
  created_at: 0,
  storage_budget_mb: 0,
  scrub_defaults: 1,
  scrub_ip_addresses: 0,
  scrub_fields: '[]',
  safe_fields: '[]',
};
const scrubOff = { ...project, scrub_defaults: 0 };

const builds = [];
for (const spec of positionals) {
  const [dir, flag] = spec.split(':');
  const load = (file) => import(pathToFileURL(path.resolve(dir, 'dist', file)).href);
  // The first of the files that exists (older builds kept some modules elsewhere).
  const first = async (...files) => {
    for (const f of files) if (fs.existsSync(path.resolve(dir, 'dist', f))) return load(f);
    return null;
  };
  const runtime = await first('editions/node/runtime.js', 'editions/node-runtime.js');
  // Builds before src/ingest/prepare.ts prepared rows inside the batch; --no-prepare leaves it out of every build.
  const prepare = argv['no-prepare'] ? null : await first('ingest/prepare.js');
  if (!argv['no-prepare'] && !prepare) throw new Error(`${dir} has no dist/ingest/prepare.js: run with --no-prepare`);
  builds.push({
    name: spec,
    project: flag === 'noscrub' ? scrubOff : project,
    parseEnvelope: (await load('ingest/envelope.js')).parseEnvelope,
    buildWork: (await load('ingest/pipeline.js')).buildWork,
    prepareWork: prepare ? prepare.prepareWork : () => {},
    md5Hex: runtime.nodeIngestRuntime.md5Hex,
  });
}

const templates = { ...buildTemplates(), types: EXCEPTION_TYPES, releases: RELEASES };
const filler = createFiller({ templates, prefix: '0123456789abcdef', fingerprints: 200, sessionEvery: 10 });
const encoder = new TextEncoder();
const bodies = Array.from({ length: Number(argv.requests) }, () => encoder.encode(filler.next().body));

/** CPU µs per request of one pass over the bodies. */
function pass(b) {
  const start = process.cpuUsage();
  for (const body of bodies) {
    const envelope = b.parseEnvelope(body);
    const { work } = b.buildWork(
      b.project,
      { kind: 'envelope', envelope },
      { receivedAt: Date.now(), clientIp: '10.0.0.1', md5Hex: b.md5Hex },
    );
    b.prepareWork(work);
  }
  const used = process.cpuUsage(start);
  return (used.user + used.system) / bodies.length;
}

for (const b of builds) for (let i = 0; i < 3; i++) pass(b); // warm-up: JIT, the first User-Agent parse
const times = builds.map(() => []);
for (let r = 0; r < Number(argv.rounds); r++) {
  for (let k = 0; k < builds.length; k++) {
    const i = (k + r) % builds.length;
    times[i].push(pass(builds[i]));
  }
}
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
builds.forEach((b, i) => {
  const ratio = i === 0 ? null : median(times[i].map((t, r) => t / times[0][r]));
  console.log(
    JSON.stringify({
      build: b.name,
      median_cpu_us_per_request: Number(median(times[i]).toFixed(2)),
      min_cpu_us_per_request: Number(Math.min(...times[i]).toFixed(2)),
      ...(ratio === null ? {} : { median_ratio_to_first_per_round: Number(ratio.toFixed(3)) }),
    }),
  );
});
