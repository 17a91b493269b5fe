// A real minified JavaScript bundle with its source map, built by esbuild, for the
// sentry-cli source-map tests on both editions: where it throws, from node's own stack,
// and a browser-SDK-shaped event for that throw.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export interface ThrowSite {
  line: number;
  column: number;
}

/** An esbuild bundle with its source map in `dir/dist` (app.min.js, app.min.js.map). */
export async function buildBundle(dir: string): Promise<string> {
  const { build } = await import('esbuild');
  fs.mkdirSync(path.join(dir, 'src'), { recursive: true });
  fs.writeFileSync(
    path.join(dir, 'src/cart.js'),
    'export function validateCart(items) {\n  if (items.length === 0) {\n    throw new Error("cart is empty");\n  }\n  return items.length;\n}\n',
  );
  fs.writeFileSync(
    path.join(dir, 'src/app.js'),
    'import { validateCart } from "./cart.js";\n\nexport function checkout(items) {\n  return validateCart(items);\n}\n\ncheckout([]);\n',
  );
  const dist = path.join(dir, 'dist');
  await build({
    entryPoints: [path.join(dir, 'src/app.js')],
    bundle: true,
    minify: true,
    sourcemap: true,
    outfile: path.join(dist, 'app.min.js'),
    logLevel: 'silent',
  });
  return dist;
}

/** Where a built (or injected) bundle throws: line and column of the throw, from node's stack. */
export function throwSite(file: string): ThrowSite {
  const run = spawnSync(process.execPath, [file], { encoding: 'utf8' });
  const m = /app\.min\.js:(\d+):(\d+)/.exec(run.stderr);
  if (!m) throw new Error(`the bundle did not throw as expected: ${run.stderr}`);
  return { line: Number(m[1]), column: Number(m[2]) };
}

/** A fresh copy of a built bundle's `dist` (sentry-cli's inject rewrites files in place). */
export function bundleCopy(dist: string, to: string): string {
  fs.cpSync(dist, to, { recursive: true });
  return to;
}

/** A browser-SDK-shaped event for the bundle's throw at `at` of `url`. */
export function jsEvent(
  url: string,
  at: ThrowSite,
  opts: { release?: string; debugId?: string },
): Record<string, unknown> {
  return {
    platform: 'javascript',
    level: 'error',
    ...(opts.release ? { release: opts.release } : {}),
    exception: {
      values: [
        {
          type: 'Error',
          value: 'cart is empty',
          stacktrace: {
            frames: [{ filename: url, abs_path: url, function: 'e', lineno: at.line, colno: at.column, in_app: true }],
          },
        },
      ],
    },
    ...(opts.debugId
      ? { debug_meta: { images: [{ type: 'sourcemap', code_file: url, debug_id: opts.debugId }] } }
      : {}),
  };
}
