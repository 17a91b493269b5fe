// The ingest pipeline lets ready I/O run between reading a request's body and parsing
// it (IngestRuntime.yieldToIo): parsing a burst of requests back to back used to hold
// the database's answers back for the whole burst. Checked on the pipeline itself with
// a real store: the order of the steps, that with Node's runtime an I/O callback
// already queued runs before the request is parsed, and that on PostgreSQL I/O also
// gets in after every PARSES_PER_TURN parses of a burst.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { ManualClock } from '../../src/clock.js';
import { nodeIngestRuntime, PARSES_PER_TURN, postgresNodeIngestRuntime } from '../../src/editions/node/runtime.js';
import { handleIngest, type PipelineDeps } from '../../src/ingest/pipeline.js';
import { expandMinidumpEnvelope } from '../../src/minidump/ingest.js';
import type { ProjectRow } from '../../src/store/schema.js';
import { createProject, hex32, openTestStore, type TestStore } from '../helpers/factory.js';

const T = Date.UTC(2026, 0, 10, 12);

function envelope(eventId: string): Uint8Array {
  const event = { event_id: eventId, message: 'yield test', level: 'error', platform: 'node' };
  return new TextEncoder().encode(`{"event_id":"${eventId}"}\n{"type":"event"}\n${JSON.stringify(event)}\n`);
}

describe('ingest pipeline: ready I/O before parsing', () => {
  let t: TestStore;
  let project: ProjectRow;
  beforeAll(async () => {
    t = await openTestStore('sqlite');
    project = await createProject(t.store);
  });
  afterAll(async () => {
    await t?.close();
  });

  function deps(order: string[], yieldToIo: (() => Promise<void>) | undefined): PipelineDeps {
    return {
      store: t.store,
      clock: new ManualClock(T),
      logger: pino({ level: 'silent' }),
      rateLimiter: { hit: async () => ({ allowed: true, retryAfterSeconds: 0 }) },
      ingest: {
        submit: async () => {
          order.push('submit');
          return { kind: 'ok' };
        },
        close: async () => {},
      },
      ingestRuntime: {
        ...nodeIngestRuntime,
        md5Hex: (text) => {
          order.push('parse');
          return nodeIngestRuntime.md5Hex(text);
        },
        yieldToIo,
      },
      expandMinidump: expandMinidumpEnvelope,
    };
  }

  function send(d: PipelineDeps, order: string[]) {
    return handleIngest(d, {
      endpoint: 'envelope',
      projectId: String(project.id),
      headers: new Headers(),
      query: new URLSearchParams(`sentry_key=${project.dsn_key}`),
      readBody: async () => {
        order.push('read');
        return envelope(hex32());
      },
      clientIp: null,
    });
  }

  it('waits for yieldToIo after reading the body and before parsing it', async () => {
    const order: string[] = [];
    const answer = await send(
      deps(order, async () => {
        order.push('yield');
      }),
      order,
    );
    expect(answer.status).toBe(200);
    expect(order).toEqual(['read', 'yield', 'parse', 'submit']);
  });

  it("with Node's runtime, a callback the event loop already holds runs before the parsing", async () => {
    const order: string[] = [];
    const d = deps(order, nodeIngestRuntime.yieldToIo);
    const request = send(d, order);
    // Queued while the request's body is being read, as an answer from the database would be.
    setImmediate(() => order.push('io'));
    await request;
    expect(order).toEqual(['read', 'io', 'parse', 'submit']);
  });

  /**
   * Sends `count` requests at once; at the first parse a byte goes out on a loopback
   * socket, so its arrival is an I/O callback of the event loop's next poll phase.
   * Returns how many parses ran before that callback.
   */
  async function parsesBeforeIo(runtime: typeof nodeIngestRuntime, count: number): Promise<number> {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const accepted = new Promise<net.Socket>((resolve) => server.once('connection', resolve));
    const client = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
    await new Promise<void>((resolve) => client.once('connect', resolve));
    const peer = await accepted;
    const order: string[] = [];
    peer.on('data', () => order.push('io'));
    const d = deps(order, runtime.yieldToIo);
    const md5Hex = d.ingestRuntime.md5Hex;
    d.ingestRuntime = {
      ...d.ingestRuntime,
      md5Hex: (text) => {
        if (!order.includes('parse')) client.write('x');
        return md5Hex(text);
      },
    };
    try {
      await Promise.all(Array.from({ length: count }, () => send(d, order)));
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(order.filter((step) => step === 'parse')).toHaveLength(count);
      return order.slice(0, order.indexOf('io')).filter((step) => step === 'parse').length;
    } finally {
      client.destroy();
      peer.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  }

  it('on PostgreSQL, lets I/O in after every few parses of a burst, not only after the whole burst', async () => {
    expect(await parsesBeforeIo(postgresNodeIngestRuntime, 3 * PARSES_PER_TURN)).toBe(PARSES_PER_TURN);
    // Without pacing the burst is parsed in one go.
    expect(await parsesBeforeIo(nodeIngestRuntime, 3 * PARSES_PER_TURN)).toBe(3 * PARSES_PER_TURN);
  });

  it('parses at once when the edition has no yieldToIo', async () => {
    const order: string[] = [];
    const request = send(deps(order, undefined), order);
    setImmediate(() => order.push('io'));
    await request;
    expect(order.slice(0, 3)).toEqual(['read', 'parse', 'submit']);
  });
});
