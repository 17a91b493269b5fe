// Property-based fuzzing of the pure request-side code (fast-check, fixed seed,
// bounded runs): the envelope parser, the /store/ body decoder, the normaliser, the
// session parsers, the hygiene rules and the DSN/auth parsers. Whatever the input,
// each fails only with its own error kind (which the routes map to 4xx or a skipped
// item), and what it accepts can be serialised and stored.
import { createHash } from 'node:crypto';
import { gunzipSync, inflateRawSync, inflateSync, brotliDecompressSync } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { depthOf } from '../helpers/json.js';
import {
  AuthError,
  credentialFromEnvelopeDsn,
  credentialsFromRequest,
  parseBasicAuthHeader,
  parseDsn,
  parseSentryAuthHeader,
} from '../../src/ingest/auth.js';
import { decodeStoreBody, parseEnvelope } from '../../src/ingest/envelope.js';
import { BadPayloadError, InvalidItemError, PayloadTooLargeError } from '../../src/errors.js';
import { cleanJsonValue, hasUnsafeText, jsonNeedsCleaning } from '../../src/ingest/hygiene.js';
import { MAX_JSON_DEPTH } from '../../src/limits.js';
import { eventDetailFromRaw, normalizeEvent } from '../../src/ingest/normalize.js';
import { parseSessionAggregates, parseSessionUpdate } from '../../src/ingest/sessions.js';
import { FUZZ } from '../helpers/fuzz-config.js';

const md5Hex = (s: string) => createHash('md5').update(s).digest('hex');
const enc = new TextEncoder();
const ctx = { receivedAt: Date.UTC(2026, 10, 25), sentAt: null, envelopeEventId: null, clientIp: '10.0.0.1', md5Hex };

const decompress = (format: string, bytes: Uint8Array, max: number): Uint8Array => {
  const opts = { maxOutputLength: max };
  if (format === 'gzip') return gunzipSync(bytes, opts);
  if (format === 'deflate') return inflateSync(bytes, opts);
  if (format === 'deflate-raw') return inflateRawSync(bytes, opts);
  return brotliDecompressSync(bytes, opts);
};

/** Text with the characters that break things: NUL, lone surrogates, newlines, quotes, escapes. */
const nastyString = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({
    unit: fc.constantFrom(
      '\u0000',
      '\ud800',
      '\udc00',
      '\n',
      '\r',
      '"',
      '\\',
      '%',
      '{',
      '}',
      '[',
      ']',
      'a',
      '0',
      ' ',
      '\ufffd',
      '😀',
    ),
    maxLength: 30,
  }),
  fc.string({ unit: 'binary', maxLength: 20 }),
);

/** Percent-encoding, well-formed or not (`%ff`, `%e0%a0`, `%z`). */
const percentish = fc.string({
  unit: fc.constantFrom('%', 'f', 'F', '0', '8', 'e', 'z', 'a', 'c', '3'),
  minLength: 1,
  maxLength: 9,
});

/** JSON-like values with event-shaped keys, so the normaliser's branches are reached. */
const eventKey = fc.constantFrom(
  'event_id',
  'timestamp',
  'level',
  'platform',
  'release',
  'dist',
  'environment',
  'user',
  'tags',
  'contexts',
  'exception',
  'values',
  'stacktrace',
  'frames',
  'filename',
  'function',
  'lineno',
  'in_app',
  'mechanism',
  'handled',
  'exception_id',
  'parent_id',
  'is_exception_group',
  'logentry',
  'message',
  'params',
  'formatted',
  'breadcrumbs',
  'request',
  'headers',
  'User-Agent',
  'extra',
  'sdk',
  'name',
  'fingerprint',
  'threads',
  'thread_id',
  'debug_meta',
  'images',
  'transaction',
  'type',
  'value',
  'os',
  'device',
  'model',
  'version',
  'id',
  'ip_address',
  'instruction_addr',
  'synthetic',
  'sid',
  'started',
  'status',
  'errors',
  'attrs',
  'aggregates',
  'exited',
  'crashed',
  'unhandled',
  '__proto__',
  'constructor',
);
const { tree: jsonish } = fc.letrec((tie) => ({
  tree: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    nastyString,
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('tree'), { maxLength: 5 }),
    fc.dictionary(fc.oneof(eventKey, nastyString), tie('tree'), { maxKeys: 6 }),
  ),
}));

/** JSON text of arbitrary depth (built as text: JSON.stringify would recurse). */
const deepJson = fc
  .tuple(fc.integer({ min: 0, max: 3000 }), fc.constantFrom('[', '{"a":'), jsonish)
  .map(([depth, open, inner]) => {
    const close = open === '[' ? ']' : '}';
    return `{"exception":{"values":[{"type":"E","value":${open.repeat(depth)}${JSON.stringify(inner) ?? 'null'}${close.repeat(depth)}}]},"extra":${open.repeat(depth)}1${close.repeat(depth)}}`;
  });

const payloadBytes = fc.oneof(
  jsonish.map((v) => enc.encode(JSON.stringify(v) ?? 'null')),
  fc.dictionary(eventKey, jsonish, { maxKeys: 12 }).map((v) => enc.encode(JSON.stringify(v))),
  deepJson.map((s) => enc.encode(s)),
  fc.uint8Array({ maxLength: 200 }),
);

function allStrings(root: unknown): string[] {
  const out: string[] = [];
  const stack: unknown[] = [root];
  while (stack.length) {
    const v = stack.pop();
    if (typeof v === 'string') out.push(v);
    else if (typeof v === 'object' && v !== null)
      for (const k of Object.keys(v)) out.push(k), stack.push((v as Record<string, unknown>)[k]);
  }
  return out;
}

