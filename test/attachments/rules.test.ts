// The attachment rules without a database: limits, names, content types, which event
// the files belong to, and image sniffing by magic bytes.
import { describe, expect, it } from 'vitest';
import {
  cleanAttachmentName,
  cleanContentType,
  collectAttachments,
  contentDisposition,
  servedContentType,
  sniffImage,
} from '../../src/attachments/rules.js';
import { PayloadTooLargeError } from '../../src/errors.js';
import {
  MAX_ATTACHMENT_BYTES,
  MAX_ATTACHMENTS_PER_EVENT,
  MAX_MINIDUMP_BYTES,
  MAX_VIEW_HIERARCHY_RENDER_BYTES,
} from '../../src/limits.js';
import { readViewHierarchy } from '../../src/attachments/view-hierarchy.js';

const ID = 'a'.repeat(32);
const item = (headers: Record<string, unknown>, size = 3) => ({
  headers: { type: 'attachment', ...headers },
  payload: new Uint8Array(size),
});

describe('collectAttachments', () => {
  it('keeps names, types and attachment types, defaulting what is missing or unknown', () => {
    const { attachments, dropped } = collectAttachments(
      [
        item({ filename: 'screenshot.png', content_type: 'image/png' }),
        item({ attachment_type: 'event.view_hierarchy' }),
        item({ attachment_type: 'event.bogus', content_type: 'text/html; charset=x' }),
      ],
      ID,
    );
    expect(dropped).toBe(0);
    expect(attachments.map((a) => [a.eventId, a.name, a.contentType, a.attachmentType])).toEqual([
      [ID, 'screenshot.png', 'image/png', 'event.attachment'],
      [ID, 'view-hierarchy.json', 'application/octet-stream', 'event.view_hierarchy'],
      [ID, 'attachment', 'text/html', 'event.attachment'],
    ]);
  });

  it('refuses the envelope for a file over its type limit, allowing larger minidumps', () => {
    expect(() => collectAttachments([item({}, MAX_ATTACHMENT_BYTES + 1)], ID)).toThrow(PayloadTooLargeError);
    expect(
      collectAttachments([item({ attachment_type: 'event.minidump' }, MAX_ATTACHMENT_BYTES + 1)], ID).attachments,
    ).toHaveLength(1);
    expect(() => collectAttachments([item({ attachment_type: 'event.minidump' }, MAX_MINIDUMP_BYTES + 1)], ID)).toThrow(
      PayloadTooLargeError,
    );
  });

  it('drops files without an event and past the count limit', () => {
    expect(collectAttachments([item({}), item({})], null)).toEqual({ attachments: [], dropped: 2 });
    const many = Array.from({ length: MAX_ATTACHMENTS_PER_EVENT + 3 }, () => item({}));
    const r = collectAttachments(many, ID);
    expect([r.attachments.length, r.dropped]).toEqual([MAX_ATTACHMENTS_PER_EVENT, 3]);
  });
});

describe('names and headers', () => {
  it('cuts paths, control characters and length from names', () => {
    expect(cleanAttachmentName('../../etc/passwd', 'event.attachment')).toBe('passwd');
    expect(cleanAttachmentName('C:\\dumps\\crash\u0000.dmp', 'event.minidump')).toBe('crash.dmp');
    expect(cleanAttachmentName('x'.repeat(500), 'event.attachment')).toHaveLength(200);
    expect(cleanAttachmentName(42, 'event.minidump')).toBe('minidump.dmp');
  });

  it('keeps only well-formed content types', () => {
    expect(cleanContentType('Image/PNG')).toBe('image/png');
    expect(cleanContentType('text/html"><script>')).toBe('application/octet-stream');
    expect(cleanContentType(undefined)).toBe('application/octet-stream');
  });

  it('quotes names in Content-Disposition safely', () => {
    expect(contentDisposition('attachment', 'a"b\\c\r\n.png')).toBe(
      `attachment; filename="a_b_c__.png"; filename*=UTF-8''a%22b%5Cc%0D%0A.png`,
    );
    expect(contentDisposition('inline', 'écran.png')).toBe(
      `inline; filename="_cran.png"; filename*=UTF-8''%C3%A9cran.png`,
    );
  });
});

