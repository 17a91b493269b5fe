// Test support for alerts: a real local HTTP receiver for webhooks (answers chosen per
// request, optionally slowly), a fake of Telegram's Bot API, and helpers to make a
// project with channels and send it events through the real ingest endpoint.
import { createHmac } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestServer } from '../helpers/server.js';
import { envelope, errorEvent, eventId, post } from '../ingest/helpers.js';
import type { ProjectRow } from '../../src/store/schema.js';
import { findProjectBySlug } from '../../src/store/projects.js';

export interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  json: any;
  /** The status the receiver answered. */
  answered: number;
  /** When the request arrived (ms): gaps between attempts are measured from these, not from polling. */
  arrivedAt: number;
}

export interface Answer {
  status: number;
  delayMs?: number;
  body?: string;
}

/** A local HTTP server that records every request and answers from a script (then 200). */
export class Receiver {
  readonly requests: Received[] = [];
  script: Answer[] = [];
  fallback: Answer = { status: 200 };
  private server!: http.Server;
  port = 0;

  static async start(port = 0): Promise<Receiver> {
    const r = new Receiver();
    await r.listen(port);
    return r;
  }

  private listen(port: number): Promise<void> {
    this.server = http.createServer((req, res) => {
      const arrivedAt = Date.now();
      const chunks: Buffer[] = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const answer = this.script.shift() ?? this.fallback;
        let json: any = null;
        try {
          json = JSON.parse(body);
        } catch {
          json = null;
        }
        const finish = () => {
          this.requests.push({
            path: req.url ?? '',
            headers: req.headers,
            body,
            json,
            answered: answer.status,
            arrivedAt,
          });
          res.writeHead(answer.status, { 'content-type': 'application/json' });
          res.end(answer.body ?? '{"ok":true}');
        };
        if (answer.delayMs) setTimeout(finish, answer.delayMs);
        else finish();
      });
    });
    return new Promise((resolve) => {
      this.server.listen(port, '127.0.0.1', () => {
        this.port = (this.server.address() as AddressInfo).port;
        resolve();
      });
    });
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Requests answered 2xx. */
  get accepted(): Received[] {
    return this.requests.filter((r) => r.answered >= 200 && r.answered < 300);
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Waits until `check` holds, polling every 20 ms. */
export async function until(
  check: () => boolean | Promise<boolean>,
  timeoutMs = 8000,
  what = 'condition',
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function verifySignature(secret: string, body: string, header: string | string[] | undefined): boolean {
  return header === `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

let counter = 0;

/** A project made through the API (so its rules are created as users' are). */
export async function apiProject(t: TestServer, name = 'Alerting app'): Promise<ProjectRow> {
  counter += 1;
  const slug = `alerts-${counter}-${Math.random().toString(16).slice(2, 8)}`;
  const res = await t.api('/api/projects', { method: 'POST', json: { slug, name } });
  if (res.status !== 201) throw new Error(`project create: ${res.status} ${await res.text()}`);
  return (await findProjectBySlug(t.deps.store.db, slug))!;
}

export async function addWebhook(t: TestServer, project: ProjectRow, url: string, secret?: string): Promise<number> {
  const res = await t.api(`/api/projects/${project.slug}/alerts/channels`, {
    method: 'POST',
    json: { kind: 'webhook', config: { url, ...(secret ? { secret } : {}) } },
  });
  if (res.status !== 201) throw new Error(`channel create: ${res.status} ${await res.text()}`);
  return (await res.json()).id;
}

/** Sends events (one envelope) and expects 200. */
export async function sendEvents(t: TestServer, project: ProjectRow, events: Record<string, unknown>[]): Promise<void> {
  const body = envelope(
    { event_id: events[0].event_id },
    events.map((payload) => ({ type: 'event', payload })),
  );
  const res = await post(t, project, body);
  if (res.status !== 200) throw new Error(`ingest: ${res.status} ${await res.text()}`);
}

export function crash(timestamp: number, fn = 'crashy'): Record<string, unknown> {
  return errorEvent({ timestamp, level: 'fatal', type: 'Crash', value: 'it fell over', fn, id: eventId() });
}

export async function deliveries(t: TestServer, project: ProjectRow): Promise<any[]> {
  const res = await t.api(`/api/projects/${project.slug}/alerts/deliveries`);
  return (await res.json()).deliveries;
}

export async function pendingOutbox(t: TestServer): Promise<number> {
  const row = await t.deps.store.db
    .selectFrom('alert_outbox')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('state', 'in', ['pending', 'claimed'])
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Fake Telegram Bot API: records sendMessage calls; answers from a script, then ok. */
export class FakeBotApi {
  readonly receiver: Receiver;
  private constructor(receiver: Receiver) {
    this.receiver = receiver;
  }
  static async start(): Promise<FakeBotApi> {
    const r = await Receiver.start();
    r.fallback = { status: 200, body: JSON.stringify({ ok: true, result: { message_id: 1 } }) };
    return new FakeBotApi(r);
  }
  get url(): string {
    return this.receiver.url;
  }
  get messages(): Received[] {
    return this.receiver.requests;
  }
  tooManyRequests(retryAfterSeconds: number): void {
    this.receiver.script.push({
      status: 429,
      body: JSON.stringify({
        ok: false,
        error_code: 429,
        description: `Too Many Requests: retry after ${retryAfterSeconds}`,
        parameters: { retry_after: retryAfterSeconds },
      }),
    });
  }
  stop(): Promise<void> {
    return this.receiver.stop();
  }
}
