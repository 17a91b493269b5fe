// The real sentry-cli 3.x and 2.x upload real symbol files to the real server: a ProGuard
// mapping built with javac + proguard (`proguard upload` / `upload-proguard`), an esbuild
// bundle (`sourcemaps inject` + `sourcemaps upload`, and `sourcemaps upload --release`
// without debug ids). Each upload lands in symbol storage and symbolicates a real stack
// of the built program. SQLite and PostgreSQL.
import { createHash } from 'node:crypto';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { createProject, PROJECT_DEFAULTS } from '../../src/store/projects.js';
import { SymbolService } from '../../src/symbols/service.js';
import { listSymbolFiles } from '../../src/symbols/storage.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { ok, runCli, type CliTarget, type CliVersion } from './cli.js';

const KEY = 'symbols-upload-key-0123456789abcdef';
let work: string;
let mapping: string;
let mappingUuid: string;
/** Where the minified bundle threw: line and column of `validate`'s throw, from node's stack. */
let thrownAt: { line: number; column: number };

/** uuid5(namespace, bytes), as ProGuard mapping UUIDs are made (sentry-protocol.md §6.7). */
function uuid5(namespace: string, bytes: Uint8Array): string {
  const ns = Buffer.from(namespace.replace(/-/g, ''), 'hex');
  const h = createHash('sha1').update(ns).update(bytes).digest();
  h[6] = (h[6] & 0x0f) | 0x50;
  h[8] = (h[8] & 0x3f) | 0x80;
  const hex = h.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

function buildProguardMapping(dir: string): string {
  const src = path.join(dir, 'java/com/example/app');
  fs.mkdirSync(src, { recursive: true });
  fs.writeFileSync(path.join(src, 'Main.java'), 'package com.example.app;\n\npublic class Main {\n    public static void main(String[] args) {\n        new Checkout().pay(args.length);\n    }\n}\n');
  fs.writeFileSync(
    path.join(src, 'Checkout.java'),
    'package com.example.app;\n\npublic class Checkout {\n    public void pay(int amount) {\n        validate(amount);\n    }\n\n    private void validate(int amount) {\n        if (amount >= 0) {\n            throw new IllegalStateException("payment failed");\n        }\n    }\n}\n',
  );
  const classes = path.join(dir, 'classes');
  execFileSync('javac', ['--release', '8', '-nowarn', '-g', '-d', classes, path.join(src, 'Main.java'), path.join(src, 'Checkout.java')], { stdio: 'pipe' });
  execFileSync('jar', ['cf', path.join(dir, 'app.jar'), '-C', classes, '.'], { stdio: 'pipe' });
  const out = path.join(dir, 'mapping.txt');
  fs.writeFileSync(
    path.join(dir, 'rules.pro'),
    [
      `-injars ${path.join(dir, 'app.jar')}`,
      `-outjars ${path.join(dir, 'app-min.jar')}`,
      '-keep public class com.example.app.Main { public static void main(java.lang.String[]); }',
      '-keepattributes SourceFile,LineNumberTable',
      '-dontoptimize',
      '-dontshrink',
      '-dontwarn',
      '-ignorewarnings',
      `-printmapping ${out}`,
    ].join('\n'),
  );
  execFileSync('proguard', [`@${path.join(dir, 'rules.pro')}`], { stdio: 'pipe' });
  return out;
}

/** An esbuild bundle with its source map in `dir/dist` (app.min.js, app.min.js.map). */
async function buildBundle(dir: string): Promise<string> {
  const { build } = await import('esbuild');
  fs.mkdirSync(path.join(dir, 'src'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'src/cart.js'), 'export function validateCart(items) {\n  if (items.length === 0) {\n    throw new Error("cart is empty");\n  }\n  return items.length;\n}\n');
  fs.writeFileSync(path.join(dir, 'src/app.js'), 'import { validateCart } from "./cart.js";\n\nexport function checkout(items) {\n  return validateCart(items);\n}\n\ncheckout([]);\n');
  const dist = path.join(dir, 'dist');
  await build({ entryPoints: [path.join(dir, 'src/app.js')], bundle: true, minify: true, sourcemap: true, outfile: path.join(dist, 'app.min.js'), logLevel: 'silent' });
  return dist;
}

beforeAll(async () => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-uploads-'));
  mapping = buildProguardMapping(path.join(work, 'proguard'));
  mappingUuid = uuid5('4f44f30f-24be-53d0-bab6-f47c7120ad6c', fs.readFileSync(mapping));
  const dist = await buildBundle(path.join(work, 'web'));
  // The real stack of the minified program: where the bundle throws.
  const run = spawnSync(process.execPath, [path.join(dist, 'app.min.js')], { encoding: 'utf8' });
  const m = /app\.min\.js:(\d+):(\d+)/.exec(run.stderr);
  if (!m) throw new Error(`the bundle did not throw as expected: ${run.stderr}`);
  thrownAt = { line: Number(m[1]), column: Number(m[2]) };
}, 60_000);

afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

/** A fresh copy of the built bundle (inject rewrites files in place). */
function bundleCopy(name: string): string {
  const to = path.join(work, name);
  fs.cpSync(path.join(work, 'web/dist'), to, { recursive: true });
  return to;
}

