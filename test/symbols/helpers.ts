// Helpers for the symbols tests: uploads through the real multipart route, events
// through the real ingest route, event details through the read API, and the real
// artifacts (a ProGuard-obfuscated Java program; see java-fixture.ts, browser-fixture.ts).
import type { ProjectRow } from '../../src/store/schema.js';
import type { TestServer } from '../helpers/server.js';
import { envelope, eventId, post } from '../ingest/helpers.js';

export interface UploadFile {
  name: string;
  data: Uint8Array | string;
}

/** POST /symbols with kind, release (and dist) first, then the files, as multipart. */
export async function uploadSymbols(
  t: TestServer,
  project: ProjectRow,
  opts: { kind: string; release?: string; dist?: string; files: UploadFile[] },
): Promise<Response> {
  const form = new FormData();
  form.append('kind', opts.kind);
  if (opts.release !== undefined) form.append('release', opts.release);
  if (opts.dist !== undefined) form.append('dist', opts.dist);
  for (const f of opts.files)
    form.append('file', new Blob([typeof f.data === 'string' ? f.data : Buffer.from(f.data)]), f.name);
  return t.api(`/api/projects/${project.slug}/symbols`, { method: 'POST', body: form });
}

export async function uploadOk(
  t: TestServer,
  project: ProjectRow,
  opts: Parameters<typeof uploadSymbols>[2],
): Promise<any[]> {
  const res = await uploadSymbols(t, project, opts);
  const body = (await res.json()) as any;
  if (res.status !== 201) throw new Error(`upload answered ${res.status}: ${JSON.stringify(body)}`);
  return body.symbols;
}

/** Sends one event through the envelope route; its event_id. */
export async function sendEvent(t: TestServer, project: ProjectRow, event: Record<string, unknown>): Promise<string> {
  const id = (event.event_id as string) ?? eventId();
  const res = await post(
    t,
    project,
    envelope({ event_id: id }, [{ type: 'event', payload: { ...event, event_id: id } }]),
  );
  if (res.status !== 200) throw new Error(`ingest answered ${res.status}: ${await res.text()}`);
  return id;
}

export async function eventDetail(t: TestServer, project: ProjectRow, id: string): Promise<any> {
  const res = await t.api(`/api/projects/${project.slug}/events/${id}`);
  if (res.status !== 200) throw new Error(`event detail answered ${res.status}: ${await res.text()}`);
  return res.json();
}

export async function issueOf(t: TestServer, project: ProjectRow, fingerprint: string): Promise<any> {
  const res = await t.api(`/api/projects/${project.slug}/issues/${fingerprint}`);
  return res.json();
}

/** Waits until `check` holds (background work), failing after `ms`. */
export async function eventually<T>(check: () => Promise<T | null | undefined | false>, ms = 10_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}
