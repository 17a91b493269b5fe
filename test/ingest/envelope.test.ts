// Envelope grammar (protocol notes §2.1) and legacy /store/ body decoding (§3.9).
import { deflateRawSync, deflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { decodeBase64, decodeStoreBody, parseEnvelope } from '../../src/ingest/envelope.js';
import { BadPayloadError } from '../../src/errors.js';
import { nodeIngestRuntime } from '../../src/editions/node/runtime.js';

const { decompress } = nodeIngestRuntime;

const enc = new TextEncoder();
const dec = new TextDecoder();
const bytes = (s: string) => enc.encode(s);
const text = (b: Uint8Array) => dec.decode(b);
const summary = (s: string) => {
  const env = parseEnvelope(bytes(s));
  return { items: env.items.map((i) => [i.type, text(i.payload)]), malformed: env.malformed };
};

const EVENT = '{"event_id":"53581e2b976e4b7c89e8cf789073fd8e","message":"hi"}';

describe('parseEnvelope: grammar', () => {
  it('reads the header and an item without length, with no trailing newline', () => {
    const env = parseEnvelope(bytes(`{"event_id":"abc","sent_at":"2026-01-01T00:00:00Z"}\n{"type":"event"}\n${EVENT}`));
    expect(env.headers).toEqual({ event_id: 'abc', sent_at: '2026-01-01T00:00:00Z' });
    expect(env.malformed).toBe(0);
    expect(env.items).toHaveLength(1);
    expect(env.items[0].type).toBe('event');
    expect(env.items[0].headers).toEqual({ type: 'event' });
    expect(text(env.items[0].payload)).toBe(EVENT);
  });

  it('accepts a trailing newline', () => {
    expect(summary(`{}\n{"type":"event"}\n${EVENT}\n`)).toEqual({ items: [['event', EVENT]], malformed: 0 });
  });

  it('uses `length` exactly, even when the payload contains newlines', () => {
    const payload = 'line one\nline two\n';
    const s = `{}\n{"type":"attachment","length":${payload.length}}\n${payload}\n{"type":"event"}\n${EVENT}`;
    expect(summary(s)).toEqual({
      items: [
        ['attachment', payload],
        ['event', EVENT],
      ],
      malformed: 0,
    });
  });

  it('counts `length` in bytes, not characters', () => {
    const payload = '{"message":"héllo ✓"}';
    const s = `{}\n{"type":"event","length":${bytes(payload).byteLength}}\n${payload}\n{"type":"session"}\n{}`;
    expect(summary(s)).toEqual({
      items: [
        ['event', payload],
        ['session', '{}'],
      ],
      malformed: 0,
    });
  });

  it('accepts empty items with length 0 and without length', () => {
    const s = `{}\n{"type":"attachment","length":0}\n\n{"type":"client_report"}\n\n{"type":"event"}\n${EVENT}`;
    expect(summary(s)).toEqual({
      items: [
        ['attachment', ''],
        ['client_report', ''],
        ['event', EVENT],
      ],
      malformed: 0,
    });
  });

  it('accepts an item with length at the very end with no newline after it', () => {
    expect(summary(`{}\n{"type":"event","length":${EVENT.length}}\n${EVENT}`)).toEqual({
      items: [['event', EVENT]],
      malformed: 0,
    });
  });

  it('accepts envelopes with no items', () => {
    expect(summary('{}')).toEqual({ items: [], malformed: 0 });
    expect(summary('{"sent_at":"2026-01-01T00:00:00Z"}\n')).toEqual({ items: [], malformed: 0 });
  });

  it('tolerates \\r\\n after the envelope and item headers', () => {
    const s = `{"event_id":"x"}\r\n{"type":"event"}\r\n${EVENT}\n{"type":"event","length":2}\r\n{}\r\n`;
    const env = parseEnvelope(bytes(s));
    expect(env.headers).toEqual({ event_id: 'x' });
    expect(env.items.map((i) => text(i.payload))).toEqual([EVENT, '{}']);
    expect(env.malformed).toBe(0);
  });

  it('tolerates trailing blank lines and whitespace', () => {
    expect(summary(`{}\n{"type":"event"}\n${EVENT}\n\n\n  \r\n`)).toEqual({ items: [['event', EVENT]], malformed: 0 });
  });

  it('keeps unknown item types for the caller to drop', () => {
    expect(summary(`{}\n{"type":"profile"}\n{}\n{"type":"event"}\n${EVENT}`).items.map((i) => i[0])).toEqual([
      'profile',
      'event',
    ]);
  });

  it('returns payloads as views of the body, not copies', () => {
    const body = bytes(`{}\n{"type":"event"}\n${EVENT}`);
    const env = parseEnvelope(body);
    expect(env.items[0].payload.buffer).toBe(body.buffer);
    expect(env.items[0].payload.byteOffset).toBe(body.byteLength - EVENT.length);
  });

  it('parses the envelope header as given, keeping unknown keys', () => {
    const env = parseEnvelope(bytes('{"dsn":"http://k@h/1","custom":{"a":1}}\n'));
    expect(env.headers).toEqual({ dsn: 'http://k@h/1', custom: { a: 1 } });
  });
});

describe('parseEnvelope: a header line that is not a JSON object is a bad payload', () => {
  it.each([
    ['not JSON', 'hello\n{"type":"event"}\n{}'],
    ['truncated JSON', '{"event_id":\n{"type":"event"}\n{}'],
    ['a JSON array', '[]\n{"type":"event"}\n{}'],
    ['a JSON string', '"x"\n'],
    ['null', 'null\n'],
    ['an empty body', ''],
    ['only newlines', '\n\n'],
  ])('%s', (_name, body) => {
    expect(() => parseEnvelope(bytes(body))).toThrow(BadPayloadError);
  });
});

describe('parseEnvelope: malformed items are skipped and counted', () => {
  it('skips an item whose header is not JSON (with its payload line) and reads the next one', () => {
    const s = `{}\n{"type":"event"\n{"garbage":true}\n{"type":"event"}\n${EVENT}`;
    expect(summary(s)).toEqual({ items: [['event', EVENT]], malformed: 1 });
  });

  it('skips an item whose header is a JSON array', () => {
    expect(summary(`{}\n["event"]\n{}\n{"type":"event"}\n${EVENT}`)).toEqual({
      items: [['event', EVENT]],
      malformed: 1,
    });
  });

  it('ends parsing at a `length` past the end, keeping the items before it', () => {
    // What follows cannot be framed any more: the later item is not read either.
    const s = `{}\n{"type":"event"}\n${EVENT}\n{"type":"event","length":5000}\n{"x":1}\n{"type":"event"}\n${EVENT}`;
    expect(summary(s)).toEqual({ items: [['event', EVENT]], malformed: 1 });
  });

  it('skips an item without a type but with a length, without reading its payload as a header', () => {
    const inner = '{"type":"event"}';
    const s = `{}\n{"length":${inner.length}}\n${inner}\n{"type":"event"}\n${EVENT}`;
    expect(summary(s)).toEqual({ items: [['event', EVENT]], malformed: 1 });
  });

  it('skips items with an empty or non-string type', () => {
    const s = `{}\n{"type":""}\n{}\n{"type":7}\n{}\n{"type":"event"}\n${EVENT}`;
    expect(summary(s)).toEqual({ items: [['event', EVENT]], malformed: 2 });
  });

  it('skips an item whose payload is not followed by a newline, resuming at the next line', () => {
    // length 3 stops inside the payload: the byte after it is not a newline.
    const s = `{}\n{"type":"event","length":3}\n${EVENT}\n{"type":"event"}\n${EVENT}`;
    expect(summary(s)).toEqual({ items: [['event', EVENT]], malformed: 1 });
  });

  it.each([['-1'], ['"12"'], ['1.5'], ['true']])('skips an item with length %s', (len) => {
    const s = `{}\n{"type":"event","length":${len}}\n${EVENT}\n{"type":"event"}\n${EVENT}`;
    expect(summary(s)).toEqual({ items: [['event', EVENT]], malformed: 1 });
  });

  it('treats length null as absent', () => {
    expect(summary(`{}\n{"type":"event","length":null}\n${EVENT}`)).toEqual({
      items: [['event', EVENT]],
      malformed: 0,
    });
  });
});

describe('decodeBase64', () => {
  it('decodes exactly as Node Buffer does (whitespace, URL-safe, padding, a stray =)', () => {
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_=\r\n\t ';
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
    for (let n = 0; n < 5000; n++) {
      let text = '';
      for (let i = next() % 24; i > 0; i--) text += alphabet[next() % alphabet.length];
      expect(
        Buffer.from(decodeBase64(Buffer.from(text))).equals(Buffer.from(text, 'base64')),
        JSON.stringify(text),
      ).toBe(true);
    }
  });
});

describe('decodeStoreBody', () => {
  const json = bytes(EVENT);

  it('returns a JSON body as it is', () => {
    expect(decodeStoreBody(json, decompress)).toBe(json);
    const padded = bytes(`  \n${EVENT}`);
    expect(decodeStoreBody(padded, decompress)).toBe(padded);
  });

  it('decodes base64 JSON', () => {
    expect(text(decodeStoreBody(bytes(Buffer.from(EVENT).toString('base64')), decompress))).toBe(EVENT);
  });

  it('decodes URL-safe and line-wrapped base64', () => {
    const b64 = Buffer.from(EVENT).toString('base64url');
    const wrapped = `${b64.slice(0, 20)}\n${b64.slice(20)}\n`;
    expect(text(decodeStoreBody(bytes(wrapped), decompress))).toBe(EVENT);
  });

  it('decodes base64 of zlib-compressed JSON, and of raw deflate', () => {
    expect(text(decodeStoreBody(bytes(deflateSync(EVENT).toString('base64')), decompress))).toBe(EVENT);
    expect(text(decodeStoreBody(bytes(deflateRawSync(EVENT).toString('base64')), decompress))).toBe(EVENT);
  });

  it.each([
    ['empty', ''],
    ['whitespace', '  \n'],
    ['text that is not base64', 'this is not an event!'],
    ['base64 of something that is neither JSON nor zlib', Buffer.from('hello world, plain').toString('base64')],
    ['base64 of zlib data that is not JSON', deflateSync('not json').toString('base64')],
    ['a JSON array', '[1,2]'],
  ])('refuses %s', (_name, body) => {
    expect(() => decodeStoreBody(bytes(body), decompress)).toThrow(BadPayloadError);
  });
});
