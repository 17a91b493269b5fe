// Attachment routes (docs/api.md "Attachments"): an event's attachments as JSON and
// the download of one. Downloads are never rendered by the browser as a document of
// this origin: `Content-Disposition: attachment`, `application/octet-stream`,
// `X-Content-Type-Options: nosniff` and a sandboxing CSP; only an image the dashboard
// asks for inline, whose bytes are PNG, JPEG, WebP or GIF, is served with its image type.
import { Hono, type Context } from 'hono';
import type { AppDeps } from '../context.js';
import { contentDisposition, servedContentType, sniffImage } from '../attachments/rules.js';
import {
  attachmentBlobsOf,
  attachmentJson,
  chunkBlobs,
  getAttachment,
  listAttachments,
  readAttachment,
  readAttachmentHead,
  type AttachmentBlobs,
  type AttachmentRow,
} from '../attachments/storage.js';
import type { Store } from '../store/database.js';
import { findEvent } from '../read/events.js';
import { ReadNotFoundError } from '../errors.js';
import { findProjectBySlug } from '../store/projects.js';
import type { ProjectRow } from '../store/schema.js';
import { HttpError } from './errors.js';

/** What every download carries, whatever its type: no sniffing, no script, no framing, no other origin. */
export const DOWNLOAD_HEADERS: Record<string, string> = {
  'X-Content-Type-Options': 'nosniff',
  'Content-Security-Policy': "sandbox; default-src 'none'",
  'Cross-Origin-Resource-Policy': 'same-origin',
  'Cache-Control': 'private, no-cache',
};

/** An event's attachments, by the event's id or event_id (404 when the event is not in the project). */
export async function eventAttachments(store: Store, projectId: number, idOrEventId: string): Promise<AttachmentRow[]> {
  const event = await findEvent(store.db, projectId, idOrEventId);
  return listAttachments(store.db, projectId, event.event_id);
}

/**
 * The answer of a download: the bytes streamed chunk by chunk. `inline` asks for an
 * image to show: served with the sniffed image type when the bytes are one, else 415.
 */
export async function attachmentDownload(
  store: Store,
  row: AttachmentRow,
  inline: boolean,
  blobs: AttachmentBlobs = chunkBlobs,
): Promise<Response> {
  const id = Number(row.id);
  const sniffed = sniffImage(await readAttachmentHead(store.db, id, blobs));
  if (inline && !sniffed) {
    return Response.json(
      { error: 'this attachment is not a PNG, JPEG, WebP or GIF image; download it instead' },
      { status: 415, headers: DOWNLOAD_HEADERS },
    );
  }
  return new Response(readAttachment(store.db, id, blobs), {
    status: 200,
    headers: {
      ...DOWNLOAD_HEADERS,
      'Content-Type': servedContentType(sniffed, inline),
      'Content-Length': String(Number(row.size)),
      'Content-Disposition': contentDisposition(inline ? 'inline' : 'attachment', row.name),
    },
  });
}

export function attachmentRoutes(deps: AppDeps): Hono {
  const app = new Hono();
  const P = '/api/projects/:slug';

  async function project(c: Context): Promise<ProjectRow> {
    const slug = c.req.param('slug') ?? '';
    const row = await findProjectBySlug(deps.store.db, slug);
    if (!row) throw new HttpError(404, `project ${JSON.stringify(slug)} not found`);
    return row;
  }

  app.get(`${P}/events/:id/attachments`, async (c) => {
    const p = await project(c);
    try {
      const rows = await eventAttachments(deps.store, p.id, c.req.param('id') ?? '');
      return c.json({ attachments: rows.map(attachmentJson) });
    } catch (err) {
      if (err instanceof ReadNotFoundError) throw new HttpError(404, err.message);
      throw err;
    }
  });

  app.get(`${P}/attachments/:aid`, async (c) => {
    const p = await project(c);
    const aid = c.req.param('aid') ?? '';
    const row = await getAttachment(deps.store.db, p.id, aid);
    if (!row) throw new HttpError(404, `attachment ${JSON.stringify(aid)} not found in this project`);
    return attachmentDownload(deps.store, row, false, attachmentBlobsOf(deps.blobs));
  });

  return app;
}