const only = (kinds: Array<new (...args: any[]) => Error>) => (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    if (!kinds.some((k) => err instanceof k)) throw err;
  }
};

describe('properties of the request-side parsers', () => {
  it('parseEnvelope fails only with BadPayloadError, and its items are views into the body', () => {
    const envelopeText = fc
      .array(
        fc.oneof(
          jsonish.map((v) => JSON.stringify(v) ?? ''),
          nastyString,
          fc.constant('{"type":"event","length":5}'),
        ),
        { maxLength: 8 },
      )
      .map((lines) => lines.join('\n'));
    fc.assert(
      fc.property(
        fc.oneof(
          envelopeText.map((s) => enc.encode(s)),
          fc.uint8Array({ maxLength: 300 }),
        ),
        (bytes) => {
          only([BadPayloadError])(() => {
            const env = parseEnvelope(bytes);
            for (const item of env.items) expect(item.payload.buffer).toBe(bytes.buffer);
          });
        },
      ),
      FUZZ,
    );
  });

  it('decodeStoreBody fails only with BadPayloadError or PayloadTooLargeError', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ maxLength: 300 }),
          nastyString.map((s) => enc.encode(s)),
        ),
        (bytes) => {
          only([BadPayloadError, PayloadTooLargeError])(() => decodeStoreBody(bytes, decompress as never));
        },
      ),
      FUZZ,
    );
  });

  it('normalizeEvent fails only with InvalidItemError; what it accepts is well-formed, at most 64 deep, and its detail reads back', () => {
    fc.assert(
      fc.property(payloadBytes, (bytes) => {
        only([InvalidItemError])(() => {
          const e = normalizeEvent(bytes, ctx);
          expect(e.fingerprint).toMatch(/^[0-9a-f]{32}$/);
          expect(e.title.length).toBeLessThanOrEqual(100);
          const columns = [
            e.title,
            e.message,
            e.release,
            e.dist,
            e.environment,
            e.errorType,
            e.location,
            e.platform,
            e.screen,
            e.sdkName,
            e.userId,
            e.userEmail,
            e.userUsername,
            e.userIp,
            e.userKey,
            e.deviceId,
            e.deviceModel,
            e.osName,
            e.osVersion,
            ...Object.keys(e.tags),
            ...Object.values(e.tags),
          ];
          for (const c of columns) if (typeof c === 'string') expect(hasUnsafeText(c), JSON.stringify(c)).toBe(false);
          const stored = JSON.parse(new TextDecoder().decode(e.raw));
          expect(depthOf(stored)).toBeLessThanOrEqual(MAX_JSON_DEPTH);
          for (const s of allStrings(stored)) expect(hasUnsafeText(s)).toBe(false);
          const detail = eventDetailFromRaw(e.raw, e.userIp);
          expect(() => JSON.stringify(detail)).not.toThrow();
        });
      }),
      FUZZ,
    );
  });

  it('the session parsers fail only with InvalidItemError, and store no unsafe text', () => {
    fc.assert(
      fc.property(payloadBytes, (bytes) => {
        only([InvalidItemError])(() => {
          const s = parseSessionUpdate(bytes, ctx);
          for (const v of [s.sid, s.release, s.environment, s.status, s.did])
            if (typeof v === 'string') expect(hasUnsafeText(v)).toBe(false);
        });
        only([InvalidItemError])(() => {
          for (const a of parseSessionAggregates(bytes, ctx))
            expect(hasUnsafeText(a.release) || hasUnsafeText(a.environment)).toBe(false);
        });
      }),
      FUZZ,
    );
  });

  it('jsonNeedsCleaning never misses a text whose parsed value the cleaner changes', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          jsonish.map((v) => JSON.stringify(v) ?? 'null'),
          deepJson,
        ),
        (json) => {
          const value = JSON.parse(json);
          if (!jsonNeedsCleaning(json)) expect(JSON.stringify(cleanJsonValue(value))).toBe(JSON.stringify(value));
        },
      ),
      FUZZ,
    );
  });

  it('cleanJsonValue is idempotent and leaves clean values equal', () => {
    fc.assert(
      fc.property(jsonish, (v) => {
        const once = cleanJsonValue(v);
        expect(cleanJsonValue(once)).toEqual(once);
        if (!allStrings(v).some(hasUnsafeText)) expect(JSON.stringify(once)).toBe(JSON.stringify(v));
      }),
      FUZZ,
    );
  });

  it('the DSN and auth parsers never throw anything but AuthError', () => {
    const dsnLike = fc.oneof(
      nastyString,
      fc
        .tuple(fc.constantFrom('http', 'https', 'ftp', ''), fc.oneof(nastyString, percentish), nastyString, nastyString)
        .map(([s, k, h, p]) => `${s}://${k}@${h}/${p}`),
      fc.tuple(percentish, fc.nat({ max: 99 })).map(([k, id]) => `http://${k}@127.0.0.1/${id}`),
      fc.webUrl({ withQueryParameters: true, withFragments: true }),
    );
    fc.assert(
      fc.property(dsnLike, nastyString, nastyString, nastyString, (dsn, header, authorization, query) => {
        only([])(() => parseDsn(dsn));
        only([AuthError])(() => credentialFromEnvelopeDsn(dsn));
        only([AuthError])(() => parseSentryAuthHeader(header));
        only([AuthError])(() => parseBasicAuthHeader(authorization));
        only([AuthError])(() =>
          credentialsFromRequest({ xSentryAuth: header, authorization, query: new URLSearchParams(query) }),
        );
      }),
      FUZZ,
    );
  });
});
