// The streaming multipart reader: bodies as undici's FormData encodes them, cut into
// pieces of every size, parts read or skipped, and the malformed bodies it refuses.
import { describe, expect, it } from 'vitest';
import { MultipartError, MultipartLimitError, multipartBoundary, parseMultipart } from '../../src/symbols/multipart.js';

async function encode(form: FormData): Promise<{ body: Uint8Array; boundary: string }> {
  const res = new Response(form);
  const boundary = multipartBoundary(res.headers.get('content-type'))!;
  return { body: new Uint8Array(await res.arrayBuffer()), boundary };
}

async function* pieces(bytes: Uint8Array, size: number): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < bytes.length; i += size) yield bytes.slice(i, i + size);
}

async function readAll(body: AsyncIterable<Uint8Array>, boundary: string, skip: string[] = []) {
  const out: { name: string; filename: string | null; data: string }[] = [];
  for await (const part of parseMultipart(body, boundary)) {
    if (skip.includes(part.name)) continue;
    const chunks: Uint8Array[] = [];
    for await (const c of part.body) chunks.push(c);
    out.push({ name: part.name, filename: part.filename, data: Buffer.concat(chunks).toString('latin1') });
  }
  return out;
}

describe('streaming multipart', () => {
  it('reads fields and files whatever the piece size, keeping near-boundaries inside the content', async () => {
    const boundaryLike = '\r\n--\r\n--formdata\r\n-';
    const file = Buffer.concat([
      Buffer.from(`head${boundaryLike}`),
      Buffer.from(Array.from({ length: 3000 }, (_, i) => i & 0xff)),
      Buffer.from('\r\n'),
    ]);
    const form = new FormData();
    form.append('kind', 'sourcemap');
    form.append('release', 'web@1 ünïcode');
    form.append('file', new Blob([file]), '~/static/app.min.js.map');
    form.append('file', new Blob(['second']), 'b.map');
    const { body, boundary } = await encode(form);
    for (const size of [1, 2, 3, 7, 64, 1000, body.length]) {
      const parts = await readAll(pieces(body, size), boundary);
      expect(
        parts.map((p) => [p.name, p.filename]),
        `size ${size}`,
      ).toEqual([
        ['kind', null],
        ['release', null],
        ['file', '~/static/app.min.js.map'],
        ['file', 'b.map'],
      ]);
      expect(Buffer.from(parts[1].data, 'latin1').toString('utf8')).toBe('web@1 ünïcode');
      expect(Buffer.from(parts[2].data, 'latin1').equals(file), `size ${size}`).toBe(true);
      expect(parts[3].data).toBe('second');
    }
    // A part the caller does not read is skipped.
    expect((await readAll(pieces(body, 5), boundary, ['file'])).map((p) => p.name)).toEqual(['kind', 'release']);
  });

  it('refuses bodies without a boundary, cut short, or with endless headers', async () => {
    const form = new FormData();
    form.append('file', new Blob(['data']), 'a.map');
    const { body, boundary } = await encode(form);
    const cases: [string, Uint8Array][] = [
      ['no boundary', new TextEncoder().encode('just text')],
      ['cut short', body.subarray(0, body.length - 30)],
      [
        'endless headers',
        new TextEncoder().encode(`--${boundary}\r\nContent-Disposition: form-data; name="a"${' x'.repeat(20000)}`),
      ],
      [
        'no disposition',
        new TextEncoder().encode(`--${boundary}\r\nContent-Type: text/plain\r\n\r\nx\r\n--${boundary}--\r\n`),
      ],
    ];
    for (const [name, bytes] of cases)
      await expect(readAll(pieces(bytes, 100), boundary), name).rejects.toBeInstanceOf(MultipartError);
  });

  it('finds the boundary in the content type', () => {
    expect(multipartBoundary('multipart/form-data; boundary=abc')).toBe('abc');
    expect(multipartBoundary('multipart/form-data; charset=utf-8; boundary="a b"')).toBe('a b');
    expect(multipartBoundary('application/json')).toBeNull();
    expect(multipartBoundary(null)).toBeNull();
  });

  it('enforces the limits a caller sets: parts, a part read whole, the whole body', async () => {
    const form = new FormData();
    for (let i = 0; i < 5; i++) form.append('file', new Blob([new Uint8Array(1000).fill(i)]), `f${i}`);
    const { body, boundary } = await encode(form);
    const limitOf = async (limits: Parameters<typeof parseMultipart>[2], max = 1000) => {
      try {
        let read = 0;
        for await (const part of parseMultipart(pieces(body, 100), boundary, limits)) {
          const bytes = await part.bytes(max);
          expect(bytes.length).toBe(1000);
          expect(bytes[999]).toBe(read);
          read++;
        }
        return read;
      } catch (err) {
        expect(err).toBeInstanceOf(MultipartLimitError);
        expect(err).toBeInstanceOf(MultipartError);
        return (err as MultipartLimitError).limit;
      }
    };
    expect(await limitOf({})).toBe(5);
    expect(await limitOf({ maxParts: 5, maxBytes: body.length })).toBe(5);
    expect(await limitOf({ maxParts: 4 })).toBe('parts');
    expect(await limitOf({ maxBytes: body.length - 1 })).toBe('body');
    expect(await limitOf({}, 999)).toBe('part');
  });
});
