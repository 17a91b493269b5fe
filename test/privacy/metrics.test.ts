// GET /metrics through the real server: the Prometheus text exposition checked line by
// line by a strict parser of the format (every sample under a HELP and TYPE of its
// family, label syntax, numeric values, histogram buckets cumulative), the metrics
// the operations docs name present with the values the requests made, the token or API
// key asked, and two servers in one process each with its own registry.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BREAKPAD_FIXTURES } from '../minidump/fixture.js';
import type { ProjectRow } from '../../src/store/schema.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { envelope, errorEvent, makeProject, post } from '../ingest/helpers.js';

const API_KEY = 'metrics-test-api-key-0123456789';

/** An envelope carrying a minidump as an `event.minidump` attachment (as sentry-native sends it). */
function minidumpEnvelope(dump: Uint8Array): Buffer {
  const header = JSON.stringify({
    type: 'attachment',
    length: dump.length,
    filename: 'crash.dmp',
    attachment_type: 'event.minidump',
  });
  return Buffer.concat([Buffer.from(`{}\n${header}\n`), Buffer.from(dump), Buffer.from('\n')]);
}

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses the Prometheus text format strictly; throws on any line it does not accept. */
function parseExposition(text: string): { types: Map<string, string>; samples: Sample[] } {
  const types = new Map<string, string>();
  const helps = new Set<string>();
  const samples: Sample[] = [];
  const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
  const sampleLine = new RegExp(
    `^(${NAME})(?:\\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\\\\n]|\\\\[\\\\"n])*",?)*)\\})? (-?[0-9.e+-]+|NaN|\\+Inf|-Inf)$`,
  );
  for (const line of text.split('\n')) {
    if (line === '') continue;
    let m = new RegExp(`^# HELP (${NAME}) (.*)$`).exec(line);
    if (m) {
      helps.add(m[1]);
      continue;
    }
    m = new RegExp(`^# TYPE (${NAME}) (counter|gauge|histogram|summary|untyped)$`).exec(line);
    if (m) {
      if (!helps.has(m[1])) throw new Error(`TYPE before HELP: ${line}`);
      types.set(m[1], m[2]);
      continue;
    }
    m = sampleLine.exec(line);
    if (!m) throw new Error(`not a valid exposition line: ${JSON.stringify(line)}`);
    const family = m[1].replace(/_(bucket|sum|count|total|created)$/, '');
    if (!types.has(m[1]) && !types.has(family) && !types.has(m[1].replace(/_(bucket|sum|count)$/, '')))
      throw new Error(`sample without TYPE: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    const value = m[3] === '+Inf' ? Infinity : m[3] === '-Inf' ? -Infinity : Number(m[3]);
    if (m[3] !== 'NaN' && Number.isNaN(value)) throw new Error(`bad value: ${line}`);
    samples.push({ name: m[1], labels, value });
  }
  return { types, samples };
}

function value(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  return samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
}

describe.each(dialects)('GET /metrics on %s', (dialect) => {
  let t: TestServer;
  let withToken: TestServer;
  let p: ProjectRow;

  beforeAll(async () => {
    t = await startTestServer(dialect, { env: { API_KEYS: API_KEY }, clock: { now: () => Date.now() } });
    withToken = await startTestServer(dialect, { env: { API_KEYS: API_KEY, METRICS_TOKEN: 'scrape-token' } });
    p = await makeProject(t);
    for (let i = 0; i < 3; i++) {
      const res = await post(
        t,
        p,
        envelope({}, [
          { type: 'event', payload: errorEvent({ timestamp: Date.now() }) },
          { type: 'event', payload: errorEvent({ timestamp: Date.now() }) },
        ]),
      );
      expect(res.status).toBe(200);
    }
    // Two real minidumps and one that is not a minidump.
    const dump = fs.readFileSync(path.join(BREAKPAD_FIXTURES, 'crash.dmp'));
    for (const body of [dump, dump, Buffer.from('MDMP but not really a minidump')])
      expect((await post(t, p, minidumpEnvelope(body))).status).toBe(200);
    expect((await post(t, p, 'x', { key: 'f'.repeat(32) })).status).toBe(401);
    expect((await post(t, p, 'not an envelope header\n')).status).toBe(400);
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await withToken?.close();
  });

  it('asks for an API key, then answers the text format with every documented metric', async () => {
    expect((await fetch(`${t.url}/metrics`)).status).toBe(401);
    expect((await fetch(`${t.url}/metrics`, { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
    const res = await fetch(`${t.url}/metrics`, { headers: { authorization: `Bearer ${API_KEY}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain; version=0.0.4');
    const { types, samples } = parseExposition(await res.text());

    expect(types.get('faultline_ingest_requests_total')).toBe('counter');
    expect(value(samples, 'faultline_ingest_requests_total', { reason: 'accepted' })).toBe(6);
    expect(value(samples, 'faultline_ingest_requests_total', { reason: 'unauthorized' })).toBe(1);
    expect(value(samples, 'faultline_ingest_requests_total', { reason: 'bad_request' })).toBe(1);
    // Each readable minidump became an event.
    expect(value(samples, 'faultline_ingest_events_total')).toBe(8);

    expect(types.get('faultline_minidump_processing_seconds')).toBe('histogram');
    expect(value(samples, 'faultline_minidump_processing_seconds_count', { result: 'processed' })).toBe(2);
    expect(value(samples, 'faultline_minidump_processing_seconds_count', { result: 'unreadable' })).toBe(1);
    expect(value(samples, 'faultline_minidump_processing_seconds_sum', { result: 'processed' })).toBeGreaterThan(0);
    const dumps = samples.filter(
      (s) => s.name === 'faultline_minidump_processing_seconds_bucket' && s.labels.result === 'processed',
    );
    for (let i = 1; i < dumps.length; i++) expect(dumps[i].value).toBeGreaterThanOrEqual(dumps[i - 1].value);
    expect(dumps.at(-1)).toMatchObject({ labels: { le: '+Inf' }, value: 2 });

    expect(types.get('faultline_ingest_commit_seconds')).toBe('histogram');
    const commits = value(samples, 'faultline_ingest_commit_seconds_count')!;
    expect(commits).toBeGreaterThanOrEqual(1);
    const buckets = samples.filter((s) => s.name === 'faultline_ingest_commit_seconds_bucket');
    for (let i = 1; i < buckets.length; i++) expect(buckets[i].value).toBeGreaterThanOrEqual(buckets[i - 1].value);
    expect(value(samples, 'faultline_ingest_commit_seconds_bucket', { le: '+Inf' })).toBe(commits);

    expect(value(samples, 'faultline_ingest_queue_depth')).toBe(0);
    expect(value(samples, 'faultline_database_bytes')).toBeGreaterThan(0);
    for (const result of ['pending', 'sent', 'failed'])
      expect(value(samples, 'faultline_alert_deliveries', { result })).toBe(0);
    expect(value(samples, 'faultline_resymbolication_backlog')).toBe(0);
    expect(types.get('faultline_symbolication_seconds')).toBe('histogram');
    expect(value(samples, 'nodejs_eventloop_lag_seconds')).toBeGreaterThanOrEqual(0);
  });

  it('with METRICS_TOKEN asks for that token, not an API key; each server has its own registry', async () => {
    expect((await fetch(`${withToken.url}/metrics`, { headers: { authorization: `Bearer ${API_KEY}` } })).status).toBe(
      401,
    );
    const res = await fetch(`${withToken.url}/metrics`, { headers: { authorization: 'Bearer scrape-token' } });
    expect(res.status).toBe(200);
    const { samples } = parseExposition(await res.text());
    // This server took no ingest: the other server's counts are not here.
    expect(value(samples, 'faultline_ingest_requests_total', { reason: 'accepted' })).toBeUndefined();
  });
});