describe.each(dialects)('sentry-cli uploads of real symbol files (%s)', (dialect) => {
  let t: TestServer;
  let service: SymbolService;
  const projects: Record<string, number> = {};

  beforeAll(async () => {
    t = await startTestServer(dialect, { env: { API_KEYS: KEY } });
    for (const slug of ['android-3', 'android-2', 'web-3', 'web-2', 'web-release-3', 'web-release-2']) {
      projects[slug] = Number((await createProject(t.deps.store.db, { ...PROJECT_DEFAULTS, slug, name: slug }, t.clock.now())).id);
    }
    service = new SymbolService({ store: t.deps.store, clock: t.clock, logger: pino({ level: 'silent' }) });
  });
  afterAll(async () => t?.close());

  const target = (project: string): CliTarget => ({ url: t.url, token: KEY, project });
  const files = (project: string) => listSymbolFiles(t.deps.store.db, projects[project]);

  const javaEvent = {
    platform: 'java',
    release: '',
    dist: '',
    images: [] as Record<string, unknown>[],
    exceptions: [
      {
        type: 'IllegalStateException',
        module: 'java.lang',
        value: 'payment failed',
        frames: [
          { module: 'com.example.app.Main', function: 'main', lineno: 5, in_app: true },
          { module: 'com.example.app.a', function: 'a', lineno: 5, in_app: true },
          { module: 'com.example.app.a', function: 'b', lineno: 10, in_app: true },
        ],
      },
    ],
  };

  it.each([
    ['3', ['proguard', 'upload']],
    ['2', ['upload-proguard']],
  ] as [CliVersion, string[]][])('a ProGuard mapping uploads and deobfuscates (%s.x)', async (v, command) => {
    const slug = `android-${v}`;
    const res = ok(await runCli(v, target(slug), [...command, mapping]));
    expect(res.stdout + res.stderr).toContain(mappingUuid);
    const stored = await files(slug);
    expect(stored.map((f) => [f.kind, f.debug_id])).toEqual([['proguard', mappingUuid]]);
    // Uploading again keeps one file.
    ok(await runCli(v, target(slug), [...command, mapping]));
    expect(await files(slug)).toHaveLength(1);

    const out = await service.symbolicate(projects[slug], { ...javaEvent, images: [{ type: 'proguard', uuid: mappingUuid }] });
    expect(out?.frames[0]?.map((f) => `${f.module}.${f.function}`)).toEqual(['com.example.app.Main.main', 'com.example.app.Checkout.pay', 'com.example.app.Checkout.validate']);
  });

  it('upload-proguard --app-id associates the mapping with the release (2.x, build plugins)', async () => {
    ok(await runCli('2', target('android-2'), ['upload-proguard', '--app-id', 'com.example.app', '--version', '1.2', '--version-code', '12', mapping]));
    const rows = await t.deps.store.db.selectFrom('proguard_releases').selectAll().where('project_id', '=', projects['android-2']).execute();
    expect(rows.map((r) => [r.release, r.proguard_uuid])).toEqual([['com.example.app@1.2+12', mappingUuid]]);
  });

  it.each(['3', '2'] as const)('sourcemaps inject + upload stores the map under its debug id and maps the real stack (%s.x)', async (v) => {
    const slug = `web-${v}`;
    const dir = bundleCopy(`inject-${v}-${dialect}`);
    ok(await runCli(v, target(slug), ['sourcemaps', 'inject', dir]));
    const injected = fs.readFileSync(path.join(dir, 'app.min.js'), 'utf8');
    const debugId = /\/\/# debugId=([0-9a-f-]{36})/.exec(injected)![1];
    // --wait polls the assemble state until it is final.
    ok(await runCli(v, target(slug), ['sourcemaps', 'upload', '--wait', dir]));
    const stored = await files(slug);
    expect(stored.map((f) => [f.kind, f.debug_id, f.filename])).toEqual([['sourcemap', debugId, '~/app.min.js.map']]);

    // The injected snippet shifts the code: find the throw in the injected file by running it.
    const run = spawnSync(process.execPath, [path.join(dir, 'app.min.js')], { encoding: 'utf8' });
    const [, line, column] = /app\.min\.js:(\d+):(\d+)/.exec(run.stderr)!;
    const out = await service.symbolicate(projects[slug], {
      platform: 'javascript',
      release: '',
      dist: '',
      images: [{ type: 'sourcemap', code_file: 'https://shop.example.com/app.min.js', debug_id: debugId }],
      exceptions: [{ type: 'Error', value: 'cart is empty', frames: [{ abs_path: 'https://shop.example.com/app.min.js', lineno: Number(line), colno: Number(column), in_app: true }] }],
    });
    const frame = out?.frames[0]?.[0];
    expect(frame?.lineno).toBe(3);
    expect(String(frame?.abs_path ?? frame?.filename)).toContain('cart.js');
  });

  it.each(['3', '2'] as const)('sourcemaps upload --release without debug ids matches by release and file name (%s.x)', async (v) => {
    const slug = `web-release-${v}`;
    const release = `shop@${v}.1.0`;
    ok(await runCli(v, target(slug), ['releases', 'new', release]));
    ok(await runCli(v, target(slug), ['sourcemaps', 'upload', '--release', release, bundleCopy(`release-${v}-${dialect}`)]));
    const stored = await files(slug);
    expect(stored.map((f) => [f.kind, f.release, f.debug_id, f.serves])).toEqual([['sourcemap', release, '', '~/app.min.js']]);
    const out = await service.symbolicate(projects[slug], {
      platform: 'javascript',
      release,
      dist: '',
      images: [],
      exceptions: [{ type: 'Error', value: 'cart is empty', frames: [{ abs_path: 'https://shop.example.com/app.min.js', lineno: thrownAt.line, colno: thrownAt.column, in_app: true }] }],
    });
    expect(out?.frames[0]?.[0]?.lineno).toBe(3);
  });
});
