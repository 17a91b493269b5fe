// Test support for the CLI: makes sure dist/ is built from the current sources,
// runs `faultline` commands as real processes and reads their JSON log lines.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const CLI = path.join(REPO, 'dist/cli/main.js');

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(full) : fs.statSync(full).mtimeMs);
  }
  return newest;
}

/** Builds dist/ when it is missing or older than src/ (npm test's pretest normally did it already). */
export function ensureBuilt(): void {
  const built = fs.existsSync(CLI) ? fs.statSync(CLI).mtimeMs : 0;
  if (built >= newestMtime(path.join(REPO, 'src'))) return;
  const result = spawnSync(
    process.execPath,
    [path.join(REPO, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'],
    {
      cwd: REPO,
      encoding: 'utf8',
    },
  );
  if (!fs.existsSync(CLI)) throw new Error(`build failed:\n${result.stdout}\n${result.stderr}`);
}

/** The environment of a child: this one's, minus faultline settings, plus `env`. */
export function childEnv(env: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = { ...process.env };
  for (const k of [
    'DATABASE_URL',
    'PORT',
    'HOST',
    'API_KEYS',
    'PUBLIC_URL',
    'RATE_LIMIT',
    'LOG_LEVEL',
    'RETENTION_DAYS',
    'CORS_ORIGIN',
  ])
    delete base[k];
  const merged = { ...base, ...env };
  for (const [k, v] of Object.entries(merged)) if (v === undefined) delete merged[k];
  return merged;
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `faultline <args>` to completion, with `input` on its standard input when given. */
export function runCli(
  args: string[],
  env: Record<string, string | undefined> = {},
  cwd = REPO,
  input?: string,
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd,
      env: childEnv(env),
      stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    if (input !== undefined) {
      // A command that refuses its input exits before reading all of it.
      child.stdin!.on('error', () => {});
      child.stdin!.end(input);
    }
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d) => (stdout += d));
    child.stderr!.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

export interface ServeProcess {
  child: ChildProcess;
  url: string;
  /** Every JSON log line so far. */
  lines: Record<string, any>[];
  stderr(): string;
  /** Resolves with the exit code once the process has ended. */
  exited: Promise<number | null>;
  /** Sends a signal (to the whole process group when started with `group`). */
  signal(sig: NodeJS.Signals): void;
}

export interface ServeOptions {
  env?: Record<string, string | undefined>;
  cwd?: string;
  /** Command to run instead of `node dist/cli/main.js serve` (e.g. npm start). */
  command?: [string, string[]];
}

/** Starts `faultline serve` and resolves once it logged that it listens, or rejects when it exits first. */
export function startServe(options: ServeOptions = {}): Promise<ServeProcess> {
  const [cmd, args] = options.command ?? [process.execPath, [CLI, 'serve']];
  const group = options.command !== undefined;
  const child = spawn(cmd, args, {
    cwd: options.cwd ?? REPO,
    env: childEnv({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...options.env }),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: group,
  });
  const lines: Record<string, any>[] = [];
  let stderr = '';
  let buffered = '';
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      // A server that never said it listens would otherwise outlive the test run.
      child.kill('SIGKILL');
      reject(new Error(`serve did not start in time; stderr:\n${stderr}`));
    }, 30_000);
    child.stderr!.on('data', (d) => (stderr += d));
    child.stdout!.on('data', (d) => {
      buffered += d;
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        if (!line.startsWith('{')) continue;
        const parsed = JSON.parse(line);
        lines.push(parsed);
        if (typeof parsed.msg === 'string' && parsed.msg.includes('listening on') && parsed.url) {
          clearTimeout(timer);
          resolve({
            child,
            url: parsed.url,
            lines,
            stderr: () => stderr,
            exited,
            signal(sig) {
              if (group) process.kill(-child.pid!, sig);
              else child.kill(sig);
            },
          });
        }
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code} before listening; stderr:\n${stderr}`));
    });
  });
}

/** Waits until a log line matching `match` has arrived (stdout may lag the HTTP response). */
export async function waitForLine(
  serve: ServeProcess,
  match: (line: Record<string, any>) => boolean,
  timeoutMs = 10_000,
): Promise<Record<string, any>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = serve.lines.find(match);
    if (found) return found;
    if (Date.now() > deadline)
      throw new Error(`no matching log line; got:\n${serve.lines.map((l) => JSON.stringify(l)).join('\n')}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
