// A streaming multipart/form-data reader over a Web ReadableStream: parts come one at
// a time, each body as an async iterable of byte chunks, so a 256 MB file part is never
// held whole. (The multipart parsers of the npm registry that work on Web streams
// collect each part's content before handing it out.) A part's body must be consumed,
// or skipped, before the next part is asked for. The one multipart parser of the
// project: symbol uploads (src/http/symbols.ts) and sentry-cli's chunk and debug-file
// uploads (src/uploads/chunks.ts, src/http/uploads.ts).
import { iterateBytes } from './storage.js';
import { MAX_MULTIPART_HEADER_BYTES } from '../limits.js';
import { concatBytes } from '../bytes.js';

/** The body is not well-formed multipart: 400. */
export class MultipartError extends Error {
  readonly status: number = 400;
}

/** A limit of the caller was passed: too many parts, a part or the whole body too large. */
export class MultipartLimitError extends MultipartError {
  constructor(
    readonly limit: 'parts' | 'part' | 'body',
    message: string,
  ) {
    super(message);
  }
}

export interface MultipartLimits {
  /** Most parts (MultipartLimitError 'parts' at the next one). */
  maxParts?: number;
  /** Most bytes of the whole body, boundaries and headers included (MultipartLimitError 'body'). */
  maxBytes?: number;
}

export interface MultipartPart {
  /** The form field name (`name` of Content-Disposition). */
  name: string;
  /** The file name when the part is a file. */
  filename: string | null;
  contentType: string | null;
  /** The part's bytes; iterate once, before asking for the next part. */
  body: AsyncIterable<Uint8Array>;
  /** Reads a small part as text (fields); MultipartError past `max` bytes. */
  text(max?: number): Promise<string>;
  /** Reads a part whole; MultipartLimitError 'part' past `max` bytes. */
  bytes(max: number): Promise<Uint8Array>;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The boundary of a `multipart/form-data; boundary=…` content type, or null. */
export function multipartBoundary(contentType: string | null): string | null {
  if (!contentType || !/^\s*multipart\/form-data\s*;/i.test(contentType)) return null;
  const m = /;\s*boundary=(?:"([^"]{1,70})"|([^\s;]{1,70}))/i.exec(contentType);
  return m ? (m[1] ?? m[2]) : null;
}

function indexOfSeq(hay: Uint8Array, needle: Uint8Array, from: number): number {
  const first = needle[0];
  const last = hay.length - needle.length;
  for (let i = hay.indexOf(first, from); i >= 0 && i <= last; i = hay.indexOf(first, i + 1)) {
    let j = 1;
    while (j < needle.length && hay[i + j] === needle[j]) j++;
    if (j === needle.length) return i;
  }
  return -1;
}

function headerParam(value: string, param: string): string | null {
  const re = new RegExp(`;\\s*${param}\\*?=(?:"((?:[^"\\\\]|\\\\.)*)"|([^;]*))`, 'i');
  const m = re.exec(value);
  if (!m) return null;
  let v = m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : m[2].trim();
  // RFC 5987 (filename*=UTF-8''name)
  const ext = /^utf-8''(.*)$/i.exec(v);
  if (ext) {
    try {
      v = decodeURIComponent(ext[1]);
    } catch {
      // Kept as sent.
    }
  }
  return v;
}

