// ELF files through the real server on both databases: an Android-shaped crash (images of
// type `elf`, a shared object loaded at a random address) sent through the real ingest
// route comes back symbolicated as llvm-symbolizer says, from a split debug file uploaded
// beside its stripped object (both kept, in either order); a non-PIE executable counts
// from its load address; an image named only by its code id is found; an index stored by
// an older format is rebuilt from the stored file; bad files are 400.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { debugIdOfCodeId } from '../../../src/symbols/native/elf.js';
import { NATIVE_INDEX_VERSION } from '../../../src/symbols/native/lookup-index.js';
import { INDEX_PART } from '../../../src/symbols/storage.js';
import { startTestServer, dialects, type TestServer } from '../../helpers/server.js';
import { makeProject } from '../../ingest/helpers.js';
import { eventDetail, sendEvent, uploadOk, uploadSymbols } from '../helpers.js';
import { ELF_FIXTURES, elfAnswers, elfBytes, llvmFrames, textAddresses, type ElfName } from './elf-fixture.js';

const IMAGE_ADDR = 0x7f_3a20_0000;
const hex = (n: number): string => `0x${n.toString(16)}`;

/** A crash address inlined three deep and three caller addresses in C code of `name`. */
function addresses(name: ElfName): { crash: number; callers: number[] } {
  const addrs = textAddresses(name);
  const c = (a: number) => llvmFrames(name, a).every(([fn]) => fn !== '' && !fn.startsWith('_Z'));
  const crash = addrs.find((a) => llvmFrames(name, a).length >= 3 && c(a))!;
  const callers = addrs
    .slice(1)
    .filter((a) => c(a - 1) && llvmFrames(name, a - 1).length === 1)
    .filter((_, i) => i % 40 === 0)
    .slice(0, 3);
  expect(callers).toHaveLength(3);
  return { crash, callers };
}

function androidEvent(
  name: ElfName,
  release: string,
  image: Record<string, unknown>,
  loadAddress = 0,
): Record<string, unknown> {
  const { crash, callers } = addresses(name);
  const slid = (a: number) => hex(a - loadAddress + IMAGE_ADDR);
  return {
    platform: 'native',
    release,
    exception: {
      values: [
        {
          type: 'SIGSEGV',
          value: 'Segfault',
          mechanism: { type: 'signalhandler', handled: false },
          stacktrace: {
            frames: [
              ...callers.map((a) => ({ instruction_addr: slid(a), package: '/data/app/lib/arm64/libapp.so' })),
              { instruction_addr: slid(crash), package: '/data/app/lib/arm64/libapp.so' },
            ],
          },
        },
      ],
    },
    debug_meta: {
      images: [
        {
          type: 'elf',
          image_addr: hex(IMAGE_ADDR),
          image_size: 0x20000,
          code_file: '/data/app/lib/arm64/libapp.so',
          ...image,
        },
        {
          type: 'elf',
          code_id: 'aa'.repeat(20),
          image_addr: '0x7f00000000',
          image_size: 0x1000,
          code_file: '/system/lib64/libc.so',
        },
      ],
    },
  };
}

/** llvm-symbolizer's frames for the event (callers one byte back), in Sentry's order. */
function expected(name: ElfName) {
  const { crash, callers } = addresses(name);
  const chain = (a: number) =>
    [...llvmFrames(name, a)]
      .reverse()
      .map(([fn, file, line]) => ({ function: fn, filename: file.split('/').pop(), abs_path: file, lineno: line }));
  return [...callers.flatMap((a) => chain(a - 1)), ...chain(crash)];
}

const pick = (frames: any[]) =>
  frames.map((f) => ({ function: f.function, filename: f.filename, abs_path: f.abs_path, lineno: f.lineno }));

