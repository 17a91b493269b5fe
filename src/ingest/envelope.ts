// Envelope grammar (protocol notes §2) and the legacy /store/ body decoding
// (§3.9). Pure byte handling: payloads are views into the request buffer,
// never copies, and each item header is parsed once.
import { decodeContent, type Decompress } from './decode.js';
import { MAX_BODY_BYTES } from '../limits.js';
import { BadPayloadError } from '../errors.js';

export interface EnvelopeItem {
  type: string;
  headers: Record<string, unknown>;
  payload: Uint8Array;
}

export interface ParsedEnvelope {
  headers: Record<string, unknown>;
  items: EnvelopeItem[];
  /** Items skipped because their header or framing was broken. */
  malformed: number;
}

const NL = 0x0a;
const CR = 0x0d;
const SP = 0x20;
const TAB = 0x09;
const LBRACE = 0x7b;

const utf8 = new TextDecoder();

function isWs(b: number): boolean {
  return b === NL || b === CR || b === SP || b === TAB;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Parses bytes[start, end) (a trailing \r dropped) as a JSON object, or null. */
function headerObject(bytes: Uint8Array, start: number, end: number): Record<string, unknown> | null {
  if (end > start && bytes[end - 1] === CR) end--;
  if (end <= start) return null;
  try {
    const v: unknown = JSON.parse(utf8.decode(bytes.subarray(start, end)));
    return isObject(v) ? v : null;
  } catch {
    return null;
  }
}

/** Index just past the next newline at or after `from` (the buffer length when there is none). */
function afterNextNewline(bytes: Uint8Array, from: number): number {
  const nl = bytes.indexOf(NL, from);
  return nl < 0 ? bytes.byteLength : nl + 1;
}

/**
 * Parses an envelope. The header line must be a JSON object (else
 * BadPayloadError). Items may carry `length` or run to the next newline.
 * Broken items are skipped and counted in `malformed`:
 * - item header not a JSON object: skipped together with the line after it
 *   (its presumed payload), then parsing resumes;
 * - `length` not a non-negative integer: skipped like a bad header;
 * - payload not followed by a newline (or \r\n, or the end): skipped up to the
 *   next newline;
 * - missing or empty `type`: its payload is skipped properly;
 * - `length` past the end of the body: nothing after it can be framed, parsing ends.
 * Whitespace and blank lines before the envelope header, between items and at
 * the end are ignored; a \r before the newline that ends a header is tolerated.
 */
export function parseEnvelope(bytes: Uint8Array): ParsedEnvelope {
  const len = bytes.byteLength;
  let start = 0;
  while (start < len && isWs(bytes[start])) start++;
  let eol = bytes.indexOf(NL, start);
  if (eol < 0) eol = len;
  const headers = headerObject(bytes, start, eol);
  if (!headers) throw new BadPayloadError('envelope header (the first line) must be a JSON object');

  const items: EnvelopeItem[] = [];
  let malformed = 0;
  let pos = eol + 1;
  while (pos < len) {
    if (isWs(bytes[pos])) {
      pos++;
      continue;
    }
    let headerEnd = bytes.indexOf(NL, pos);
    if (headerEnd < 0) headerEnd = len;
    const itemHeaders = headerObject(bytes, pos, headerEnd);
    const payloadStart = Math.min(headerEnd + 1, len);
    if (!itemHeaders) {
      malformed++;
      pos = afterNextNewline(bytes, payloadStart);
      continue;
    }

    const length = itemHeaders.length;
    let payloadEnd: number;
    let next: number;
    if (length === undefined || length === null) {
      payloadEnd = bytes.indexOf(NL, payloadStart);
      if (payloadEnd < 0) payloadEnd = len;
      next = payloadEnd + 1;
    } else if (typeof length === 'number' && Number.isSafeInteger(length) && length >= 0) {
      payloadEnd = payloadStart + length;
      if (payloadEnd > len) {
        malformed++;
        break;
      }
      if (payloadEnd === len) next = len;
      else if (bytes[payloadEnd] === NL) next = payloadEnd + 1;
      else if (bytes[payloadEnd] === CR && bytes[payloadEnd + 1] === NL) next = payloadEnd + 2;
      else {
        malformed++;
        pos = afterNextNewline(bytes, payloadEnd);
        continue;
      }
    } else {
      malformed++;
      pos = afterNextNewline(bytes, payloadStart);
      continue;
    }

    const type = itemHeaders.type;
    if (typeof type !== 'string' || type === '') {
      malformed++;
    } else {
      items.push({ type, headers: itemHeaders, payload: bytes.subarray(payloadStart, payloadEnd) });
    }
    pos = next;
  }
  return { headers, items, malformed };
}

function startsWithBrace(bytes: Uint8Array): boolean {
  for (let i = 0; i < bytes.byteLength; i++) {
    const b = bytes[i];
    if (b === LBRACE) return true;
    if (!isWs(b)) return false;
  }
  return false;
}

// Standard and URL-safe base64 alphabets, padding, and whitespace (line-wrapped base64).
const BASE64_BYTE = new Uint8Array(256);
for (const c of 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_=\r\n\t ') {
  BASE64_BYTE[c.charCodeAt(0)] = 1;
}

const ascii = new TextDecoder();

/**
 * Lenient base64 (bytes already checked to be base64 characters and whitespace),
 * decoding exactly as Node's Buffer does: whitespace skipped, URL-safe `-` and `_`
 * accepted, padding optional, decoding ends at the first `=`, a dangling last
 * character ignored. Web APIs only (atob).
 */
export function decodeBase64(bytes: Uint8Array): Uint8Array {
  let text = ascii.decode(bytes).replace(/[\r\n\t ]+/g, '');
  const pad = text.indexOf('=');
  if (pad >= 0) text = text.slice(0, pad);
  text = text.replace(/[-_]/g, (c) => (c === '-' ? '+' : '/'));
  if (text.length % 4 === 1) text = text.slice(0, -1);
  const binary = atob(text);
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

/**
 * Decodes a legacy /store/ body (after Content-Encoding): JSON as is; else
 * base64 of JSON; else base64 of zlib-deflated JSON (ancient SDKs). Returns
 * bytes that start with `{`; whether they parse is checked once, by
 * normalizeEvent (its InvalidItemError means "400" on this endpoint).
 */
export function decodeStoreBody(bytes: Uint8Array, decompress: Decompress): Uint8Array {
  if (startsWithBrace(bytes)) return bytes;
  let sawData = false;
  for (let i = 0; i < bytes.byteLength; i++) {
    const b = bytes[i];
    if (BASE64_BYTE[b] === 0) throw new BadPayloadError('store body must be a JSON object (or base64 of one)');
    if (!isWs(b)) sawData = true;
  }
  if (!sawData) throw new BadPayloadError('store body is empty; it must be a JSON event object');
  const decoded = decodeBase64(bytes);
  if (startsWithBrace(decoded)) return decoded;
  let inflated: Uint8Array | null = null;
  try {
    inflated = decodeContent(decoded, 'deflate', MAX_BODY_BYTES, decompress);
  } catch (err) {
    if (!(err instanceof BadPayloadError)) throw err;
  }
  if (inflated && startsWithBrace(inflated)) return inflated;
  throw new BadPayloadError('store body must be a JSON object (or base64 of one, optionally zlib-compressed)');
}
