// Flutter / Dart symbol maps (kind `dartsymbolmap`) on both databases: an obfuscated
// Flutter build's map as `--save-obfuscation-map` writes it (original, obfuscated pairs)
// deobfuscates the exception type (title, grouping) and `Instance of '…'` in the value,
// found by release; malformed maps are a 400.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { makeProject } from '../ingest/helpers.js';
import { eventDetail, sendEvent, uploadOk, uploadSymbols } from './helpers.js';
import { parseDartSymbolMap } from '../../src/symbols/dart.js';
import { SymbolInputError } from '../../src/symbols/kinds.js';

const MAP = JSON.stringify(['CheckoutException', 'xB', 'CartService', 'Yq', 'PaymentDeclined', 'a0']);

/** An event as sentry-dart sends an obfuscated Flutter build's error (frames are native addresses). */
function flutterEvent(release: string) {
  return {
    platform: 'dart',
    release,
    sdk: { name: 'sentry.dart.flutter', version: '8.9.0' },
    exception: {
      values: [
        {
          type: 'xB',
          value: "Instance of 'xB'",
          mechanism: { type: 'FlutterError', handled: false },
          stacktrace: { frames: [{ platform: 'native', instruction_addr: '0x7a1c2f3e10', in_app: true }] },
        },
      ],
    },
  };
}

describe('parseDartSymbolMap', () => {
  it('reads pairs as obfuscated → original', () => {
    expect([...parseDartSymbolMap(new TextEncoder().encode(MAP))]).toEqual([
      ['xB', 'CheckoutException'],
      ['Yq', 'CartService'],
      ['a0', 'PaymentDeclined'],
    ]);
  });
  it.each(['{}', '["odd"]', '[1, 2]', 'not json', '["a", null]'])('refuses %s', (text) => {
    expect(() => parseDartSymbolMap(new TextEncoder().encode(text))).toThrow(SymbolInputError);
  });
});

describe.each(dialects)('Dart symbol maps on %s', (dialect) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(dialect);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('deobfuscates the exception type and value of an event of the release', async () => {
    const p = await makeProject(t);
    const [file] = await uploadOk(t, p, {
      kind: 'dartsymbolmap',
      release: 'shop@2.0.0+7',
      files: [{ name: 'obfuscation.map.json', data: MAP }],
    });
    expect(file).toMatchObject({ kind: 'dartsymbolmap', release: 'shop@2.0.0+7' });
    const detail = await eventDetail(t, p, await sendEvent(t, p, flutterEvent('shop@2.0.0+7')));
    expect(detail.title).toBe("CheckoutException: Instance of 'CheckoutException'");
    expect(detail.exceptions[0].type).toBe('CheckoutException');
    // Another release's events stay as sent.
    const other = await eventDetail(t, p, await sendEvent(t, p, flutterEvent('shop@1.0.0')));
    expect(other.title).toBe("xB: Instance of 'xB'");
  });

  it('refuses a malformed map with a 400', async () => {
    const p = await makeProject(t);
    const res = await uploadSymbols(t, p, {
      kind: 'dartsymbolmap',
      release: 'r',
      files: [{ name: 'map.json', data: '["only-one"]' }],
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toMatch(/even length/);
  });
});