/** Parts of a multipart body, in order. */
export async function* parseMultipart(
  stream: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>,
  boundary: string,
  limits: MultipartLimits = {},
): AsyncGenerator<MultipartPart> {
  const source = iterateBytes(stream);
  let buf: Uint8Array = new Uint8Array(0);
  let ended = false;
  let received = 0;
  let parts = 0;
  const more = async (): Promise<boolean> => {
    if (ended) return false;
    const next = await source.next();
    if (next.done) {
      ended = true;
      return false;
    }
    received += next.value.byteLength;
    if (limits.maxBytes !== undefined && received > limits.maxBytes) {
      await source.return(undefined);
      throw new MultipartLimitError('body', `the multipart body is larger than ${limits.maxBytes} bytes`);
    }
    buf = buf.length === 0 ? next.value : concatBytes([buf, next.value]);
    return true;
  };

  const dashBoundary = encoder.encode(`--${boundary}`);
  const delimiter = encoder.encode(`\r\n--${boundary}`);

  // Preamble: up to the first "--boundary".
  for (;;) {
    const at = indexOfSeq(buf, dashBoundary, 0);
    if (at >= 0 && (at === 0 || (buf[at - 2] === 0x0d && buf[at - 1] === 0x0a))) {
      buf = buf.subarray(at + dashBoundary.length);
      break;
    }
    if (buf.length > dashBoundary.length) buf = buf.slice(buf.length - dashBoundary.length);
    if (!(await more())) throw new MultipartError('the multipart body has no boundary line');
  }

  for (;;) {
    // After a boundary: "--" ends the body, else optional whitespace and CRLF.
    while (buf.length < 2)
      if (!(await more())) throw new MultipartError('the multipart body ends without its closing boundary');
    if (buf[0] === 0x2d && buf[1] === 0x2d) return;
    let eol: number;
    while ((eol = indexOfSeq(buf, encoder.encode('\r\n'), 0)) < 0) {
      if (buf.length > 256) throw new MultipartError('malformed multipart boundary line');
      if (!(await more())) throw new MultipartError('the multipart body ends inside a boundary line');
    }
    buf = buf.subarray(eol + 2);

    // Headers up to the blank line.
    let end: number;
    while (
      (end = indexOfSeq(buf, encoder.encode('\r\n\r\n'), 0)) < 0 &&
      !(buf.length >= 2 && buf[0] === 0x0d && buf[1] === 0x0a)
    ) {
      if (buf.length > MAX_MULTIPART_HEADER_BYTES)
        throw new MultipartError(`a multipart part's headers are longer than ${MAX_MULTIPART_HEADER_BYTES} bytes`);
      if (!(await more())) throw new MultipartError('the multipart body ends inside part headers');
    }
    // Headers that arrived in one read are held to the same limit as those that did not.
    if (end > MAX_MULTIPART_HEADER_BYTES)
      throw new MultipartError(`a multipart part's headers are longer than ${MAX_MULTIPART_HEADER_BYTES} bytes`);
    let headerText = '';
    if (buf[0] === 0x0d && buf[1] === 0x0a && (end < 0 || end > 0)) {
      buf = buf.subarray(2);
    } else {
      headerText = decoder.decode(buf.subarray(0, end));
      buf = buf.subarray(end + 4);
    }
    const headers = new Map<string, string>();
    for (const line of headerText.split('\r\n')) {
      const colon = line.indexOf(':');
      if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
    }
    const disposition = headers.get('content-disposition') ?? '';
    if (!/^form-data\b/i.test(disposition))
      throw new MultipartError('a multipart part has no "Content-Disposition: form-data" header');
    parts += 1;
    if (limits.maxParts !== undefined && parts > limits.maxParts)
      throw new MultipartLimitError('parts', `the multipart body has more than ${limits.maxParts} parts`);
    const name = headerParam(disposition, 'name') ?? '';
    const filename = headerParam(disposition, 'filename');

    let done = false;
    let consumed = false;
    async function* body(): AsyncGenerator<Uint8Array> {
      if (consumed) throw new MultipartError('a part body can be read once');
      consumed = true;
      for (;;) {
        const at = indexOfSeq(buf, delimiter, 0);
        if (at >= 0) {
          if (at > 0) yield buf.slice(0, at);
          buf = buf.subarray(at + delimiter.length);
          done = true;
          return;
        }
        // Everything but a possible start of the delimiter can go.
        const keep = Math.min(buf.length, delimiter.length - 1);
        if (buf.length - keep > 0) {
          const out = buf.slice(0, buf.length - keep);
          buf = buf.slice(buf.length - keep);
          yield out;
        }
        if (!(await more())) throw new MultipartError('the multipart body ends inside a part');
      }
    }
    const part: MultipartPart = {
      name,
      filename,
      contentType: headers.get('content-type') ?? null,
      body: { [Symbol.asyncIterator]: body },
      async text(max = 64 * 1024) {
        try {
          return decoder.decode(await part.bytes(max));
        } catch (err) {
          if (err instanceof MultipartLimitError)
            throw new MultipartError(`the form field ${JSON.stringify(name)} is longer than ${max} bytes`);
          throw err;
        }
      },
      async bytes(max) {
        const chunks: Uint8Array[] = [];
        let size = 0;
        for await (const c of part.body) {
          size += c.length;
          if (size > max)
            throw new MultipartLimitError('part', `the part ${JSON.stringify(name)} is larger than ${max} bytes`);
          chunks.push(c);
        }
        return concatBytes(chunks, size);
      },
    };
    yield part;
    if (!done) {
      // The caller did not read the body: skip it.
      if (!consumed) for await (const _ of part.body) void _;
      else if (!done) throw new MultipartError('a part body was left half read');
    }
  }
}
