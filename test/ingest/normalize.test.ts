// Event normalisation rules (docs/ingest-normalisation.md "Event normalisation": title, location, error_type).
import { describe, expect, it } from 'vitest';
import { InvalidItemError } from '../../src/errors.js';
import { normalizeEvent, type NormalizeContext } from '../../src/ingest/normalize.js';
import { parseTimestamp } from '../../src/protocol-values.js';
import { nodeIngestRuntime } from '../../src/editions/node/runtime.js';
import { withDetail } from './detail.js';

const RECEIVED = Date.UTC(2026, 10, 21, 12, 0, 0);
const CTX: NormalizeContext = {
  receivedAt: RECEIVED,
  sentAt: null,
  envelopeEventId: null,
  clientIp: '203.0.113.7',
  md5Hex: nodeIngestRuntime.md5Hex,
};
const enc = new TextEncoder();

function norm(event: unknown, ctx: Partial<NormalizeContext> = {}) {
  return withDetail(normalizeEvent(enc.encode(JSON.stringify(event)), { ...CTX, ...ctx }));
}

const frame = (file: string, fn: string, lineno: number, inApp = true) => ({
  filename: `/srv/app/${file}`,
  function: fn,
  lineno,
  in_app: inApp,
});

describe('payload', () => {
  it.each([
    ['not JSON', 'hello'],
    ['truncated JSON', '{"message":'],
    ['a JSON array', '[{"message":"x"}]'],
    ['a JSON string', '"x"'],
    ['null', 'null'],
    ['empty', ''],
  ])('refuses %s as an invalid item', (_n, body) => {
    expect(() => normalizeEvent(enc.encode(body), CTX)).toThrow(InvalidItemError);
  });

  it('accepts Python NaN / Infinity tokens (as null) but leaves them alone inside strings', () => {
    const e = withDetail(
      normalizeEvent(enc.encode('{"message":"NaN and Infinity","extra":{"a":NaN,"b":-Infinity,"c":Infinity}}'), CTX),
    );
    expect(e.message).toBe('NaN and Infinity');
    expect(e.detail.extra).toEqual({ a: null, b: null, c: null });
  });

  it('keeps the payload bytes exactly as received in `raw`', () => {
    const payload = enc.encode('{"message": "spaced  out" ,"level":"INFO"}\r');
    expect(normalizeEvent(payload, CTX).raw).toBe(payload);
  });
});

