// `faultline seed [slug]`: fills a project with a week of demo events and
// sessions by sending envelopes to a running server's ingest endpoint, exactly as
// SDKs would (DSN key, gzip bodies), so everything a user then sees went through
// the real ingest path. Creates the project through the management API if needed.
import { gzipSync } from 'node:zlib';
import type { Command } from 'commander';
import { loadConfig } from '../config.js';
import { localBaseUrl } from '../http/public-url.js';
import { parseDsn } from '../ingest/auth.js';
import { buildSeedPlan, type SeedPlan } from '../ingest/seed-data.js';
import { CliError, type CliContext, firstApiKey } from './context.js';

export interface SeedRunOptions {
  slug: string;
  /** The server's base URL, e.g. http://127.0.0.1:8080. */
  url: string;
  apiKey?: string;
  days?: number;
  seed?: number;
  now?: number;
  /** Progress lines (stderr for the CLI). */
  progress?: (line: string) => void;
}

export interface SeedResult {
  projectId: number;
  slug: string;
  created: boolean;
  dsn: string;
  plan: SeedPlan;
  /** Items the server refused (quota); zero when everything was accepted. */
  refused: number;
}

/** A failure printed as one plain line by the CLI. */
export class SeedError extends CliError {}

interface ProjectJson {
  id: number;
  slug: string;
  dsn: string;
}

const MAX_ATTEMPTS = 5;

async function api(base: string, apiKey: string | undefined, path: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  if (apiKey) headers.set('Authorization', `Bearer ${apiKey}`);
  try {
    return await fetch(base + path, { ...init, headers });
  } catch (err) {
    throw new SeedError(
      `cannot reach the server at ${base}: ${(err as Error).message}; is it running (faultline serve) and is --url right?`,
    );
  }
}

async function errorText(res: Response): Promise<string> {
  const text = await res.text();
  try {
    const body = JSON.parse(text) as { error?: string };
    if (body.error) return body.error;
  } catch {
    // not JSON
  }
  return text.slice(0, 200) || res.statusText;
}

async function ensureProject(
  base: string,
  apiKey: string | undefined,
  slug: string,
): Promise<{ project: ProjectJson; created: boolean }> {
  const found = await api(base, apiKey, `/api/projects/${encodeURIComponent(slug)}`);
  if (found.status === 200) return { project: (await found.json()) as ProjectJson, created: false };
  if (found.status === 401)
    throw new SeedError('the management API refused the API key; pass --api-key or set API_KEYS');
  if (found.status !== 404)
    throw new SeedError(`looking up project "${slug}" failed with ${found.status}: ${await errorText(found)}`);
  const res = await api(base, apiKey, '/api/projects', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ slug, name: slug === 'demo' ? 'Demo shop app' : slug, platform: 'react-native' }),
  });
  if (res.status === 201) return { project: (await res.json()) as ProjectJson, created: true };
  if (res.status === 409) {
    // Created by someone else in the meantime.
    const again = await api(base, apiKey, `/api/projects/${encodeURIComponent(slug)}`);
    if (again.status === 200) return { project: (await again.json()) as ProjectJson, created: false };
  }
  throw new SeedError(`creating project "${slug}" failed with ${res.status}: ${await errorText(res)}`);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Posts one envelope; waits out rate limits. Returns false when the daily quota refused it. */
async function send(base: string, projectId: number, key: string, body: string): Promise<boolean> {
  const gz = gzipSync(body);
  for (let attempt = 1; ; attempt++) {
    let res: Response;
    try {
      res = await fetch(
        `${base}/api/${projectId}/envelope/?sentry_version=7&sentry_key=${encodeURIComponent(key)}&sentry_client=faultline-seed%2F1`,
        {
          method: 'POST',
          headers: {
            'Content-Type': 'application/x-sentry-envelope',
            'Content-Encoding': 'gzip',
            'User-Agent': 'faultline-seed/1',
          },
          body: gz,
        },
      );
    } catch (err) {
      if (attempt >= MAX_ATTEMPTS) throw new SeedError(`sending to ${base} failed: ${(err as Error).message}`);
      await sleep(500 * attempt);
      continue;
    }
    if (res.status === 200) {
      await res.arrayBuffer();
      return true;
    }
    const message = await errorText(res);
    if (res.status === 429 && message === 'daily quota exceeded') return false;
    const retryable = res.status === 429 || res.status === 503;
    if (!retryable || attempt >= MAX_ATTEMPTS)
      throw new SeedError(`the server refused an envelope with ${res.status}: ${message}`);
    const retryAfter = Number(res.headers.get('retry-after') ?? '1');
    await sleep(Math.min(61, Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : 1) * 1000);
  }
}

