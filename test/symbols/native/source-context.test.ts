// Source context from source bundles the real sentry-cli makes, through the real server on
// both databases: `debug-files bundle-sources` of the ELF fixture (compiled with its
// folder recorded as `.`) gives a native frame symbolicated from the ELF its source lines;
// `debug-files bundle-jvm` gives a Java frame of a `jvm` image its lines, by class.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readElf, readElfSymbols } from '../../../src/symbols/native/elf.js';
import { startTestServer, dialects, type TestServer } from '../../helpers/server.js';
import { makeProject } from '../../ingest/helpers.js';
import { eventDetail, sendEvent, uploadOk } from '../helpers.js';
import { fixtureDebugId } from '../../uploads/build-id.js';
import { CLIS } from '../../uploads/cli.js';

const FIXTURES = path.resolve('test/fixtures');
const JVM_ID = '7f8e3c52-1d4b-4e2a-9b1c-0a1b2c3d4e5f';
const CHECKOUT = [
  'package com.acme.shop;',
  '',
  'public class Checkout {',
  '  public void pay() {',
  '    throw new IllegalStateException("declined");',
  '  }',
  '}',
  '',
].join('\n');
let work: string;
let elf: Uint8Array;
let nativeBundle: Uint8Array;
let jvmBundle: Uint8Array;

const cli = (args: string[], cwd: string) =>
  execFileSync(CLIS['3'], args, {
    cwd,
    env: { ...process.env, SENTRY_ORG: 'o', SENTRY_PROJECT: 'p', SENTRY_DISABLE_UPDATE_CHECK: '1' },
    stdio: 'pipe',
  });

beforeAll(() => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-source-context-'));
  fs.copyFileSync(path.join(FIXTURES, 'source-bundle/crash'), path.join(work, 'crash'));
  fs.copyFileSync(path.join(FIXTURES, 'elf/src/crash.c'), path.join(work, 'crash.c'));
  cli(['debug-files', 'bundle-sources', 'crash'], work);
  elf = new Uint8Array(fs.readFileSync(path.join(work, 'crash')));
  nativeBundle = new Uint8Array(fs.readFileSync(path.join(work, 'crash.src.zip')));
  const java = path.join(work, 'src/main/java/com/acme/shop');
  fs.mkdirSync(java, { recursive: true });
  fs.writeFileSync(path.join(java, 'Checkout.java'), CHECKOUT);
  cli(['debug-files', 'bundle-jvm', '--output', 'out', '--debug-id', JVM_ID, 'src'], work);
  jvmBundle = new Uint8Array(fs.readFileSync(path.join(work, 'out', `${JVM_ID}.zip`)));
});
afterAll(() => {
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

describe.each(dialects)('source context from source bundles on %s', (dialect) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(dialect);
  });
  afterAll(async () => t?.close());

  it('a native frame symbolicated from its ELF gets the bundle’s source lines', async () => {
    const project = await makeProject(t);
    const debugId = fixtureDebugId(path.join(FIXTURES, 'source-bundle/build-id.txt'));
    await uploadOk(t, project, { kind: 'elf', release: 'c@1', files: [{ name: 'crash', data: elf }] });
    const [bundle] = await uploadOk(t, project, {
      kind: 'sourcebundle',
      release: 'c@1',
      files: [{ name: 'crash.src.zip', data: nativeBundle }],
    });
    expect(bundle.debug_id).toBe(debugId);
    const parsed = await readElf(elf);
    const crash = readElfSymbols(elf, parsed).find((s) => s.name === 'crash')!;
    const image = 0x5555_0000_0000;
    const id = await sendEvent(t, project, {
      platform: 'native',
      exception: {
        values: [
          {
            type: 'SIGFPE',
            value: 'x',
            stacktrace: { frames: [{ instruction_addr: `0x${(image + crash.addr + 4).toString(16)}` }] },
          },
        ],
      },
      debug_meta: {
        images: [
          {
            type: 'elf',
            debug_id: debugId,
            image_addr: `0x${image.toString(16)}`,
            image_size: 0x10000,
            code_file: '/usr/bin/crash',
          },
        ],
      },
    });
    const [frame] = (await eventDetail(t, project, id)).exceptions[0].symbolicated_frames;
    expect(frame).toMatchObject({
      function: 'crash',
      lineno: 1,
      context_line: 'int crash(int x) { return 10 / x; }',
      pre_context: [],
      post_context: ['int main(int argc, char **argv) { return crash(argc - 1); }', ''],
    });
  });

  it('a Java frame of a jvm image gets its class’s source lines', async () => {
    const project = await makeProject(t);
    await uploadOk(t, project, {
      kind: 'sourcebundle',
      release: 'a@1',
      files: [{ name: 'sources.zip', data: jvmBundle }],
    });
    const id = await sendEvent(t, project, {
      platform: 'java',
      exception: {
        values: [
          {
            type: 'IllegalStateException',
            module: 'java.lang',
            value: 'declined',
            stacktrace: {
              frames: [
                {
                  module: 'com.acme.shop.Checkout',
                  function: 'pay',
                  filename: 'Checkout.java',
                  lineno: 5,
                  in_app: true,
                },
              ],
            },
          },
        ],
      },
      debug_meta: { images: [{ type: 'jvm', debug_id: JVM_ID }] },
    });
    const [frame] = (await eventDetail(t, project, id)).exceptions[0].symbolicated_frames;
    expect(frame).toMatchObject({
      context_line: '    throw new IllegalStateException("declined");',
      pre_context: CHECKOUT.split('\n').slice(0, 4),
      post_context: CHECKOUT.split('\n').slice(5),
    });
  });
});