describe.each(dialects)('ELF upload and symbolication on %s', (dialect) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(dialect);
  });
  afterAll(async () => {
    await t?.close();
  });

  it.each([
    ['debug file first', ['aarch64-split.so.debug', 'aarch64-split.so']],
    ['stripped object first', ['aarch64-split.so', 'aarch64-split.so.debug']],
  ] as const)(
    'a split debug file and its stripped object (%s): both kept, frames from the DWARF one',
    async (_, order) => {
      const project = await makeProject(t);
      for (const name of order)
        await uploadOk(t, project, { kind: 'elf', release: 'app@1', files: [{ name, data: elfBytes(name) }] });
      const listed = ((await (await t.api(`/api/projects/${project.slug}/symbols`)).json()) as any).symbols;
      const debugId = debugIdOfCodeId(elfAnswers().buildIds['aarch64-split.so']!)!;
      expect(listed.map((f: any) => [f.kind, f.debug_id]).sort()).toEqual([
        ['elf', debugId],
        ['elf', debugId],
      ]);
      const id = await sendEvent(
        t,
        project,
        androidEvent('aarch64-split.so', 'app@1', {
          debug_id: debugId,
          code_id: elfAnswers().buildIds['aarch64-split.so'],
        }),
      );
      const detail = await eventDetail(t, project, id);
      expect(detail.symbolicated).toBe(true);
      const frames = detail.exceptions[0].symbolicated_frames;
      expect(pick(frames)).toEqual(expected('aarch64-split.so'));
      expect(frames[0].package).toBe('/data/app/lib/arm64/libapp.so');
      // Uploading the stripped object again replaces only itself.
      await uploadOk(t, project, {
        kind: 'elf',
        release: 'app@1',
        files: [{ name: 'aarch64-split.so', data: elfBytes('aarch64-split.so') }],
      });
      expect(((await (await t.api(`/api/projects/${project.slug}/symbols`)).json()) as any).symbols).toHaveLength(2);
    },
  );

  it('a non-PIE executable counts from its load address; an image named by its code id alone is found', async () => {
    const project = await makeProject(t);
    await uploadOk(t, project, {
      kind: 'elf',
      release: 'app@2',
      files: [{ name: 'crash', data: elfBytes('x86_64-exe') }],
    });
    const id = await sendEvent(
      t,
      project,
      androidEvent('x86_64-exe', 'app@2', { code_id: elfAnswers().buildIds['x86_64-exe'] }, 0x200000),
    );
    const detail = await eventDetail(t, project, id);
    expect(pick(detail.exceptions[0].symbolicated_frames)).toEqual(expected('x86_64-exe'));
  });

  it('a stored index of another format version is rebuilt from the stored file, saved, and symbolicates', async () => {
    const project = await makeProject(t);
    const [file] = await uploadOk(t, project, {
      kind: 'elf',
      release: 'app@3',
      files: [{ name: 'libapp.so', data: elfBytes('aarch64-dwarf4.so') }],
    });
    const db = t.deps.store.db;
    const chunk = async () =>
      (
        await db
          .selectFrom('symbol_chunks')
          .select('data')
          .where('file_id', '=', file.id)
          .where('part', '=', INDEX_PART)
          .where('seq', '=', 0)
          .executeTakeFirstOrThrow()
      ).data;
    // What an older build stored: the same layout under the previous version number.
    const old = new Uint8Array(await chunk());
    new DataView(old.buffer, old.byteOffset).setUint32(4, NATIVE_INDEX_VERSION - 1, true);
    await db
      .updateTable('symbol_chunks')
      .set({ data: old })
      .where('file_id', '=', file.id)
      .where('part', '=', INDEX_PART)
      .where('seq', '=', 0)
      .execute();
    t.deps.symbols!.invalidate(Number(project.id), [file.id]);
    const debugId = debugIdOfCodeId(elfAnswers().buildIds['aarch64-dwarf4.so']!)!;
    const id = await sendEvent(t, project, androidEvent('aarch64-dwarf4.so', 'app@3', { debug_id: debugId }));
    expect(pick((await eventDetail(t, project, id)).exceptions[0].symbolicated_frames)).toEqual(
      expected('aarch64-dwarf4.so'),
    );
    expect(new DataView((await chunk()).buffer, (await chunk()).byteOffset).getUint32(4, true)).toBe(
      NATIVE_INDEX_VERSION,
    );
  });

  it('a Breakpad .sym file symbolicates the frames of its ELF image', async () => {
    const project = await makeProject(t);
    const sym = new Uint8Array(fs.readFileSync(path.resolve(ELF_FIXTURES, '../breakpad/aarch64-dwarf4.so.sym')));
    const [file] = await uploadOk(t, project, {
      kind: 'breakpad',
      release: 'app@4',
      files: [{ name: 'libapp.so.sym', data: sym }],
    });
    const debugId = debugIdOfCodeId(elfAnswers().buildIds['aarch64-dwarf4.so']!)!;
    expect(file.debug_id).toBe(debugId);
    const id = await sendEvent(t, project, androidEvent('aarch64-dwarf4.so', 'app@4', { debug_id: debugId }));
    expect(pick((await eventDetail(t, project, id)).exceptions[0].symbolicated_frames)).toEqual(
      expected('aarch64-dwarf4.so'),
    );
  });

  it('refuses what is not an ELF file with 400 and stores nothing', async () => {
    const project = await makeProject(t);
    const hostile = elfBytes('x86_64-dwarf4.so').slice();
    new DataView(hostile.buffer).setUint16(0x3c, 0xfff0, true); // e_shnum past the file
    for (const [name, data] of [
      ['notes.txt', 'not an ELF'],
      ['truncated.so', elfBytes('x86_64-dwarf4.so').slice(0, 40)],
      ['hostile.so', hostile],
    ] as const) {
      const res = await uploadSymbols(t, project, { kind: 'elf', release: 'bad', files: [{ name, data }] });
      expect(res.status, name).toBe(400);
      expect(((await res.json()) as any).error, name).toEqual(expect.any(String));
    }
    expect(((await (await t.api(`/api/projects/${project.slug}/symbols`)).json()) as any).symbols).toEqual([]);
  });
});