export async function runSeed(options: SeedRunOptions): Promise<SeedResult> {
  const base = options.url.replace(/\/+$/, '');
  const progress = options.progress ?? (() => {});
  const { project, created } = await ensureProject(base, options.apiKey, options.slug);
  progress(
    created
      ? `created project "${project.slug}" (id ${project.id})`
      : `using project "${project.slug}" (id ${project.id})`,
  );
  const dsn = parseDsn(project.dsn);
  if (!dsn) throw new SeedError(`the server returned a DSN that cannot be read: ${project.dsn}`);

  const now = options.now ?? Date.now();
  const plan = buildSeedPlan({ now, seed: options.seed ?? now % 2 ** 32, days: options.days });
  progress(`sending ${plan.events} events and ${plan.sessions} sessions in ${plan.envelopes.length} envelopes`);
  let refused = 0;
  let done = 0;
  for (const envelope of plan.envelopes) {
    const accepted = await send(base, project.id, dsn.key, envelope.body);
    if (!accepted) refused += envelope.items;
    done++;
    progress(
      `  ${done}/${plan.envelopes.length}: ${envelope.items} ${envelope.kind}${accepted ? '' : ' refused (daily quota exceeded)'}`,
    );
  }
  return { projectId: project.id, slug: project.slug, created, dsn: project.dsn, plan, refused };
}

/**
 * Where `faultline serve` run with the same settings listens, seen from this machine:
 * http://127.0.0.1:<PORT> for a wildcard HOST (the default 0.0.0.0, or ::), else
 * http://<HOST>:<PORT>. Only PORT and HOST are read, so other settings cannot stop seed.
 */
export function defaultSeedUrl(env: Record<string, string | undefined> = process.env): string {
  const { port, host } = loadConfig({ PORT: env.PORT, HOST: env.HOST });
  if (port === 0) {
    throw new SeedError(
      'PORT is 0 (serve picks a free port), so the server address is unknown; pass --url with the URL serve logged',
    );
  }
  return localBaseUrl(host, port);
}

export function register(program: Command, _cli?: CliContext): void {
  program
    .command('seed')
    .description('send a week of demo events and sessions to a running server through its ingest endpoint')
    .argument('[slug]', 'project to fill; created when it does not exist', 'demo')
    .option(
      '--url <url>',
      'base URL of the running server (default: http://127.0.0.1:$PORT, or $HOST when it is not a wildcard address)',
    )
    .option('--api-key <key>', 'management API key (default: the first of API_KEYS)')
    .option('--days <n>', 'how many days back to fill (1-30)', '7')
    .option('--seed <n>', 'random seed, for repeatable data (default: the current time)')
    .action(async (slug: string, opts: { url?: string; apiKey?: string; days: string; seed?: string }) => {
      const days = Number(opts.days);
      if (!Number.isInteger(days) || days < 1 || days > 30) {
        throw new SeedError(`--days must be an integer between 1 and 30 (got ${JSON.stringify(opts.days)})`);
      }
      const seed = opts.seed === undefined ? undefined : Number(opts.seed);
      if (seed !== undefined && !Number.isInteger(seed))
        throw new SeedError(`--seed must be an integer (got ${JSON.stringify(opts.seed)})`);
      const apiKey = opts.apiKey ?? firstApiKey();
      const url = opts.url ?? defaultSeedUrl();
      const result = await runSeed({
        slug,
        url,
        apiKey,
        days,
        seed,
        progress: (line) => process.stderr.write(line + '\n'),
      });
      const { plan } = result;
      const lines = [
        `Seeded project "${result.slug}" (id ${result.projectId}) on ${url}`,
        `  events:   ${plan.events} (${plan.crashes} crashes)`,
        `  sessions: ${plan.sessions} (${plan.crashedSessions} crashed)`,
        `  releases: ${plan.releases.join(', ')}`,
        `  DSN:      ${result.dsn}`,
      ];
      if (result.refused > 0) lines.push(`  refused:  ${result.refused} items over the project's daily quota`);
      process.stdout.write(lines.join('\n') + '\n');
    });
}
