// Thread stacks are symbolicated like the exceptions' on both databases: the sentry-java
// crash of test/fixtures/event-shapes (three threads, the crashed `main` not first, its
// frames obfuscated by the ProGuard fixture of test/fixtures/java) gets its threads'
// frames retraced at ingest and by re-symbolication after a later upload; the detail keeps
// them beside the frames as received, and the event page shows both.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { makeProject } from '../ingest/helpers.js';
import { eventDetail, eventually, sendEvent, uploadOk } from './helpers.js';

const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures');
const mapping = fs.readFileSync(path.join(FIXTURES, 'java/mapping.txt'));
const javaEvent = (): Record<string, unknown> =>
  JSON.parse(fs.readFileSync(path.join(FIXTURES, 'event-shapes/java-threads-event.json'), 'utf8'));
const RELEASE = 'com.example.app@1.0.0+1';

/** The crashed thread's frames as retrace.jar reads them (test/fixtures/java/retraced.txt), oldest call first. */
const RETRACED_MAIN = [
  'java.lang.Thread.run',
  'com.example.app.Main.main',
  'com.example.app.Main.run',
  'com.example.app.Repository.load',
  'com.example.app.Parser.parse',
  'com.example.app.Parser.validate',
];

const names = (frames: { module?: string; function?: string }[]) => frames.map((f) => `${f.module}.${f.function}`);

function checkThreads(detail: any) {
  const [main, finalizer, okhttp] = detail.threads;
  expect(main).toMatchObject({ name: 'main', crashed: true });
  expect(names(main.symbolicated_frames)).toEqual(RETRACED_MAIN);
  expect(main.symbolicated_frames.at(-1)).toMatchObject({ filename: 'Parser.java', lineno: 34 });
  // The frames as received stay beside them.
  expect(names(main.frames)).toEqual(['java.lang.Thread.run', 'com.example.app.Main.main', 'com.example.app.c.a']);
  // Threads without obfuscated frames are unchanged.
  expect(finalizer.symbolicated_frames).toBeNull();
  expect(okhttp.symbolicated_frames).toBeNull();
}

describe.each(dialects)('thread symbolication on %s', (dialect) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(dialect);
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  it('retraces the crashed thread at ingest, and the event page shows it', async () => {
    const p = await makeProject(t);
    await uploadOk(t, p, { kind: 'proguard', release: RELEASE, files: [{ name: 'mapping.txt', data: mapping }] });
    const detail = await eventDetail(t, p, await sendEvent(t, p, javaEvent()));
    checkThreads(detail);
    const html = await (await t.api(`/${p.slug}/events/${detail.id}`)).text();
    const threads = html.slice(html.indexOf('<h3>Threads'));
    expect(threads).toContain('Symbolicated');
    expect(threads).toContain('<code>com.example.app.Parser.validate</code>');
  });

  it('retraces threads of events stored before the mapping arrived', async () => {
    const p = await makeProject(t);
    const id = await sendEvent(t, p, javaEvent());
    expect((await eventDetail(t, p, id)).threads[0].symbolicated_frames).toBeNull();
    await uploadOk(t, p, { kind: 'proguard', release: RELEASE, files: [{ name: 'mapping.txt', data: mapping }] });
    const detail = await eventually(async () => {
      const d = await eventDetail(t, p, id);
      return d.threads[0].symbolicated_frames ? d : null;
    });
    checkThreads(detail);
  });
});
