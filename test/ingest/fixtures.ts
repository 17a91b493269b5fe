// Reader for the requests captured from real SDKs in test/fixtures/sdk-captures
// (see its README). Shared by the ingest tests: unit tests parse the bodies,
// HTTP tests replay them (wireBody + replayHeaders give back what was on the wire).
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';

export const FIXTURES_DIR =
  process.env.FIXTURES_DIR ?? path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/sdk-captures');

export interface CapturedRequest {
  /** Fixture file name and the request's position in it (0-based). */
  file: string;
  index: number;
  method: string;
  /** Path with query string, as on the request line. */
  path: string;
  /** Header names lowercased. */
  headers: Record<string, string>;
  /** Headers in the order and case received. */
  rawHeaders: Array<[string, string]>;
  /** Body bytes as the file holds them: already gunzipped when Content-Encoding was gzip. */
  body: Uint8Array;
}

/** Every fixture file name (README excluded), sorted. */
export function fixtureNames(): string[] {
  return readdirSync(FIXTURES_DIR)
    .filter((n) => n !== 'README.md')
    .sort();
}

/** The raw bytes of a fixture file (.envelope, .json, .gz, or .txt). */
export function readFixture(name: string): Uint8Array {
  return new Uint8Array(readFileSync(path.join(FIXTURES_DIR, name)));
}

const MARKER = Buffer.from('\n#----- end of body (');

/** The requests recorded in a .txt capture, in order. */
export function readRequests(name: string): CapturedRequest[] {
  const buf = readFileSync(path.join(FIXTURES_DIR, name));
  const out: CapturedRequest[] = [];
  let pos = 0;
  const lineEnd = (from: number): number => {
    const nl = buf.indexOf(0x0a, from);
    return nl < 0 ? buf.length : nl;
  };
  const lineText = (from: number, to: number): string => buf.toString('latin1', from, to).replace(/\r$/, '');
  while (pos < buf.length) {
    // Comment and blank lines between requests.
    const eol = lineEnd(pos);
    const first = lineText(pos, eol);
    if (first === '' || first.startsWith('#')) {
      pos = eol + 1;
      continue;
    }
    const req = /^([A-Z]+) (\S+) HTTP\/[\d.]+$/.exec(first);
    if (!req)
      throw new Error(`${name}: expected a request line at byte ${pos}, got ${JSON.stringify(first.slice(0, 80))}`);
    pos = eol + 1;
    const headers: Record<string, string> = {};
    const rawHeaders: Array<[string, string]> = [];
    for (;;) {
      if (pos >= buf.length) throw new Error(`${name}: headers of request ${out.length} never end`);
      const e = lineEnd(pos);
      const line = lineText(pos, e);
      pos = e + 1;
      if (line === '') break;
      const colon = line.indexOf(':');
      if (colon <= 0) throw new Error(`${name}: bad header line ${JSON.stringify(line)}`);
      const key = line.slice(0, colon);
      const value = line.slice(colon + 1).trim();
      rawHeaders.push([key, value]);
      headers[key.toLowerCase()] = value;
    }
    const bodyStart = pos;
    const marker = buf.indexOf(MARKER, bodyStart);
    if (marker < 0) throw new Error(`${name}: request ${out.length} has no end-of-body marker`);
    // The byte count in the marker is from before frame paths were rewritten, so
    // the body is everything up to the marker.
    const markerLineEnd = lineEnd(marker + 1);
    out.push({
      file: name,
      index: out.length,
      method: req[1],
      path: req[2],
      headers,
      rawHeaders,
      body: new Uint8Array(buf.subarray(bodyStart, marker)),
    });
    pos = markerLineEnd + 1;
  }
  return out;
}

/** The body as it travelled: re-encoded by the request's Content-Encoding (the capture shows it decoded). */
export function wireBody(req: CapturedRequest): Uint8Array {
  const enc = (req.headers['content-encoding'] ?? '').trim().toLowerCase();
  if (enc === 'gzip' || enc === 'x-gzip') return new Uint8Array(gzipSync(req.body));
  if (enc === 'deflate') return new Uint8Array(deflateSync(req.body));
  if (enc === 'br') return new Uint8Array(brotliCompressSync(req.body));
  return req.body;
}

const HOP_HEADERS = new Set(['host', 'content-length', 'transfer-encoding', 'connection']);

/** Headers to replay the request with (framing headers left to the HTTP client). */
export function replayHeaders(req: CapturedRequest): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of req.rawHeaders) if (!HOP_HEADERS.has(k.toLowerCase())) out[k] = v;
  return out;
}
