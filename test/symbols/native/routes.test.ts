// dSYMs through the real server on both databases: a zipped .dSYM bundle uploaded on the
// symbols route becomes one file per slice named by LC_UUID; an iOS event sent through the
// real ingest route comes back with its frames symbolicated as llvm-symbolizer says; an
// upload re-symbolicates the release's earlier events; bad files are 400 and store nothing.
import { zipSync } from 'fflate';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, dialects, type TestServer } from '../../helpers/server.js';
import { makeProject } from '../../ingest/helpers.js';
import { eventDetail, eventually, sendEvent, uploadOk, uploadSymbols } from '../helpers.js';
import { buildIosFixture, CODE_FILE, expectLlvmFrames, iosEvent, slid, type IosFixture } from './ios-fixture.js';

let fx: IosFixture;

beforeAll(() => {
  fx = buildIosFixture();
});

describe.each(dialects)('dSYM upload and symbolication on %s', (dialect) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(dialect);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('a zipped .dSYM bundle holding a fat Mach-O: one symbol file per slice, by LC_UUID', async () => {
    const project = await makeProject(t);
    const files = await uploadOk(t, project, {
      kind: 'dsym',
      release: 'app@1.0',
      files: [{ name: 'App.app.dSYM.zip', data: zipSync(fx.bundle) }],
    });
    expect(files.map((f) => [f.filename, f.debug_id]).sort()).toEqual([
      ['App (arm64)', fx.debugIds.arm64],
      ['App (x86_64)', fx.debugIds.x86_64],
    ]);
    expect(files.every((f) => f.kind === 'dsym' && f.release === 'app@1.0')).toBe(true);
    // Each slice is stored as its own bytes, not the whole universal file.
    expect(files.reduce((n, f) => n + f.size, 0)).toBeLessThan(
      fx.bundle['App.app.dSYM/Contents/Resources/DWARF/App'].length,
    );
  });

  it('a fat dSYM uploaded with a debug id named by the uploader: each slice keeps its own LC_UUID', async () => {
    const project = await makeProject(t);
    const fat = fx.bundle['App.app.dSYM/Contents/Resources/DWARF/App'];
    const rows = await t.deps.symbols!.upload(
      {
        projectId: Number(project.id),
        kind: 'dsym',
        release: 'app@2.0',
        dist: '',
        filename: 'App',
        debugId: fx.debugIds.arm64,
      },
      [fat],
    );
    expect(rows.map((r) => [r.filename, r.debug_id]).sort()).toEqual([
      ['App (arm64)', fx.debugIds.arm64],
      ['App (x86_64)', fx.debugIds.x86_64],
    ]);
  });

  it('an iOS crash sent through the ingest route is symbolicated before grouping: functions, files, lines, inlined frames', async () => {
    const project = await makeProject(t);
    await uploadOk(t, project, {
      kind: 'dsym',
      release: 'app@1.0',
      files: [{ name: 'App', data: fx.bundle['App.app.dSYM/Contents/Resources/DWARF/App'] }],
    });
    const detail = await eventDetail(t, project, await sendEvent(t, project, iosEvent(fx, 'app@1.0')));
    expect(detail.symbolicated).toBe(true);
    const frames = detail.exceptions[0].symbolicated_frames;
    expectLlvmFrames(fx, frames);
    // The SDK's fields stay; the original frames stay beside the symbolicated ones.
    expect(frames.at(-1).instruction_addr).toBe(slid(fx.crashAddr));
    expect(frames[0].package).toBe(CODE_FILE);
    const original = detail.exceptions[0].stacktrace?.frames ?? detail.exceptions[0].frames;
    expect(original.at(-1).function).toBe('<redacted>');
    expect(original).toHaveLength(fx.callerAddrs.length + 1);
  });

  it('an upload re-symbolicates the events of its release sent before it', async () => {
    const project = await makeProject(t);
    const before = await eventDetail(t, project, await sendEvent(t, project, iosEvent(fx, 'app@2.0')));
    expect(before.symbolicated).toBe(false);
    await uploadOk(t, project, {
      kind: 'dsym',
      release: 'app@2.0',
      files: [{ name: 'App.app.dSYM.zip', data: zipSync(fx.bundle) }],
    });
    const after = await eventually(async () => {
      const d = await eventDetail(t, project, before.event_id);
      return d.symbolicated ? d : null;
    });
    expectLlvmFrames(fx, after.exceptions[0].symbolicated_frames);
  });

  it('refuses what is not a dSYM with 400 and stores nothing', async () => {
    const project = await makeProject(t);
    const fat10000 = new Uint8Array(8 + 20 * 10_000);
    new DataView(fat10000.buffer).setUint32(0, 0xcafebabe);
    new DataView(fat10000.buffer).setUint32(4, 10_000);
    const truncated = fx.bundle['App.app.dSYM/Contents/Resources/DWARF/App'].slice(0, 3000);
    const cases: [string, Uint8Array | string][] = [
      ['notes.txt', 'not a Mach-O'],
      ['Fat', fat10000],
      ['Truncated', truncated],
      ['Empty.dSYM.zip', zipSync({ 'Empty.dSYM/Contents/Info.plist': new TextEncoder().encode('<plist/>') })],
    ];
    for (const [name, data] of cases) {
      const res = await uploadSymbols(t, project, { kind: 'dsym', release: 'bad', files: [{ name, data }] });
      expect(res.status, name).toBe(400);
      expect(((await res.json()) as any).error, name).toEqual(expect.any(String));
    }
    expect(((await (await t.api(`/api/projects/${project.slug}/symbols`)).json()) as any).symbols).toEqual([]);
  });
});
