// The dashboard's output helpers that turn data into markup: what senders control stays
// text, whatever it holds.
import { describe, expect, it } from 'vitest';
import { breakable } from '../../src/dashboard/html.js';

describe('breakable', () => {
  it('lets a release wrap at its parts: a <wbr> after each separator, nowhere else', async () => {
    expect(String(await breakable('com.example.shop@1.0.0+100'))).toBe(
      'com.<wbr>example.<wbr>shop@<wbr>1.<wbr>0.<wbr>0+<wbr>100',
    );
    expect(String(await breakable('production'))).toBe('production');
    expect(String(await breakable(''))).toBe('');
  });

  it('escapes every piece, separators or not', async () => {
    expect(String(await breakable('<img src=x onerror=alert(1)>.js'))).toBe(
      '&lt;img src=x onerror=alert(1)&gt;.<wbr>js',
    );
    expect(String(await breakable('a"b\'c&d/<script>'))).toBe('a&quot;b&#39;c&amp;d/<wbr>&lt;script&gt;');
  });
});
