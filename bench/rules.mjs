#!/usr/bin/env node
// What evaluating the ingest rules from their description (src/ingest/rules.ts) costs the
// planner: the per-call CPU of keepsEvent, sessionClass, regresses and snoozeEnded as
// plan.ts runs them, against the same rules written inline as JavaScript, and planBatch
// over a batch of 1000 events and 200 session updates. Paired rounds, order alternating,
// CPU time of this process (not wall time). Usage: node bench/rules.mjs [rounds]
// (builds nothing: run `npm run build` first).
import { keepsEvent, planBatch, regresses, sessionClass, snoozeEnded } from '../dist/ingest/plan.js';
import { emptySnapshot } from '../dist/ingest/plan.js';

const rounds = Number(process.argv[2] ?? 10);
const CALLS = 2_000_000;

const inline = {
  keepsEvent: (isCrash, n, p, random) =>
    isCrash || n <= p.sample_keep_first || p.sample_rate >= 1 || (p.sample_rate > 0 && random() < p.sample_rate),
  sessionClass: (status, errors) =>
    status === 'crashed' || status === 'unhandled'
      ? 'crashed'
      : status === 'errored' || status === 'abnormal' || errors > 0
        ? 'errored'
        : 'ok',
  regresses: (release, ts, resolvedAt, known) =>
    release !== '' ? !(known?.get(release) !== undefined && known.get(release) < resolvedAt) : ts > resolvedAt,
  snoozeEnded: (i, now) =>
    i.status === 'ignored' &&
    (i.ignore_until !== null
      ? now >= i.ignore_until
      : i.ignore_count !== null
        ? i.event_count - (i.ignored_event_count ?? 0) >= i.ignore_count
        : false),
};
const described = { keepsEvent, sessionClass, regresses, snoozeEnded };

const project = { id: 1, sample_keep_first: 100, sample_rate: 0.5, daily_quota: 0 };
const statuses = ['ok', 'exited', 'errored', 'crashed', 'unhandled', 'abnormal'];
const known = new Map([['app@1', 10]]);
const issue = {
  status: 'ignored',
  event_count: 50,
  users: 3,
  ignore_until: null,
  ignore_count: 100,
  ignore_users: null,
  ignored_event_count: 10,
  ignored_users: null,
};
const random = Math.random;

function cpu(fn) {
  const start = process.cpuUsage();
  fn();
  const d = process.cpuUsage(start);
  return (d.user + d.system) / 1000;
}

function calls(impl) {
  let sink = 0;
  for (let i = 0; i < CALLS; i++) {
    if (impl.keepsEvent(i % 50 === 0, i % 300, project, random)) sink++;
    if (impl.sessionClass(statuses[i % 6], i % 3) === 'crashed') sink++;
    if (impl.regresses(i % 2 ? 'app@1' : '', i, 5, known)) sink++;
    if (impl.snoozeEnded(issue, i)) sink++;
  }
  return sink;
}

const events = Array.from({ length: 1000 }, (_, i) => ({
  eventId: i.toString(16).padStart(32, '0'),
  fingerprint: (i % 50).toString(16).padStart(32, 'f'),
  timestamp: 1_700_000_000_000 + i * 1000,
  receivedAt: 1_700_000_100_000,
  level: 'error',
  platform: 'node',
  release: `app@${i % 3}`,
  environment: 'production',
  userKey: `u${i % 40}`,
  isCrash: i % 20 === 0,
  title: 't',
  errorType: 'E',
  screen: '',
  location: '',
  tags: [],
}));
const sessions = Array.from({ length: 200 }, (_, i) => ({
  sid: i.toString(16).padStart(32, '0'),
  did: null,
  release: 'app@1',
  environment: 'production',
  started: 1_700_000_000_000,
  timestamp: 1_700_000_000_000 + i,
  status: statuses[i % 6],
  errors: i % 2,
  anr: 0,
}));
const works = [{ projectId: 1, receivedAt: 1_700_000_100_000, events, sessions, aggregates: [] }];
const snapshot = { projects: new Map([[1, project]]), snapshots: new Map([[1, emptySnapshot()]]) };

const ms = { inline: [], described: [], plan: [] };
for (let r = 0; r < rounds; r++) {
  const order = r % 2 ? ['described', 'inline'] : ['inline', 'described'];
  for (const name of order) ms[name].push(cpu(() => calls(name === 'inline' ? inline : described)));
  ms.plan.push(cpu(() => planBatch(works, snapshot, random)));
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const per = (x) => ((x * 1e6) / (CALLS * 4)).toFixed(1);
console.log(
  `rule calls, median CPU per call: inline ${per(median(ms.inline))} ns, described ${per(median(ms.described))} ns (ratio ${(median(ms.described) / median(ms.inline)).toFixed(2)})`,
);
console.log(
  `planBatch of 1000 events and 200 session updates: median ${median(ms.plan).toFixed(2)} ms CPU (${((median(ms.plan) * 1000) / 1200).toFixed(2)} µs per item)`,
);
