// Minidumps through the real server on both databases: a real Breakpad-client crash
// (test/fixtures/breakpad) uploaded as Breakpad and Crashpad clients do (multipart
// `upload_file_minidump` with `sentry[...]` fields, or a `sentry` JSON field) and sent
// as an envelope's `event.minidump` attachment becomes a fatal SIGSEGV event: the crashed
// thread's frames walked as minidump_stackwalk walks them (trust included) and
// symbolicated from the uploaded .sym, every thread, the modules as debug images. A file
// that is not a minidump is 400 on the upload route; an envelope with one keeps its own event.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, dialects, type TestServer } from '../helpers/server.js';
import { eventId, makeProject, post } from '../ingest/helpers.js';
import { eventDetail, uploadOk } from '../symbols/helpers.js';
import type { ProjectRow } from '../../src/store/schema.js';
import { BREAKPAD_FIXTURES, stackwalkThreads } from './fixture.js';

/** An envelope of an event and a minidump attachment (length-prefixed, as SDKs send binary items). */
function minidumpEnvelope(id: string, event: object, dump: Uint8Array, filename = 'crash.dmp'): Buffer {
  const payload = Buffer.from(JSON.stringify(event));
  return Buffer.concat([
    Buffer.from(`${JSON.stringify({ event_id: id })}\n${JSON.stringify({ type: 'event', length: payload.length })}\n`),
    payload,
    Buffer.from(
      `\n${JSON.stringify({ type: 'attachment', length: dump.byteLength, attachment_type: 'event.minidump', filename })}\n`,
    ),
    Buffer.from(dump),
  ]);
}

const read = (name: string) => new Uint8Array(fs.readFileSync(path.join(BREAKPAD_FIXTURES, name)));

function uploadMinidump(
  t: TestServer,
  project: ProjectRow,
  dump: Uint8Array,
  fields: Record<string, string>,
  key = project.dsn_key,
): Promise<Response> {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  form.append('upload_file_minidump', new Blob([Buffer.from(dump)]), 'crash.dmp');
  return fetch(`${t.url}/api/${project.id}/minidump/?sentry_key=${key}`, { method: 'POST', body: form });
}

/** minidump_stackwalk's crashed thread, oldest call first as events hold frames. */
function expectedCrashedThread() {
  const [crashed] = stackwalkThreads(fs.readFileSync(path.join(BREAKPAD_FIXTURES, 'crash.stackwalk-full.txt'), 'utf8'));
  return [...crashed].reverse().map(([instruction_addr, trust]) => ({ instruction_addr, trust }));
}

async function expectCrash(t: TestServer, project: ProjectRow, id: string) {
  const detail = await eventDetail(t, project, id);
  const exception = detail.exceptions[0];
  expect(exception.type).toBe('SIGSEGV');
  expect(exception.value).toBe('Fatal Error: SIGSEGV / SEGV_MAPERR at 0x0');
  const frames = exception.stacktrace?.frames ?? exception.frames;
  expect(frames.map((f: any) => ({ instruction_addr: f.instruction_addr, trust: f.trust }))).toEqual(
    expectedCrashedThread(),
  );
  // Symbolicated from the uploaded .sym: the crash two calls deep.
  const names = detail.exceptions[0].symbolicated_frames.map((f: any) => f.function).filter(Boolean);
  expect(names.slice(-3)).toEqual(['main', 'middle', 'crash_here']);
  return detail;
}

describe.each(dialects)('minidumps on %s', (dialect) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(dialect);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('the minidump route: walked, symbolicated, with the sentry[...] fields as event data', async () => {
    const project = await makeProject(t);
    await uploadOk(t, project, {
      kind: 'breakpad',
      release: 'crasher@1',
      files: [{ name: 'crasher.sym', data: read('crasher.sym') }],
    });
    const res = await uploadMinidump(t, project, read('crash.dmp'), {
      'sentry[release]': 'crasher@1',
      'sentry[tags][flavour]': 'breakpad',
      'sentry[user][id]': 'u1',
    });
    expect(res.status).toBe(200);
    const { id } = (await res.json()) as { id: string };
    const detail = await expectCrash(t, project, id);
    expect(detail.release).toBe('crasher@1');
    expect(detail.level).toBe('fatal');
  });

  it('with the program uploaded as an ELF file instead: its .eh_frame walks the crash, its symbol table names it', async () => {
    const project = await makeProject(t);
    await uploadOk(t, project, {
      kind: 'elf',
      release: 'crasher@1',
      files: [{ name: 'crasher', data: read('crasher') }],
    });
    const res = await uploadMinidump(t, project, read('crash.dmp'), { 'sentry[release]': 'crasher@1' });
    expect(res.status).toBe(200);
    const detail = await eventDetail(t, project, ((await res.json()) as { id: string }).id);
    const exception = detail.exceptions[0];
    const frames = [...(exception.stacktrace?.frames ?? exception.frames)].reverse();
    expect(frames.slice(0, 4).map((f: any) => ({ instruction_addr: f.instruction_addr, trust: f.trust }))).toEqual(
      [...expectedCrashedThread()].reverse().slice(0, 4),
    );
    const names = exception.symbolicated_frames.map((f: any) => f.function).filter(Boolean);
    expect(names.slice(-3)).toEqual(['main', 'middle', 'crash_here']);
  });

  it('a `sentry` JSON field works the same; a file that is not a minidump is 400 and stores nothing', async () => {
    const project = await makeProject(t);
    await uploadOk(t, project, {
      kind: 'breakpad',
      release: 'crasher@1',
      files: [{ name: 'crasher.sym', data: read('crasher.sym') }],
    });
    const res = await uploadMinidump(t, project, read('crash.dmp'), {
      sentry: JSON.stringify({ release: 'crasher@1', environment: 'qa' }),
    });
    expect(res.status).toBe(200);
    await expectCrash(t, project, ((await res.json()) as { id: string }).id);
    for (const bad of [new TextEncoder().encode('not a minidump'), read('crash.dmp').slice(0, 40)]) {
      const refused = await uploadMinidump(t, project, bad, {});
      expect(refused.status).toBe(400);
      expect(((await refused.json()) as any).error).toMatch(/minidump/);
    }
    const wrongKey = await uploadMinidump(t, project, read('crash.dmp'), {}, 'f'.repeat(32));
    expect(wrongKey.status).toBe(401);
  });

  it('an envelope’s event.minidump attachment becomes its event; a broken one leaves the event as sent', async () => {
    const project = await makeProject(t);
    await uploadOk(t, project, {
      kind: 'breakpad',
      release: 'crasher@1',
      files: [{ name: 'crasher.sym', data: read('crasher.sym') }],
    });
    const id = eventId();
    const body = minidumpEnvelope(
      id,
      { event_id: id, release: 'crasher@1', platform: 'native', tags: { via: 'envelope' } },
      read('crash.dmp'),
    );
    expect((await post(t, project, body)).status).toBe(200);
    await expectCrash(t, project, id);

    const other = eventId();
    const broken = minidumpEnvelope(
      other,
      { event_id: other, message: 'kept as sent', platform: 'native' },
      new TextEncoder().encode('MDMP but not really'),
    );
    expect((await post(t, project, broken)).status).toBe(200);
    expect((await eventDetail(t, project, other)).exceptions).toEqual([]);
  });
});
