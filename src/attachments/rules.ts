// The attachment rules, as pure functions: which envelope items are attachments and
// which event they belong to, the limits (413 for the envelope, or the item dropped),
// the names and content types kept, and what the dashboard may show inline (images
// recognised by their magic bytes, never by the type the client claimed).
// docs/api.md "Attachments" describes them.
import {
  MAX_ATTACHMENT_BYTES,
  MAX_ATTACHMENTS_PER_EVENT,
  MAX_ATTACHMENT_NAME,
  MAX_ATTACHMENTS_BYTES,
  MAX_MINIDUMP_BYTES,
} from '../limits.js';
import { PayloadTooLargeError } from '../errors.js';

/** The attachment type of a minidump, which ingest turns into the event it stands for (src/minidump). */
export const MINIDUMP_ATTACHMENT_TYPE = 'event.minidump';

/** The attachment types Sentry's SDKs send; any other value is stored as `event.attachment`. */
export const ATTACHMENT_TYPES = [
  'event.attachment',
  'event.view_hierarchy',
  MINIDUMP_ATTACHMENT_TYPE,
  'event.applecrashreport',
] as const;
export type AttachmentType = (typeof ATTACHMENT_TYPES)[number];

/** An attachment read from an envelope, waiting for its event to be committed. */
export interface PendingAttachment {
  /** The event it belongs to (32 lowercase hex). */
  eventId: string;
  name: string;
  contentType: string;
  attachmentType: AttachmentType;
  bytes: Uint8Array;
}

/** What an envelope item header says about an attachment. */
export interface AttachmentItem {
  headers: Record<string, unknown>;
  payload: Uint8Array;
}

export function attachmentTypeOf(value: unknown): AttachmentType {
  return typeof value === 'string' && (ATTACHMENT_TYPES as readonly string[]).includes(value)
    ? (value as AttachmentType)
    : 'event.attachment';
}

/** The largest attachment of a type (minidumps may be larger: docs/api.md "Attachments"). */
export function maxAttachmentBytes(type: AttachmentType): number {
  return type === MINIDUMP_ATTACHMENT_TYPE ? MAX_MINIDUMP_BYTES : MAX_ATTACHMENT_BYTES;
}

/** A name without control characters or path separators, at most MAX_ATTACHMENT_NAME characters. */
export function cleanAttachmentName(value: unknown, type: AttachmentType): string {
  let name = typeof value === 'string' ? value : '';
  name = name.replace(/[\u0000-\u001f\u007f]/g, '');
  const slash = Math.max(name.lastIndexOf('/'), name.lastIndexOf('\\'));
  if (slash >= 0) name = name.slice(slash + 1);
  name = Array.from(name.trim()).slice(0, MAX_ATTACHMENT_NAME).join('');
  if (name !== '') return name;
  return type === MINIDUMP_ATTACHMENT_TYPE
    ? 'minidump.dmp'
    : type === 'event.view_hierarchy'
      ? 'view-hierarchy.json'
      : 'attachment';
}

/** A `type/subtype` content type in lowercase without parameters, or application/octet-stream. */
export function cleanContentType(value: unknown): string {
  if (typeof value !== 'string') return 'application/octet-stream';
  const base = value.split(';')[0].trim().toLowerCase();
  return /^[a-z0-9][a-z0-9!#$&^_.+-]{0,63}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/.test(base)
    ? base
    : 'application/octet-stream';
}

/**
 * The attachments of an envelope, for the event `eventId` (the envelope header's
 * `event_id`, else its one event's): as Relay does, an attachment larger than its
 * limit, or attachments adding up to more than MAX_ATTACHMENTS_BYTES, refuse the
 * envelope (PayloadTooLargeError → 413). Without an event to belong to, attachments are
 * dropped; past MAX_ATTACHMENTS_PER_EVENT the rest are dropped. `dropped` counts both.
 */
export function collectAttachments(
  items: AttachmentItem[],
  eventId: string | null,
): { attachments: PendingAttachment[]; dropped: number } {
  let total = 0;
  for (const item of items) {
    const type = attachmentTypeOf(item.headers.attachment_type);
    const limit = maxAttachmentBytes(type);
    if (item.payload.byteLength > limit) {
      throw new PayloadTooLargeError(
        `an attachment (${type}) is ${item.payload.byteLength} bytes; the limit is ${limit} bytes`,
      );
    }
    total += item.payload.byteLength;
  }
  if (total > MAX_ATTACHMENTS_BYTES) {
    throw new PayloadTooLargeError(
      `the envelope's attachments add up to ${total} bytes; the limit is ${MAX_ATTACHMENTS_BYTES} bytes`,
    );
  }
  if (eventId === null) return { attachments: [], dropped: items.length };
  const attachments = items.slice(0, MAX_ATTACHMENTS_PER_EVENT).map((item): PendingAttachment => {
    const attachmentType = attachmentTypeOf(item.headers.attachment_type);
    return {
      eventId,
      name: cleanAttachmentName(item.headers.filename, attachmentType),
      contentType: cleanContentType(item.headers.content_type),
      attachmentType,
      bytes: item.payload,
    };
  });
  return { attachments, dropped: items.length - attachments.length };
}

/** Image types the dashboard shows inline: raster formats browsers never run script from. */
export type InlineImageType = 'image/png' | 'image/jpeg' | 'image/webp' | 'image/gif';

function startsWith(bytes: Uint8Array, prefix: readonly number[], at = 0): boolean {
  if (bytes.byteLength < at + prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (bytes[at + i] !== prefix[i]) return false;
  return true;
}

/**
 * The raster image type the bytes are, by their magic bytes, or null. The claimed
 * content type plays no part: a file is shown inline only as what it really is, and
 * SVG (which can hold script) is never an image here.
 */
export function sniffImage(bytes: Uint8Array): InlineImageType | null {
  if (startsWith(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png';
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return 'image/jpeg';
  if (startsWith(bytes, [0x47, 0x49, 0x46, 0x38]) && (bytes[4] === 0x37 || bytes[4] === 0x39) && bytes[5] === 0x61)
    return 'image/gif';
  if (startsWith(bytes, [0x52, 0x49, 0x46, 0x46]) && startsWith(bytes, [0x57, 0x45, 0x42, 0x50], 8))
    return 'image/webp';
  return null;
}

/** The bytes `sniffImage` needs. */
export const SNIFF_BYTES = 16;

/**
 * The content type a download is served with: the sniffed image type for an image
 * asked for inline, else application/octet-stream (never text/html or image/svg+xml
 * from the client's claim, so nothing the browser would render as a document).
 */
export function servedContentType(sniffed: InlineImageType | null, inline: boolean): string {
  return inline && sniffed ? sniffed : 'application/octet-stream';
}

/** `Content-Disposition` for a download: the name as RFC 6266 `filename*` (and an ASCII fallback). */
export function contentDisposition(kind: 'attachment' | 'inline', name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `${kind}; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`;
}
