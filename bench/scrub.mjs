#!/usr/bin/env node
// What server-side scrubbing costs ingest (BENCHMARKS.md "Scrubbing"): the benchmark's
// SDK-shaped envelopes (bench/lib/payloads.mjs, 70 % ~3 KB and 30 % ~20 KB events)
// go through the main thread's ingest work, envelope parse and normalisation
// (buildWork, where scrubbing runs), for a project with scrubbing off and one with the
// defaults plus 20 custom fields, in paired rounds whose order alternates. This is the
// part of ingest scrubbing adds to; the commit (database) side is unchanged, so a whole
// server's ratio is at least the one printed here. Usage: node bench/scrub.mjs [rounds]
// (builds nothing: run `npm run build` first).
import { parseEnvelope } from '../dist/ingest/envelope.js';
import { buildWork } from '../dist/ingest/pipeline.js';
import { nodeIngestRuntime } from '../dist/editions/node/runtime.js';
import { buildTemplates, createFiller, EXCEPTION_TYPES, RELEASES } from './lib/payloads.mjs';

const rounds = Number(process.argv[2] ?? 12);
const PER_ROUND = 4000;

const base = {
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
};
const off = { ...base, scrub_defaults: 0, scrub_ip_addresses: 0, scrub_fields: '[]', safe_fields: '[]' };
const custom = Array.from({ length: 20 }, (_, i) => `custom_field_${i}`);
const on = {
  ...base,
  scrub_defaults: 1,
  scrub_ip_addresses: 0,
  scrub_fields: JSON.stringify(custom),
  safe_fields: '[]',
};

const templates = { ...buildTemplates(), types: EXCEPTION_TYPES, releases: RELEASES };
const filler = createFiller({ templates, prefix: '0123456789abcdef', fingerprints: 500, sessionEvery: 0 });
const bodies = Array.from({ length: PER_ROUND }, () => new TextEncoder().encode(filler.next().body));

// CPU time of this process, not wall time: on a shared machine the wall clock also
// counts the time other processes held the CPU.
function run(project, from = 0, to = bodies.length) {
  const start = process.cpuUsage();
  let events = 0;
  for (let i = from; i < to; i++) {
    const body = bodies[i];
    const envelope = parseEnvelope(body);
    const { work } = buildWork(
      project,
      { kind: 'envelope', envelope },
      { receivedAt: Date.now(), clientIp: '10.0.0.1', md5Hex: nodeIngestRuntime.md5Hex },
    );
    events += work.events.length;
  }
  const used = process.cpuUsage(start);
  return events / ((used.user + used.system) / 1e6);
}

// Warm-up, so both sides run optimised code.
run(off);
run(on);
const ratios = [];
const offRates = [];
const onRates = [];
// Each round alternates slices of 200 envelopes between the two projects (the order
// flipping every slice), so load from other processes falls on both sides alike.
const SLICE = 200;
for (let r = 0; r < rounds; r++) {
  let secondsOff = 0;
  let secondsOn = 0;
  for (let from = 0, k = 0; from < bodies.length; from += SLICE, k++) {
    const to = Math.min(bodies.length, from + SLICE);
    const order = (k + r) % 2 === 0 ? [off, on] : [on, off];
    for (const project of order) {
      const seconds = (to - from) / run(project, from, to);
      if (project === off) secondsOff += seconds;
      else secondsOn += seconds;
    }
  }
  offRates.push(bodies.length / secondsOff);
  onRates.push(bodies.length / secondsOn);
  ratios.push(secondsOff / secondsOn);
}
const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
const scrubbed = (() => {
  const envelope = parseEnvelope(bodies[0]);
  const { work } = buildWork(
    on,
    { kind: 'envelope', envelope },
    { receivedAt: Date.now(), clientIp: null, md5Hex: nodeIngestRuntime.md5Hex },
  );
  return new TextDecoder().decode(work.events[0].raw).includes('_scrubbed');
})();
console.log(
  JSON.stringify(
    {
      rounds,
      events_per_round: PER_ROUND,
      off_events_per_s: Math.round(median(offRates)),
      on_events_per_s: Math.round(median(onRates)),
      ratio_median: Number(median(ratios).toFixed(3)),
      ratio_min: Number(Math.min(...ratios).toFixed(3)),
      payload_rewritten: scrubbed,
    },
    null,
    2,
  ),
);
