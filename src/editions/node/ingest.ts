// The Node edition's direct ingest listener: SDK POSTs to /api/{id}/envelope/ and
// /store/ go from Node's request straight to the ingest pipeline (handleIngest),
// without Hono's router, middleware chain and Web Request/Response objects, which
// cost about a tenth of the ingest throughput (measured: the ingest benchmark). Every
// other request, and any ingest request this does not recognise exactly, goes to the
// Hono app, which also serves these routes in every other edition; the answers are
// the same (test/editions/node/direct-ingest.test.ts compares them).
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { AppDeps } from '../../context.js';
import { matchIngestPath } from '../../http/auth.js';
import { INTERNAL_ERROR, logUnexpectedFailure } from '../../http/errors.js';
import { clientIpOf, ingestAnswer, ingestCorsHeaders } from '../../http/ingest.js';
import { hasDotSegment } from '../../http/input-hygiene.js';
import { logRequest, REQUEST_ID_HEADER, requestIdFor } from '../../http/request-meta.js';
import { handleIngest, type HeaderReader, type IngestResponse } from '../../ingest/pipeline.js';
import { readIncomingBody } from './body.js';

/**
 * A request header as Web `Headers.get` reads it: every occurrence, joined with ", ".
 * (Node's `headers` object keeps only the first of some repeated headers.)
 */
function headerReader(incoming: IncomingMessage): HeaderReader {
  const raw = incoming.rawHeaders;
  return {
    get(name: string): string | null {
      const wanted = name.toLowerCase();
      let value: string | null = null;
      for (let i = 0; i < raw.length; i += 2) {
        if (raw[i].length !== wanted.length || raw[i].toLowerCase() !== wanted) continue;
        value = value === null ? raw[i + 1] : `${value}, ${raw[i + 1]}`;
      }
      return value;
    },
  };
}

/** Handles ingest POSTs itself and passes everything else to `fallback` (the Hono app). */
export function directIngestListener(deps: AppDeps, fallback: RequestListener): RequestListener {
  const corsHeaders = ingestCorsHeaders(deps.config);
  return (incoming, response) => {
    const url = incoming.url ?? '';
    const queryAt = url.indexOf('?');
    const path = queryAt < 0 ? url : url.slice(0, queryAt);
    // Before any URL parser resolves `%2e%2e` into the parent segment (hono's request does).
    if (hasDotSegment(path)) return notFound(deps, incoming, response, path);
    // Percent-encoded or absolute-form targets are left to Hono's own path rules.
    const target = incoming.method === 'POST' && !path.includes('%') ? matchIngestPath(path) : null;
    if (!target) return fallback(incoming, response);
    void answer(deps, corsHeaders, incoming, response, path, queryAt < 0 ? '' : url.slice(queryAt + 1), target);
  };
}

async function answer(
  deps: AppDeps,
  corsHeaders: Record<string, string>,
  incoming: IncomingMessage,
  response: ServerResponse,
  path: string,
  query: string,
  target: { projectId: string; endpoint: 'envelope' | 'store' },
): Promise<void> {
  const started = performance.now();
  const headers = headerReader(incoming);
  const requestId = requestIdFor(headers.get('x-request-id'));
  let result: IngestResponse;
  try {
    result = await handleIngest(deps, {
      endpoint: target.endpoint,
      projectId: target.projectId,
      headers,
      query: new URLSearchParams(query),
      readBody: (limit) => readIncomingBody(incoming, limit),
      clientIp: clientIpOf((name) => headers.get(name), incoming.socket?.remoteAddress),
    });
  } catch (err) {
    logUnexpectedFailure(deps.logger, err, requestId, 'POST', path);
    result = { status: 500, body: { error: INTERNAL_ERROR }, headers: {} };
  }
  const { body, headers: answerHeaders } = ingestAnswer(result);
  if (!response.destroyed) {
    response.writeHead(result.status, {
      ...answerHeaders,
      [REQUEST_ID_HEADER]: requestId,
      ...corsHeaders,
      'Content-Length': String(Buffer.byteLength(body)),
    });
    response.end(body);
  }
  logRequest(deps.logger, 'POST', path, result.status, started, requestId);
}

/** The app's 404, for a target that must not reach the app's URL parsing. */
function notFound(deps: AppDeps, incoming: IncomingMessage, response: ServerResponse, path: string): void {
  const started = performance.now();
  const requestId = requestIdFor(headerReader(incoming).get('x-request-id'));
  const body = JSON.stringify({ error: 'not found' });
  response.writeHead(404, {
    'Content-Type': 'application/json',
    [REQUEST_ID_HEADER]: requestId,
    'Content-Length': String(Buffer.byteLength(body)),
  });
  response.end(body);
  logRequest(deps.logger, incoming.method ?? 'GET', path, 404, started, requestId);
}
