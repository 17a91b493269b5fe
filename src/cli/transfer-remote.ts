// `faultline export --from <url>` and `faultline import --to <url>`: the client side of
// a remote instance's `GET /api/export` and `POST /api/import` (src/transfer/http.ts),
// for moving to or from the serverless edition. Export follows the answers' cursors
// and writes one file; import sends the file in requests of bounded size, each starting
// with the meta line. A failed request is sent again (import is idempotent; an export
// part is fetched again from its cursor and the lines already written are skipped), so
// a network hiccup does not end the move.
import { once } from 'node:events';
import { readLines, tallyByName } from '../transfer/import.js';
import type { ImportSummary } from '../transfer/import.js';
import { CliError } from './context.js';
import { progressReporter } from './progress.js';
import { IMPORT_REQUEST_BYTES, IMPORT_REQUEST_LINES } from '../limits.js';

const ATTEMPTS = 5;

export interface RemoteOptions {
  url: string;
  apiKey?: string;
  err: NodeJS.WriteStream;
  /** Waits between attempts (tests shorten it). */
  retryDelayMs?: number;
}

function endpoint(base: string, path: string): string {
  return base.replace(/\/+$/, '') + path;
}

async function request(options: RemoteOptions, url: string, init: RequestInit): Promise<Response> {
  const headers = new Headers(init.headers);
  if (options.apiKey) headers.set('authorization', `Bearer ${options.apiKey}`);
  for (let attempt = 1; ; attempt++) {
    let res: Response | undefined;
    let failure = '';
    try {
      res = await fetch(url, { ...init, headers });
      if (res.status < 500) return res;
      failure = `${res.status} ${(await res.text()).slice(0, 200)}`;
    } catch (err) {
      failure = (err as Error).message;
    }
    if (attempt >= ATTEMPTS) throw new CliError(`${url} failed ${ATTEMPTS} times, last: ${failure}`);
    options.err.write(`faultline: ${url} failed (${failure}); trying again\n`);
    await new Promise((r) => setTimeout(r, (options.retryDelayMs ?? 250) * attempt));
  }
}

async function refusal(res: Response): Promise<CliError> {
  const text = await res.text();
  let message = text.slice(0, 300);
  try {
    message = (JSON.parse(text) as { error?: string }).error ?? message;
  } catch {
    // not JSON
  }
  if (res.status === 401) return new CliError(`the remote instance refused the API key (pass --api-key): ${message}`);
  return new CliError(`the remote instance answered ${res.status}: ${message}`);
}

/** Fetches every part of a remote export and writes the lines to `out`. Returns the lines written. */
export async function exportFromRemote(
  options: RemoteOptions & { project?: string; out: NodeJS.WritableStream },
): Promise<number> {
  const bar = progressReporter('export', 'lines', options.err);
  let cursor: string | null = null;
  let written = 0;
  let expected = 0;
  try {
    for (;;) {
      const params = new URLSearchParams();
      if (options.project) params.set('project', options.project);
      if (cursor) params.set('cursor', cursor);
      let next: string | null = null;
      // Lines of this part already written by an attempt that broke off.
      let done = 0;
      for (let attempt = 1; ; attempt++) {
        const res = await request(options, endpoint(options.url, `/api/export?${params}`), {});
        if (res.status !== 200) throw await refusal(res);
        let index = 0;
        next = null;
        try {
          for await (const line of readLines(res.body as unknown as AsyncIterable<Uint8Array>)) {
            if ('tooLong' in line || line.text === '') continue;
            if (line.text.startsWith('{"type":"continue"')) {
              next = (JSON.parse(line.text) as { cursor: string }).cursor;
              continue;
            }
            if (index++ < done) continue;
            if (line.text.startsWith('{"type":"meta"'))
              expected = (JSON.parse(line.text) as { expected_lines?: number }).expected_lines ?? 0;
            if (!options.out.write(line.text + '\n')) await once(options.out, 'drain');
            done++;
            written++;
            if (written % 1000 === 0) bar.update(written, expected);
          }
          break;
        } catch (err) {
          if (attempt >= ATTEMPTS)
            throw new CliError(`reading the export from ${options.url} failed: ${(err as Error).message}`);
          options.err.write(
            `faultline: the export answer broke off (${(err as Error).message}); fetching that part again\n`,
          );
        }
      }
      bar.update(written, expected);
      if (!next) return written;
      cursor = next;
    }
  } finally {
    bar.stop();
  }
}

/** Sends an export file to a remote instance in parts; returns the summary of all parts. */
export async function importToRemote(
  options: RemoteOptions & { input: AsyncIterable<Uint8Array | string>; requestLines?: number },
): Promise<ImportSummary> {
  const maxLines = options.requestLines ?? IMPORT_REQUEST_LINES;
  const bar = progressReporter('import', 'lines', options.err);
  const total: ImportSummary = {
    lines: 0,
    format: 0,
    types: {},
    unknown: tallyByName(),
    problems: [],
    problemCount: 0,
  };
  let meta: string | null = null;
  let expected = 0;
  let part: string[] = [];
  let numbers: number[] = [];
  let bytes = 0;
  const send = async () => {
    if (part.length === 0 || meta === null) return;
    const body = [meta, ...part].join('\n') + '\n';
    const res = await request(options, endpoint(options.url, '/api/import'), {
      method: 'POST',
      headers: { 'content-type': 'application/x-ndjson' },
      body,
    });
    if (res.status !== 200) throw await refusal(res);
    const summary = (await res.json()) as ImportSummary & { notices?: string[] };
    for (const notice of summary.notices ?? []) options.err.write(`import: ${notice}\n`);
    total.format = summary.format;
    for (const [type, c] of Object.entries(summary.types)) {
      const t = (total.types[type] ??= { added: 0, kept: 0, failed: 0 });
      t.added += c.added;
      t.kept += c.kept;
      t.failed += c.failed;
    }
    for (const [type, n] of Object.entries(summary.unknown)) total.unknown[type] = (total.unknown[type] ?? 0) + n;
    // The part's line 1 is the meta line; line k + 1 is the file's line numbers[k - 1].
    for (const p of summary.problems) {
      if (total.problems.length < 100) total.problems.push({ line: numbers[p.line - 2] ?? p.line, message: p.message });
    }
    total.problemCount += summary.problemCount;
    part = [];
    numbers = [];
    bytes = 0;
    bar.update(total.lines, expected);
  };
  try {
    for await (const line of readLines(options.input)) {
      total.lines = line.number;
      if ('tooLong' in line) throw new CliError(`line ${line.number} is too long to send`);
      if (line.text.trim() === '') continue;
      if (meta === null) {
        meta = line.text;
        try {
          expected = (JSON.parse(meta) as { expected_lines?: number }).expected_lines ?? 0;
        } catch {
          // the remote refuses it with its own message
        }
        continue;
      }
      part.push(line.text);
      numbers.push(line.number);
      bytes += line.text.length + 1;
      if (part.length >= maxLines || bytes >= IMPORT_REQUEST_BYTES) await send();
    }
    if (meta === null) throw new CliError('import refused, nothing written: the input is empty: no export meta line');
    if (part.length === 0 && total.format === 0) {
      part = [];
      const res = await request(options, endpoint(options.url, '/api/import'), { method: 'POST', body: meta + '\n' });
      if (res.status !== 200) throw await refusal(res);
      total.format = ((await res.json()) as ImportSummary).format;
    } else {
      await send();
    }
  } finally {
    bar.stop();
  }
  return total;
}