describe('event_id', () => {
  it('takes the payload id, dashes removed and lowercased', () => {
    expect(norm({ event_id: '53581E2B-976E-4B7C-89E8-CF789073FD8E' }).eventId).toBe('53581e2b976e4b7c89e8cf789073fd8e');
  });

  it("falls back to the envelope header's id", () => {
    expect(norm({}, { envelopeEventId: 'd0c6685d-5811-46fd-9d4f-16664397d9fa' }).eventId).toBe(
      'd0c6685d581146fd9d4f16664397d9fa',
    );
  });

  it("prefers the payload's id over the envelope's", () => {
    const e = norm(
      { event_id: 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' },
      { envelopeEventId: 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb' },
    );
    expect(e.eventId).toBe('aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa');
  });

  it('skips an invalid payload id for the envelope id', () => {
    expect(norm({ event_id: 'not-an-id' }, { envelopeEventId: 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb' }).eventId).toBe(
      'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb',
    );
  });

  it('makes a random id when none is valid (invalid, nil, missing)', () => {
    const a = norm({ event_id: 'xyz' }, { envelopeEventId: '00000000-0000-0000-0000-000000000000' }).eventId;
    const b = norm({}).eventId;
    expect(a).toMatch(/^[0-9a-f]{32}$/);
    expect(b).toMatch(/^[0-9a-f]{32}$/);
    expect(a).not.toBe(b);
    expect(a).not.toBe('00000000000000000000000000000000');
  });
});

describe('parseTimestamp', () => {
  it.each([
    ['RFC 3339 with Z', '2026-11-21T13:45:21.274Z', Date.UTC(2026, 10, 21, 13, 45, 21, 274)],
    ['microseconds', '2026-11-21T13:45:43.311335Z', Date.UTC(2026, 10, 21, 13, 45, 43, 311)],
    ['no fraction', '2026-11-21T13:45:43Z', Date.UTC(2026, 10, 21, 13, 45, 43)],
    ['an offset', '2026-11-21T15:45:43+02:00', Date.UTC(2026, 10, 21, 13, 45, 43)],
    ['a negative offset', '2026-11-21T08:15:43-05:30', Date.UTC(2026, 10, 21, 13, 45, 43)],
    ['no offset (UTC)', '2026-11-21T13:45:43.5', Date.UTC(2026, 10, 21, 13, 45, 43, 500)],
    ['lowercase t and z', '2026-11-21t13:45:43z', Date.UTC(2026, 10, 21, 13, 45, 43)],
    ['seconds as a number', 1795268721.257, 1795268721257],
    ['integer seconds', 1795268721, 1795268721000],
    ['milliseconds (> 1e12)', 1795268721257, 1795268721257],
    ['seconds as a numeric string', '1795268721.5', 1795268721500],
  ])('reads %s', (_n, input, expected) => {
    expect(parseTimestamp(input)).toBe(expected);
  });

  it.each([
    ['garbage', 'yesterday'],
    ['a date only', '2026-11-21'],
    ['31 February', '2026-02-31T00:00:00Z'],
    ['month 13', '2026-13-01T00:00:00Z'],
    ['hour 24', '2026-11-21T24:00:00Z'],
    ['zero', 0],
    ['a negative number', -5],
    ['NaN', Number.NaN],
    ['null', null],
    ['an object', { t: 1 }],
    ['a boolean', true],
  ])('rejects %s', (_n, input) => {
    expect(parseTimestamp(input)).toBeNull();
  });
});

describe('timestamp', () => {
  const sentAt = RECEIVED - 5_000;
  it('uses the event timestamp', () => {
    expect(norm({ timestamp: '2026-11-21T11:00:00Z' }, { sentAt }).timestamp).toBe(Date.UTC(2026, 10, 21, 11));
  });
  it('falls back to sent_at when missing or invalid', () => {
    expect(norm({}, { sentAt }).timestamp).toBe(sentAt);
    expect(norm({ timestamp: 'soon' }, { sentAt }).timestamp).toBe(sentAt);
  });
  it('falls back to the receive time without sent_at', () => {
    expect(norm({}).timestamp).toBe(RECEIVED);
  });
  it('uses the receive time for a time more than one hour in the future', () => {
    expect(norm({ timestamp: (RECEIVED + 3_600_001) / 1000 }).timestamp).toBe(RECEIVED);
    expect(norm({}, { sentAt: RECEIVED + 7_200_000 }).timestamp).toBe(RECEIVED);
  });
  it('keeps a time exactly one hour in the future', () => {
    expect(norm({ timestamp: (RECEIVED + 3_600_000) / 1000 }).timestamp).toBe(RECEIVED + 3_600_000);
  });
});

describe('level', () => {
  it.each([
    ['fatal', 'fatal'],
    ['FATAL', 'fatal'],
    ['critical', 'fatal'],
    ['error', 'error'],
    ['Warning', 'warning'],
    ['warn', 'warning'],
    ['info', 'info'],
    ['log', 'info'],
    ['debug', 'debug'],
    ['', 'error'],
    [undefined, 'error'],
    ['verbose', 'info'],
    ['constructor', 'info'],
    [40, 'error'],
    [50, 'fatal'],
    [30, 'warning'],
    [20, 'info'],
    [10, 'debug'],
    [99, 'info'],
    [{}, 'info'],
  ])('%j → %s', (level, expected) => {
    expect(norm({ level }).level).toBe(expected);
  });
});

describe('release, dist, environment, platform, screen, sdk', () => {
  it('reads them trimmed', () => {
    const e = norm({
      release: ' app@1.0.0 ',
      dist: '77',
      environment: 'staging',
      platform: 'Node',
      transaction: 'GET /checkout',
      sdk: { name: 'sentry.javascript.node', version: '11.12.0' },
    });
    expect([e.release, e.dist, e.environment, e.platform, e.screen, e.sdkName]).toEqual([
      'app@1.0.0',
      '77',
      'staging',
      'node',
      'GET /checkout',
      'sentry.javascript.node',
    ]);
  });
  it('defaults: empty release and dist, environment production, platform other, empty screen and sdk', () => {
    const e = norm({});
    expect([e.release, e.dist, e.environment, e.platform, e.screen, e.sdkName]).toEqual([
      '',
      '',
      'production',
      'other',
      '',
      '',
    ]);
  });
  it('stringifies a numeric release and caps its length', () => {
    expect(norm({ release: 42 }).release).toBe('42');
    expect(norm({ release: 'r'.repeat(500) }).release).toHaveLength(200);
  });
});

describe('user', () => {
  it('reads id, email, username and ip; the users key is the id', () => {
    const e = norm({ user: { id: 42, email: 'a@b.c', username: 'ann', ip_address: '10.0.0.1', geo: { city: 'X' } } });
    expect([e.userId, e.userEmail, e.userUsername, e.userIp, e.userKey]).toEqual([
      '42',
      'a@b.c',
      'ann',
      '10.0.0.1',
      'id:42',
    ]);
    expect(e.detail.user).toEqual({
      id: 42,
      email: 'a@b.c',
      username: 'ann',
      ip_address: '10.0.0.1',
      geo: { city: 'X' },
    });
  });
  it('keys users by id, else email, else username, else ip', () => {
    expect(norm({ user: { email: 'a@b.c', username: 'ann', ip_address: '10.0.0.1' } }).userKey).toBe('email:a@b.c');
    expect(norm({ user: { username: 'ann', ip_address: '10.0.0.1' } }).userKey).toBe('username:ann');
    expect(norm({ user: { ip_address: '10.0.0.1' } }).userKey).toBe('ip:10.0.0.1');
    expect(norm({ user: {} }).userKey).toBeNull();
    expect(norm({}).userKey).toBeNull();
  });
  it('keeps different kinds of identity apart', () => {
    expect(norm({ user: { id: 'ann' } }).userKey).not.toBe(norm({ user: { username: 'ann' } }).userKey);
  });
  it('replaces ip_address {{auto}} with the client address', () => {
    const e = norm({ user: { username: 'root', ip_address: '{{auto}}' } });
    expect(e.userIp).toBe('203.0.113.7');
    expect(e.detail.user).toEqual({ username: 'root', ip_address: '203.0.113.7' });
    expect(norm({ user: { ip_address: '{{auto}}' } }, { clientIp: null }).userIp).toBeNull();
  });
  it('has no user without a user object', () => {
    const e = norm({ user: 'ann' });
    expect([e.userId, e.userEmail, e.userUsername, e.userIp, e.detail.user]).toEqual([null, null, null, null, null]);
  });
});

describe('device and OS', () => {
  it('reads the device model and OS from contexts, trimming the version', () => {
    const e = norm({ contexts: { device: { model: 'iPhone15,2' }, os: { name: 'Debian', version: '12.11\n' } } });
    expect([e.deviceModel, e.osName, e.osVersion]).toEqual(['iPhone15,2', 'Debian', '12.11']);
  });
  it('falls back to client_os, and finds contexts by their type under another key', () => {
    const e = norm({
      contexts: { client_os: { name: 'Windows', version: '10' }, phone: { type: 'device', model: 'Pixel 8' } },
    });
    expect([e.deviceModel, e.osName, e.osVersion]).toEqual(['Pixel 8', 'Windows', '10']);
  });
  it('prefers os over client_os', () => {
    expect(norm({ contexts: { os: { name: 'Android', version: '14' }, client_os: { name: 'Windows' } } }).osName).toBe(
      'Android',
    );
  });
  it('takes the device id from the device_id tag, else contexts.device.id, else device_unique_identifier, else app.device_app_hash', () => {
    expect(norm({ tags: { device_id: 't1' }, contexts: { device: { id: 'd1' } } }).deviceId).toBe('t1');
    expect(norm({ contexts: { device: { id: 'd1', device_unique_identifier: 'u1' } } }).deviceId).toBe('d1');
    expect(norm({ contexts: { device: { device_unique_identifier: 'u1' } } }).deviceId).toBe('u1');
    expect(norm({ contexts: { app: { device_app_hash: 'h1' } } }).deviceId).toBe('h1');
    expect(norm({ user: { id: 'u1' } }).deviceId).toBeNull();
  });
  it('has nulls without contexts', () => {
    const e = norm({ contexts: 'nope' });
    expect([e.deviceModel, e.deviceId, e.osName, e.osVersion]).toEqual([null, null, null, null]);
    expect(e.detail.contexts).toEqual({});
  });
});

describe('tags', () => {
  it('reads an object, stringifying values and skipping nulls', () => {
    expect(norm({ tags: { a: 'x', n: 5, b: true, o: { k: 1 }, z: null } }).tags).toEqual({
      a: 'x',
      n: '5',
      b: 'true',
      o: '{"k":1}',
    });
  });
  it('reads a list of pairs, skipping broken pairs', () => {
    expect(norm({ tags: [['device_id', 'abc'], ['screen', 'Checkout'], ['lonely'], 'x', [1, 2]] }).tags).toEqual({
      device_id: 'abc',
      screen: 'Checkout',
      '1': '2',
    });
  });
  it('caps keys and values at 200 characters and the count at 100', () => {
    const many: Record<string, string> = {};
    for (let i = 0; i < 150; i++) many[`k${i}`] = 'v';
    expect(Object.keys(norm({ tags: many }).tags)).toHaveLength(100);
    const long = norm({ tags: { ['k'.repeat(300)]: 'v'.repeat(300) } }).tags;
    expect(Object.keys(long)[0]).toHaveLength(200);
    expect(Object.values(long)[0]).toHaveLength(200);
  });
  it('ignores a __proto__ key', () => {
    const e = normalizeEvent(enc.encode('{"tags":{"__proto__":{"x":"1"},"a":"b"}}'), CTX);
    expect(e.tags).toEqual({ a: 'b' });
    expect(Object.getPrototypeOf(e.tags)).toBe(Object.prototype);
  });
});

describe('breadcrumbs', () => {
  const crumbs = [{ message: 'one' }, { message: 'two' }];
  it('reads {values: [...]} and a bare list, oldest first', () => {
    expect(norm({ breadcrumbs: { values: crumbs } }).detail.breadcrumbs).toEqual(crumbs);
    expect(norm({ breadcrumbs: crumbs }).detail.breadcrumbs).toEqual(crumbs);
  });
  it('drops entries that are not objects and keeps the newest 100', () => {
    expect(norm({ breadcrumbs: [1, { message: 'one' }, null] }).detail.breadcrumbs).toEqual([{ message: 'one' }]);
    const many = Array.from({ length: 150 }, (_, i) => ({ message: `m${i}` }));
    const kept = norm({ breadcrumbs: many }).detail.breadcrumbs;
    expect(kept).toHaveLength(100);
    expect(kept[0]).toEqual({ message: 'm50' });
    expect(kept[99]).toEqual({ message: 'm149' });
  });
  it('is empty without breadcrumbs', () => {
    expect(norm({}).detail.breadcrumbs).toEqual([]);
  });
});

describe('exceptions', () => {
  const ex = { type: 'TypeError', value: 'x is undefined', stacktrace: { frames: [frame('a.js', 'f', 3)] } };
  it('reads exception.values, a bare list and a single exception object alike', () => {
    const a = norm({ exception: { values: [ex] } });
    const b = norm({ exception: [ex] });
    const c = norm({ exception: ex });
    for (const e of [a, b, c]) {
      expect(e.detail.exceptions).toEqual([
        { type: 'TypeError', value: 'x is undefined', frames: ex.stacktrace.frames },
      ]);
      expect(e.errorType).toBe('TypeError');
    }
    expect(a.fingerprint).toBe(b.fingerprint);
    expect(a.fingerprint).toBe(c.fingerprint);
  });
  it('keeps module and mechanism, and tolerates nulls (Python sends module: null, mechanism: null)', () => {
    const e = norm({
      exception: {
        values: [
          { ...ex, module: null, mechanism: null },
          { ...ex, module: 'java.lang', mechanism: { type: 'generic', handled: true } },
        ],
      },
    });
    expect(e.detail.exceptions[0].module).toBeUndefined();
    expect(e.detail.exceptions[0].mechanism).toBeUndefined();
    expect(e.detail.exceptions[1].module).toBe('java.lang');
    expect(e.detail.exceptions[1].mechanism).toEqual({ type: 'generic', handled: true });
  });
  it("uses the crashed thread's stack for a main exception without one", () => {
    const frames = [{ function: 'main', instruction_addr: '0x1000' }];
    const e = norm({
      exception: { values: [{ type: 'EXC_BAD_ACCESS', value: 'KERN_INVALID_ADDRESS' }] },
      threads: {
        values: [
          { id: 1, stacktrace: { frames: [{ function: 'idle' }] } },
          { id: 2, crashed: true, stacktrace: { frames } },
        ],
      },
    });
    expect(e.detail.exceptions[0].frames).toEqual(frames);
  });
  it("uses the stack of the exception's own thread (thread_id) first", () => {
    const e = norm({
      exception: [{ type: 'E', value: 'v', thread_id: 1 }],
      threads: [
        { id: 1, stacktrace: { frames: [{ function: 'worker' }] } },
        { id: 2, crashed: true, stacktrace: { frames: [{ function: 'main' }] } },
      ],
    });
    expect(e.detail.exceptions[0].frames).toEqual([{ function: 'worker' }]);
    expect(e.detail.exceptions[0]).not.toHaveProperty('thread_id');
  });
  it('repairs frame fields of the wrong type', () => {
    const e = norm({
      exception: [
        {
          type: 'E',
          stacktrace: {
            frames: [
              { function: 'f', lineno: '12', colno: 'x', in_app: 'yes', instruction_addr: 4096, filename: null },
            ],
          },
        },
      ],
    });
    expect(e.detail.exceptions[0].frames).toEqual([{ function: 'f', lineno: 12, instruction_addr: '0x1000' }]);
  });
  it('keeps well-typed frames as they are, extra fields included', () => {
    const f = { ...frame('a.js', 'f', 3), pre_context: ['x'], vars: { a: 1 } };
    expect(
      norm({ exception: [{ type: 'E', stacktrace: { frames: [f, 'junk'] } }] }).detail.exceptions[0].frames,
    ).toEqual([f]);
  });
  it('stringifies a non-string value', () => {
    expect(norm({ exception: [{ type: 'E', value: { code: 5 } }] }).detail.exceptions[0].value).toBe('{"code":5}');
  });
});

describe('main exception, title, error_type, location', () => {
  it('takes the last exception of a chain as the main one', () => {
    const e = norm({
      exception: [
        { type: 'IOError', value: 'disk', stacktrace: { frames: [frame('io.py', 'read', 5)] } },
        { type: 'AppError', value: 'save failed', stacktrace: { frames: [frame('app.py', 'save', 9)] } },
      ],
    });
    expect([e.errorType, e.title, e.location]).toEqual(['AppError', 'AppError: save failed', 'app.py:9']);
  });
  it('takes an exception that no other names as its parent in an exception group', () => {
    const e = norm({
      exception: [
        { type: 'ValueError', value: 'child', mechanism: { type: 'chained', exception_id: 1, parent_id: 0 } },
        {
          type: 'ExceptionGroup',
          value: 'group',
          mechanism: { type: 'generic', exception_id: 0, is_exception_group: true },
        },
      ],
    });
    expect(e.errorType).toBe('ValueError');
  });
  it('titles "Type: first line of value", capped at 100 characters', () => {
    expect(norm({ exception: [{ type: 'Error', value: 'first line\nsecond line' }] }).title).toBe('Error: first line');
    const long = norm({ exception: [{ type: 'Error', value: 'x'.repeat(300) }] }).title;
    expect(long).toHaveLength(100);
    expect(long.startsWith('Error: xxx')).toBe(true);
  });
  it('titles with the type alone or the value alone', () => {
    expect(norm({ exception: [{ type: 'Error' }] }).title).toBe('Error');
    expect(norm({ exception: [{ value: 'just a value' }] }).title).toBe('just a value');
  });
  it('titles a message event with its first line, capped', () => {
    expect(norm({ message: 'hello\nworld' }).title).toBe('hello');
    expect(norm({ message: 'm'.repeat(150) }).title).toHaveLength(100);
    expect(norm({}).title).toBe('<unlabeled event>');
  });
  it('locates the innermost in-app frame as basename:lineno, skipping SDK frames', () => {
    const e = norm({
      exception: [
        {
          type: 'E',
          stacktrace: {
            frames: [
              frame('lib/outer.js', 'outer', 1),
              frame('lib/inner.js', 'inner', 7),
              frame('node_modules/react/index.js', 'render', 99, false),
              {
                filename: '/srv/app/node_modules/@sentry/core/build/esm/x.js',
                function: 'wrap',
                lineno: 3,
                in_app: true,
              },
            ],
          },
        },
      ],
    });
    expect(e.location).toBe('inner.js:7');
  });
  it('locates as basename:function without a line number, and strips URL queries', () => {
    const e = norm({
      exception: [
        {
          type: 'E',
          stacktrace: {
            frames: [{ abs_path: 'https://cdn.example.com/js/app.js?v=3', function: 'onClick', in_app: true }],
          },
        },
      ],
    });
    expect(e.location).toBe('app.js:onClick');
  });
  it('locates with the innermost frame when none is in-app', () => {
    const e = norm({
      exception: [
        { type: 'E', stacktrace: { frames: [frame('a.c', 'main', 1, false), frame('b.c', 'crash', 2, false)] } },
      ],
    });
    expect(e.location).toBe('b.c:2');
  });
  it('passes over in-app built-ins without a file (JSON.parse, <anonymous>) to the next frame with one', () => {
    // The frames @sentry/node sends for `JSON.parse('{')` thrown from app code.
    const e = norm({
      exception: [
        {
          type: 'SyntaxError',
          stacktrace: {
            frames: [
              frame('src/routes.js', 'handle', 12),
              frame('src/config.js', 'loadConfig', 31),
              { filename: '<anonymous>', function: 'JSON.parse', in_app: true },
            ],
          },
        },
      ],
    });
    expect(e.location).toBe('config.js:31');
    const builtinOnly = norm({
      exception: [
        {
          type: 'E',
          stacktrace: {
            frames: [
              { function: 'JSON.parse', in_app: true },
              { abs_path: '<anonymous>', function: 'eval', in_app: true },
            ],
          },
        },
      ],
    });
    expect(builtinOnly.location).toBe('eval');
    const libraryFile = norm({
      exception: [
        {
          type: 'E',
          stacktrace: {
            frames: [frame('node_modules/lib/index.js', 'parse', 5, false), { function: 'JSON.parse', in_app: true }],
          },
        },
      ],
    });
    expect(libraryFile.location).toBe('index.js:5');
  });
  it('has an empty location without frames', () => {
    expect(norm({ exception: [{ type: 'E', value: 'v' }] }).location).toBe('');
    expect(norm({ message: 'm' }).location).toBe('');
  });
  it('treats a synthetic exception (captureMessage with a stack) as a message: no error type, message title', () => {
    const e = norm({
      message: 'hello 42',
      exception: {
        values: [
          {
            value: 'hello 42',
            stacktrace: { frames: [frame('app.mjs', '?', 14)] },
            mechanism: { type: 'generic', handled: true, synthetic: true },
          },
        ],
      },
    });
    expect([e.errorType, e.title, e.message, e.location]).toEqual(['', 'hello 42', 'hello 42', 'app.mjs:14']);
  });
});

describe('message', () => {
  it.each([
    ['logentry.formatted', { logentry: { formatted: 'formatted text', message: 'raw %s' } }, 'formatted text'],
    [
      'logentry.message with params',
      { logentry: { message: 'user %s has %d items, 100%%', params: ['ann', 3] } },
      'user ann has 3 items, 100%',
    ],
    ['logentry.message', { logentry: { message: 'cli hello' } }, 'cli hello'],
    ['a message string', { message: 'plain' }, 'plain'],
    ['a message object', { message: { formatted: 'from object' } }, 'from object'],
    ['a message object without formatted', { message: { message: 'msg %s', params: ['x'] } }, 'msg x'],
    ['logentry before message', { logentry: { formatted: 'le' }, message: 'm' }, 'le'],
    ['the exception value', { exception: [{ type: 'E', value: 'boom' }] }, 'boom'],
    ['nothing', {}, ''],
  ])('comes from %s', (_n, event, expected) => {
    expect(norm(event).message).toBe(expected);
    expect(norm(event).detail.message).toBe(expected);
  });
});

describe('crash flag', () => {
  it('is set by level fatal', () => {
    expect(norm({ level: 'fatal', message: 'm' }).isCrash).toBe(true);
    expect(norm({ level: 'critical', message: 'm' }).isCrash).toBe(true);
  });
  it('is set by any exception with mechanism.handled false', () => {
    const cause = { type: 'Cause', mechanism: { type: 'chained', handled: false } };
    const main = { type: 'Main', mechanism: { type: 'generic', handled: true } };
    expect(norm({ exception: [cause, main] }).isCrash).toBe(true);
  });
  it('is not set for handled, unknown-handled or error-level events', () => {
    expect(norm({ exception: [{ type: 'E', mechanism: { type: 'generic', handled: true } }] }).isCrash).toBe(false);
    expect(norm({ exception: [{ type: 'E', mechanism: { type: 'generic' } }] }).isCrash).toBe(false);
    expect(norm({ exception: [{ type: 'E', mechanism: { handled: 'false' } }] }).isCrash).toBe(false);
    expect(norm({ level: 'error', message: 'm' }).isCrash).toBe(false);
  });
});

describe('the normalised event', () => {
  // It waits for its batch's commit on the main thread. An accessor on it (the lazy
  // `detail` getter it once had) lived in the old generation with a closure over the
  // payload, so every request body stayed in memory until the next full collection:
  // 25-30 MB/s of ArrayBuffers kept at saturation, and about a tenth less throughput.
  it('is plain data: no accessor or function on it keeps the payload alive', () => {
    const e = normalizeEvent(enc.encode(JSON.stringify({ message: 'm', user: { id: 'u1' }, tags: { a: 'b' } })), CTX);
    for (const [key, property] of Object.entries(Object.getOwnPropertyDescriptors(e))) {
      expect(property.get, key).toBeUndefined();
      expect(typeof property.value, key).not.toBe('function');
    }
  });
});

describe('detail', () => {
  it('carries what the event detail shows', () => {
    const images = [{ type: 'macho', debug_id: '84a04d24-0e60-3810-a8c0-90a65e2df61a', image_addr: '0x100000000' }];
    const e = norm({
      message: 'm',
      request: { url: 'http://x/err', method: 'GET' },
      extra: { a: 1 },
      sdk: { name: 'sentry.cocoa', version: '8.24.0' },
      debug_meta: { images: [...images, 'junk'] },
      logger: 'app.logger',
      server_name: 'vm',
      contexts: { app: { app_version: '1.4.0' } },
    });
    expect(e.detail).toMatchObject({
      request: { url: 'http://x/err', method: 'GET' },
      extra: { a: 1 },
      sdk: { name: 'sentry.cocoa', version: '8.24.0' },
      debug_images: images,
      logger: 'app.logger',
      server_name: 'vm',
      contexts: { app: { app_version: '1.4.0' } },
    });
    expect(e.detail.fingerprint_input).toEqual(['message', 'other', 'm']);
  });
  it('has nulls and empty lists for what the event lacks', () => {
    expect(norm({}).detail).toEqual({
      message: '',
      exceptions: [],
      breadcrumbs: [],
      contexts: {},
      user: null,
      request: null,
      extra: null,
      sdk: null,
      debug_images: [],
      threads: [],
      fingerprint_input: ['message', 'other', ''],
      logger: null,
      server_name: null,
      scrubbed: null,
    });
  });

  it('lists threads crashed first, the others in the order sent, with ids as text', () => {
    const threads = norm({
      threads: {
        values: [
          { id: 7, name: 'worker', state: 'WAITING', stacktrace: { frames: [{ function: 'park', lineno: '3' }] } },
          'not a thread',
          { id: 1, name: 'main', crashed: true, current: true, main: true },
          { id: 'x', crashed: 'yes' },
        ],
      },
    }).detail.threads;
    expect(threads).toEqual([
      { id: '1', name: 'main', crashed: true, current: true, main: true, state: null, frames: [] },
      {
        id: '7',
        name: 'worker',
        crashed: false,
        current: false,
        main: false,
        state: 'WAITING',
        frames: [{ function: 'park', lineno: 3 }],
      },
      { id: 'x', name: null, crashed: false, current: false, main: false, state: null, frames: [] },
    ]);
    expect(norm({ threads: [{ id: 2 }] }).detail.threads.map((t) => t.id)).toEqual(['2']);
  });
});
