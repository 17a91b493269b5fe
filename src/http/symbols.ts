// Symbols API: list, upload (streaming multipart: kind, release, optional dist, then
// one or more `file` parts, each a symbol file or a zip of them), delete. Thin: the
// bytes stream from the request into src/symbols, which checks and stores them.
import { Hono, type Context } from 'hono';
import type { AppDeps } from '../context.js';
import { findProjectBySlug } from '../store/projects.js';
import type { ProjectRow } from '../store/schema.js';
import { SymbolInputError } from '../symbols/kinds.js';
import { MultipartError, multipartBoundary, parseMultipart } from '../symbols/multipart.js';
import {
  SYMBOL_KINDS,
  symbolFileJson,
  listSymbolFiles,
  type SymbolFileRow,
  type SymbolKind,
} from '../symbols/storage.js';
import { HttpError, badRequest, notFound } from './errors.js';
import { MAX_SYMBOL_DIST, MAX_SYMBOL_FIELD, MAX_SYMBOL_RELEASE, REFUSED_UPLOAD_DRAIN_BYTES } from '../limits.js';
import { audit } from './audit.js';

const SYMBOLS_PATH = /^\/api\/projects\/[^/]+\/symbols$/;

/** The upload route streams its body and enforces its own limits (exempt from the 1 MB limit). */
export function isSymbolUploadPath(path: string): boolean {
  return SYMBOLS_PATH.test(path);
}

async function drainBody(body: ReadableStream<Uint8Array>): Promise<void> {
  try {
    const reader = body.getReader();
    let read = 0;
    while (read <= REFUSED_UPLOAD_DRAIN_BYTES) {
      const { done, value } = await reader.read();
      if (done) return;
      read += value?.byteLength ?? 0;
    }
    await reader.cancel();
  } catch {
    // The stream is already closed or errored: nothing to drain.
  }
}

/**
 * Reads a symbol upload (multipart: kind, release, optional dist, then one or more
 * `file` parts) and stores its files, all or none, as they stream in. Shared by this
 * route and the dashboard's upload form. Bad input is an HttpError 400.
 */
export async function receiveSymbolUpload(
  deps: AppDeps,
  p: ProjectRow,
  contentType: string | null,
  body: ReadableStream<Uint8Array> | null,
): Promise<SymbolFileRow[]> {
  const symbols = deps.symbols;
  if (!symbols) throw new HttpError(503, 'symbol storage is not available in this edition');
  const boundary = multipartBoundary(contentType);
  if (!boundary) throw badRequest('send a multipart/form-data body with the fields kind, release and file');
  if (!body) throw badRequest('the request has no body');
  const fields: Record<string, string> = {};
  let stored: SymbolFileRow[] = [];
  let files = 0;
  // Every file of the form is stored, or none.
  const upload = symbols.beginUpload();
  try {
    for await (const part of parseMultipart(body, boundary)) {
      if (part.name !== 'file' && part.filename === null) {
        fields[part.name] = (await part.text(MAX_SYMBOL_FIELD)).trim();
        continue;
      }
      if (part.name !== 'file')
        throw badRequest(`unexpected file field ${JSON.stringify(part.name)}; the file goes in "file"`);
      const kind = fields.kind;
      if (kind === undefined) throw badRequest('the "kind" field must come before the file in the form');
      if (!SYMBOL_KINDS.includes(kind as (typeof SYMBOL_KINDS)[number]))
        throw badRequest(`kind must be one of ${SYMBOL_KINDS.join(', ')}`);
      const release = fields.release ?? '';
      const dist = fields.dist ?? '';
      if (release.length > MAX_SYMBOL_RELEASE)
        throw badRequest(`release must be at most ${MAX_SYMBOL_RELEASE} characters`);
      if (dist.length > MAX_SYMBOL_DIST) throw badRequest(`dist must be at most ${MAX_SYMBOL_DIST} characters`);
      if (release.includes('\0') || dist.includes('\0')) throw badRequest('release and dist must not contain NUL');
      const filename = (part.filename ?? '').replace(/\0/g, '').slice(0, 1024) || 'upload';
      files++;
      await upload.stage({ projectId: p.id, kind: kind as SymbolKind, release, dist, filename }, part.body);
    }
    if (files > 0) stored = await upload.commit();
  } catch (err) {
    await upload.abort();
    await drainBody(body);
    if (err instanceof SymbolInputError || err instanceof MultipartError) throw badRequest(err.message);
    throw err;
  }
  if (files === 0) {
    await upload.abort();
    if (fields.kind !== undefined && !SYMBOL_KINDS.includes(fields.kind as (typeof SYMBOL_KINDS)[number]))
      throw badRequest(`kind must be one of ${SYMBOL_KINDS.join(', ')}`);
    throw badRequest('the form has no "file" field');
  }
  deps.logger.info({ project: p.slug, files: stored.length }, 'symbol files uploaded');
  return stored;
}

export function symbolRoutes(deps: AppDeps): Hono {
  const app = new Hono();
  const db = deps.store.db;

  async function project(c: Context): Promise<ProjectRow> {
    const slug = c.req.param('slug') ?? '';
    const row = await findProjectBySlug(db, slug);
    if (!row) throw notFound(`project ${JSON.stringify(slug)}`);
    return row;
  }

  app.get('/api/projects/:slug/symbols', async (c) => {
    const p = await project(c);
    return c.json({ symbols: (await listSymbolFiles(db, p.id)).map(symbolFileJson) });
  });

  app.post('/api/projects/:slug/symbols', async (c) => {
    const p = await project(c);
    const stored = await receiveSymbolUpload(deps, p, c.req.header('content-type') ?? null, c.req.raw.body);
    const files = stored.map(symbolFileJson);
    await audit(deps, c, 'symbol.upload', p.slug, { files: files.length });
    return c.json({ symbols: files }, 201);
  });

  app.delete('/api/projects/:slug/symbols/:id', async (c) => {
    const p = await project(c);
    const idText = c.req.param('id') ?? '';
    const id = /^[0-9]{1,15}$/.test(idText) ? Number(idText) : NaN;
    if (!Number.isSafeInteger(id)) throw notFound(`symbol ${JSON.stringify(idText)}`);
    const deleted = deps.symbols ? await deps.symbols.deleteFile(p.id, id) : false;
    if (!deleted) throw notFound(`symbol ${id}`);
    await audit(deps, c, 'symbol.delete', p.slug, { id });
    return c.body(null, 204);
  });

  return app;
}
