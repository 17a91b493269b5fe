// A client that closes the connection in the middle of its body: the request is
// logged as what it is (status 499, "client closed the connection", not at error
// level), never as a 500 "unexpected failure", on the direct ingest listener, on
// the app's ingest route and on a management route. Nothing is stored.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProjectRow } from '../../src/store/schema.js';
import { captureLogger } from '../helpers/log-capture.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { makeProject, rowCounts } from '../ingest/helpers.js';

/** Sends headers promising `length` bytes, part of the body, then closes the socket. */
function abortMidBody(t: TestServer, method: string, target: string, length: number): Promise<void> {
  const url = new URL(t.url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(url.port), url.hostname, () => {
      socket.write(
        `${method} ${target} HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n{"slug":"par`,
      );
      setTimeout(() => {
        socket.destroy();
        resolve();
      }, 100);
    });
    socket.on('error', reject);
  });
}

// The logs are what this checks, and they do not depend on the database.
describe('client aborts', () => {
  let t: TestServer;
  let p: ProjectRow;
  const capture = captureLogger('debug');
  beforeAll(async () => {
    t = await startTestServer('sqlite', { logger: capture.logger, env: { RATE_LIMIT: '0' } });
    p = await makeProject(t);
  });
  afterAll(() => t?.close());

  it.each([
    ['the direct ingest listener', 'POST', () => `/api/${p.id}/envelope/?sentry_key=${p.dsn_key}`],
    [
      'the app ingest route',
      'POST',
      () => `/api/%3${String(p.id)[0]}${String(p.id).slice(1)}/envelope/?sentry_key=${p.dsn_key}`,
    ],
    ['a management route', 'POST', () => '/api/projects'],
  ])('on %s: logged as a client abort, not a 500', async (_name, method, target) => {
    const before = await rowCounts(t);
    const from = capture.lines.length;
    await abortMidBody(t, method, target(), 10_000);
    const deadline = Date.now() + 3000;
    let lines: Record<string, any>[] = [];
    while (Date.now() < deadline) {
      lines = capture.lines.slice(from);
      if (lines.some((l) => l.msg === 'request')) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const request = lines.find((l) => l.msg === 'request');
    expect(request, JSON.stringify(lines)).toBeDefined();
    expect(request!.status).toBe(499);
    expect(lines.filter((l) => l.level >= 50)).toEqual([]);
    expect(lines.some((l) => /client closed the connection/.test(l.msg))).toBe(true);
    expect(await rowCounts(t)).toEqual(before);
  });
});
