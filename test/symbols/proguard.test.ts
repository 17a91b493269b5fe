// ProGuard end to end on both databases: a real Java program obfuscated by ProGuard 6,
// its real stack trace sent as the Java SDK sends it, symbolicated at ingest and after
// upload, compared frame by frame with ProGuard's own retrace.jar.
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, dialects, type TestServer } from '../helpers/server.js';
import { makeProject } from '../ingest/helpers.js';
import { buildJavaFixture, javaEvent, type JavaFixture } from './java-fixture.js';
import { eventDetail, eventually, sendEvent, uploadOk, uploadSymbols } from './helpers.js';

let fx: JavaFixture;
let cliUuid: string;

beforeAll(() => {
  fx = buildJavaFixture();
  cliUuid = execFileSync('node_modules/@sentry/cli/bin/sentry-cli', ['proguard', 'uuid', `${fx.dir}/mapping.txt`], {
    encoding: 'utf8',
  }).trim();
}, 60_000);

/** The symbolicated frames innermost first, in the fields retrace prints. */
function innermostFirst(frames: any[]) {
  return [...frames]
    .reverse()
    .map((f) => ({ module: f.module, function: f.function, filename: f.filename, lineno: f.lineno }));
}

describe.each(dialects)('ProGuard symbolication on %s', (dialect) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(dialect);
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  it('the obfuscated trace really is obfuscated and inlined (the fixture proves something)', () => {
    expect(fx.exceptionType).not.toContain('InvalidInputException');
    expect(fx.retracedType).toBe('com.example.app.InvalidInputException');
    expect(fx.retracedFrames.length).toBeGreaterThan(fx.frames.length);
  });

  it('symbolicates at ingest by the image uuid: frames as retrace.jar gives them, type remapped, issue titled by symbols', async () => {
    const project = await makeProject(t);
    const [file] = await uploadOk(t, project, {
      kind: 'proguard',
      release: 'app@1',
      files: [{ name: 'mapping.txt', data: fx.mapping }],
    });
    expect(file).toMatchObject({
      kind: 'proguard',
      release: 'app@1',
      debug_id: cliUuid,
      filename: 'mapping.txt',
      size: fx.mapping.length,
    });
    const id = await sendEvent(t, project, javaEvent(fx, { release: 'other-release', proguardUuid: cliUuid }));
    const detail = await eventDetail(t, project, id);
    expect(detail.symbolicated).toBe(true);
    const exc = detail.exceptions[0];
    expect(innermostFirst(exc.symbolicated_frames)).toEqual(fx.retracedFrames);
    // The originals stay beside them.
    expect(innermostFirst(exc.stacktrace?.frames ?? exc.frames)).toEqual(fx.frames);
    expect(detail.title).toBe(`InvalidInputException: ${fx.exceptionValue}`);
    // The exception itself reads the original type, not only the title.
    expect(`${exc.module}.${exc.type}`).toBe(fx.retracedType);
    // The dashboard's event page: the original type on the Exceptions line, each frame with its class.
    const html = await (await t.api(`/${project.slug}/events/${detail.id}`)).text();
    expect(html).toContain('<strong>InvalidInputException</strong>');
    for (const f of fx.retracedFrames) expect(html).toContain(`<code>${f.module}.${f.function}</code>`);
    const issue = (await (await t.api(`/api/projects/${project.slug}/issues/${detail.fingerprint}`)).json()) as any;
    expect(issue.title).toBe(`InvalidInputException: ${fx.exceptionValue}`);
    expect(issue.location).toBe('Parser.java:34');
    expect(issue.error_type).toBe('InvalidInputException');
  });

  it('matches by release when the event names no proguard image, and not for another release', async () => {
    const project = await makeProject(t);
    await uploadOk(t, project, {
      kind: 'proguard',
      release: 'app@2',
      files: [{ name: 'mapping.txt', data: fx.mapping }],
    });
    const matched = await eventDetail(t, project, await sendEvent(t, project, javaEvent(fx, { release: 'app@2' })));
    expect(innermostFirst(matched.exceptions[0].symbolicated_frames)).toEqual(fx.retracedFrames);
    const other = await eventDetail(t, project, await sendEvent(t, project, javaEvent(fx, { release: 'app@3' })));
    expect(other.symbolicated).toBe(false);
    expect(other.exceptions[0].symbolicated_frames).toBeNull();
    const wrongUuid = await eventDetail(
      t,
      project,
      await sendEvent(
        t,
        project,
        javaEvent(fx, { release: 'app@2', proguardUuid: '00000000-0000-5000-8000-000000000001' }),
      ),
    );
    expect(wrongUuid.symbolicated).toBe(false);
  });

  it('re-symbolicates events of the release sent before the upload, without moving them to another issue; the issue takes the remapped title', async () => {
    const project = await makeProject(t);
    const before = await eventDetail(t, project, await sendEvent(t, project, javaEvent(fx, { release: 'app@4' })));
    expect(before.symbolicated).toBe(false);
    const old = await eventDetail(
      t,
      project,
      await sendEvent(t, project, javaEvent(fx, { release: 'app@4', timestamp: t.clock.now() - 3 * 86_400_000 })),
    );
    await uploadOk(t, project, {
      kind: 'proguard',
      release: 'app@4',
      files: [{ name: 'mapping.txt', data: fx.mapping }],
    });
    const after = await eventually(async () => {
      const d = await eventDetail(t, project, before.event_id);
      return d.symbolicated ? d : null;
    });
    expect(innermostFirst(after.exceptions[0].symbolicated_frames)).toEqual(fx.retracedFrames);
    expect(`${after.exceptions[0].module}.${after.exceptions[0].type}`).toBe(fx.retracedType);
    expect(after.fingerprint).toBe(before.fingerprint);
    expect(before.title).toMatch(/^a: /);
    expect(after.title).toBe(before.title.replace(/^a: /, 'InvalidInputException: '));
    // Event time does not matter, receive time does: both were received just now.
    expect((await eventDetail(t, project, old.event_id)).symbolicated).toBe(true);
    const issue = await eventually(async () => {
      const i = (await (await t.api(`/api/projects/${project.slug}/issues/${before.fingerprint}`)).json()) as any;
      return i.title === after.title ? i : null;
    });
    expect(issue.event_count).toBe(2);
    // The next crash, symbolicated at ingest, joins the issue.
    const next = await eventDetail(t, project, await sendEvent(t, project, javaEvent(fx, { release: 'app@4' })));
    expect(next.symbolicated).toBe(true);
    const list = (await (await t.api(`/api/projects/${project.slug}/issues`)).json()) as any;
    expect(list.issues.map((i: any) => [i.fingerprint, i.event_count, i.title])).toEqual([
      [before.fingerprint, 3, after.title],
    ]);
  });

  it('replaces a mapping with the same debug id, deletes it, and stops symbolicating once deleted', async () => {
    const project = await makeProject(t);
    const [first] = await uploadOk(t, project, {
      kind: 'proguard',
      release: 'app@5',
      files: [{ name: 'mapping.txt', data: fx.mapping }],
    });
    const [second] = await uploadOk(t, project, {
      kind: 'proguard',
      release: 'app@6',
      files: [{ name: 'mapping.txt', data: fx.mapping }],
    });
    const list = (await (await t.api(`/api/projects/${project.slug}/symbols`)).json()) as any;
    expect(list.symbols.map((s: any) => s.id)).toEqual([second.id]);
    expect(first.id).not.toBe(second.id);
    expect((await t.api(`/api/projects/${project.slug}/symbols/${second.id}`, { method: 'DELETE' })).status).toBe(204);
    expect((await t.api(`/api/projects/${project.slug}/symbols/${second.id}`, { method: 'DELETE' })).status).toBe(404);
    expect(((await (await t.api(`/api/projects/${project.slug}/symbols`)).json()) as any).symbols).toEqual([]);
    const d = await eventDetail(
      t,
      project,
      await sendEvent(t, project, javaEvent(fx, { release: 'app@6', proguardUuid: cliUuid })),
    );
    expect(d.symbolicated).toBe(false);
  });

  it('takes the debug id the uploader names (proguard/<uuid>.txt in a zip)', async () => {
    const project = await makeProject(t);
    const { zipSync } = await import('fflate');
    const named = '2f8c3d4e-1111-4222-8333-444455556666';
    const zip = zipSync({
      [`proguard/${named}.txt`]: new Uint8Array(fx.mapping),
      'README.md': new TextEncoder().encode('not a mapping'),
    });
    const files = await uploadOk(t, project, {
      kind: 'proguard',
      release: 'app@7',
      files: [{ name: 'mappings.zip', data: zip }],
    });
    expect(files.map((f) => [f.filename, f.debug_id])).toEqual([[`proguard/${named}.txt`, named]]);
  });

  it('refuses files that are not ProGuard mappings, and stores nothing', async () => {
    const project = await makeProject(t);
    const cases: [string, string | Uint8Array][] = [
      ['notes.txt', 'hello world\nthis is not a mapping\n'],
      ['broken.txt', `${fx.mapping.toString('utf8')}\n    this line -> does not parse ( :\n`],
      ['binary.txt', new Uint8Array([0xcf, 0xfa, 0xed, 0xfe, 0xff, 0xfe, 0, 1, 2])],
      ['empty.txt', ''],
    ];
    for (const [name, data] of cases) {
      const res = await uploadSymbols(t, project, { kind: 'proguard', release: 'bad', files: [{ name, data }] });
      expect(res.status, name).toBe(400);
      expect(((await res.json()) as any).error, name).toEqual(expect.any(String));
    }
    // One good file and one bad in the same form: neither is stored.
    const mixed = await uploadSymbols(t, project, {
      kind: 'proguard',
      release: 'bad',
      files: [
        { name: 'mapping.txt', data: fx.mapping },
        { name: 'notes.txt', data: 'not a mapping' },
      ],
    });
    expect(mixed.status).toBe(400);
    const res = await uploadSymbols(t, project, {
      kind: 'bogus',
      release: 'bad',
      files: [{ name: 'mapping.txt', data: fx.mapping }],
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error).toBe(
      'kind must be one of proguard, sourcemap, dsym, elf, breakpad, dartsymbolmap, sourcebundle',
    );
    const dsym = await uploadSymbols(t, project, {
      kind: 'dsym',
      release: 'bad',
      files: [{ name: 'App.dSYM.zip', data: 'x' }],
    });
    expect(dsym.status).toBe(400);
    const list = await t.api(`/api/projects/${project.slug}/symbols`);
    expect(list.status).toBe(200);
    expect(((await list.json()) as any).symbols).toEqual([]);
    const rows = await t.deps.store.db
      .selectFrom('symbol_files')
      .select('id')
      .where('project_id', '=', project.id)
      .execute();
    expect(rows).toEqual([]);
    // No chunk is left behind by a refused file: every chunk belongs to a stored file.
    const orphans = await t.deps.store.db
      .selectFrom('symbol_chunks')
      .select('file_id')
      .where('file_id', 'not in', t.deps.store.db.selectFrom('symbol_files').select('id'))
      .execute();
    expect(orphans).toEqual([]);
  });
});