describe('sniffImage', () => {
  const bytes = (...b: number[]) => new Uint8Array([...b, 0, 0, 0, 0, 0, 0, 0, 0]);
  it.each([
    ['png', bytes(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a), 'image/png'],
    ['jpeg', bytes(0xff, 0xd8, 0xff, 0xe0), 'image/jpeg'],
    ['gif89a', new TextEncoder().encode('GIF89a....'), 'image/gif'],
    ['webp', new TextEncoder().encode('RIFF\u0000\u0000\u0000\u0000WEBPVP8 '), 'image/webp'],
    ['svg', new TextEncoder().encode('<svg xmlns="http://www.w3.org/2000/svg"/>'), null],
    ['html', new TextEncoder().encode('<html><script>alert(1)</script>'), null],
    ['riff but not webp', new TextEncoder().encode('RIFF\u0000\u0000\u0000\u0000WAVEfmt '), null],
    ['empty', new Uint8Array(0), null],
  ])('%s', (_name, input, expected) => {
    expect(sniffImage(input)).toBe(expected);
  });

  it('serves an image type only for sniffed images asked for inline', () => {
    expect(servedContentType('image/png', true)).toBe('image/png');
    expect(servedContentType('image/png', false)).toBe('application/octet-stream');
    expect(servedContentType(null, true)).toBe('application/octet-stream');
  });
});

describe('readViewHierarchy', () => {
  const doc = (windows: unknown) =>
    new TextEncoder().encode(JSON.stringify({ rendering_system: 'apple_uikit', windows }));
  const chain = (depth: number): Record<string, unknown> =>
    depth === 0 ? { type: 'UILabel' } : { type: 'UIView', children: [chain(depth - 1)] };

  it('reads types, identifiers, geometry, visibility and other scalar attributes', () => {
    const vh = readViewHierarchy(
      doc([
        {
          type: 'UIWindow',
          identifier: 'main',
          x: 0,
          y: 0,
          width: 390,
          height: 844,
          alpha: 1,
          visible: true,
          children: [{ type: 'UIButton', visibility: 'gone', tag: 7 }],
        },
      ]),
    )!;
    expect(vh.renderingSystem).toBe('apple_uikit');
    expect(vh.windows[0]).toMatchObject({
      type: 'UIWindow',
      identifier: 'main',
      frame: '0,0 390×844',
      visible: true,
      attributes: [['alpha', '1']],
    });
    expect(vh.windows[0].children[0]).toMatchObject({
      type: 'UIButton',
      visible: false,
      attributes: [['tag', '7']],
      children: [],
    });
    expect([vh.nodes, vh.cut]).toEqual([2, false]);
  });

  it('cuts the tree at the node limit and at a deep nesting', () => {
    const wide = readViewHierarchy(
      doc([{ type: 'Root', children: Array.from({ length: 50 }, () => ({ type: 'Cell' })) }]),
      10,
    )!;
    expect([wide.nodes, wide.cut, wide.windows[0].children.length]).toEqual([10, true, 9]);
    expect(readViewHierarchy(doc([chain(500)]))!.cut).toBe(true);
  });

  it('is null for what is not a view hierarchy or too large to draw', () => {
    expect(readViewHierarchy(new TextEncoder().encode('not json'))).toBeNull();
    expect(readViewHierarchy(new TextEncoder().encode('{"windows": 3}'))).toBeNull();
    expect(readViewHierarchy(new Uint8Array([0xff, 0xfe]))).toBeNull();
    expect(readViewHierarchy(new Uint8Array(MAX_VIEW_HIERARCHY_RENDER_BYTES + 1))).toBeNull();
  });
});
