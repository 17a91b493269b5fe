// Grouping (docs/ingest-normalisation.md "Grouping"): fingerprint stability and what splits issues.
import { describe, expect, it } from 'vitest';
import {
  computeFingerprint,
  hashGroupingInput,
  mainExceptionIndex,
  normalizeGroupingText,
} from '../../src/ingest/grouping.js';
import { normalizeEvent } from '../../src/ingest/normalize.js';
import type { NormalizedException } from '../../src/ingest/types.js';
import { nodeIngestRuntime } from '../../src/editions/node/runtime.js';
import { withDetail } from './detail.js';

const { md5Hex } = nodeIngestRuntime;

const enc = new TextEncoder();
const CTX = { receivedAt: Date.UTC(2026, 10, 21), sentAt: null, envelopeEventId: null, clientIp: null, md5Hex };
const norm = (event: unknown) => withDetail(normalizeEvent(enc.encode(JSON.stringify(event)), CTX));
const fp = (event: unknown) => norm(event).fingerprint;
const input = (event: unknown) => norm(event).detail.fingerprint_input;

type Frame = Record<string, unknown>;
const f = (module: string, fn: string, lineno: number, inApp = true): Frame => ({
  filename: `/srv/app/${module}.js`,
  module,
  function: fn,
  lineno,
  in_app: inApp,
});
const err = (frames: Frame[], type = 'TypeError', value = 'x is undefined', extra: object = {}) => ({
  platform: 'node',
  exception: { values: [{ type, value, stacktrace: { frames } }] },
  ...extra,
});

describe('fingerprint format', () => {
  it('is 32 lowercase hex characters', () => {
    expect(fp(err([f('a', 'b', 1)]))).toMatch(/^[0-9a-f]{32}$/);
    expect(hashGroupingInput(['x'], md5Hex)).toMatch(/^[0-9a-f]{32}$/);
  });
  it('is the MD5 of the JSON-encoded grouping input, unchanged across versions (stored issues keep matching)', () => {
    expect(hashGroupingInput(['x'], md5Hex)).toBe('4559c071008d3779d3efd0caa5135728');
    expect(hashGroupingInput([], md5Hex)).toBe('d751713988987e9331980363e24189ce');
    const stack = norm(err([f('a', 'b', 1)]));
    expect(stack.detail.fingerprint_input).toEqual(['stack', 'node', 'TypeError', 'a|b|1']);
    expect(stack.fingerprint).toBe('875363ba0014351800f5b05f8894418b');
    const message = norm({ platform: 'python', message: 'Order 1234 failed für Kunde ✓' });
    expect(message.detail.fingerprint_input).toEqual(['message', 'python', 'Order <n> failed für Kunde ✓']);
    expect(message.fingerprint).toBe('bccb593e9d007b6d90e63cdd3e3e6c73');
  });
  it('computeFingerprint is the hash of the grouping input', () => {
    const e = norm(err([f('a', 'b', 1)]));
    const main = e.detail.exceptions[0];
    expect(computeFingerprint({}, { platform: 'node', main, message: e.message, images: [] }, md5Hex)).toBe(
      e.fingerprint,
    );
    expect(hashGroupingInput(e.detail.fingerprint_input!, md5Hex)).toBe(e.fingerprint);
  });
});

describe('stack grouping', () => {
  const stack = [f('main', 'run', 10), f('service', 'load', 20), f('repo', 'query', 30)];

  it('gives two identical errors the same fingerprint, whatever their ids and times', () => {
    const a = err(stack, 'TypeError', 'x', { event_id: 'a'.repeat(32), timestamp: 1 });
    const b = err(stack, 'TypeError', 'x', { event_id: 'b'.repeat(32), timestamp: 2 });
    expect(fp(a)).toBe(fp(b));
  });

  it('ignores line numbers, column numbers and the value in a multi-frame stack', () => {
    const moved = [f('main', 'run', 11), { ...f('service', 'load', 25), colno: 9 }, f('repo', 'query', 99)];
    expect(fp(err(stack, 'TypeError', 'id 1 missing'))).toBe(fp(err(moved, 'TypeError', 'totally different text')));
  });

  it('uses line numbers when the stack has a single usable frame', () => {
    expect(fp(err([f('main', 'run', 10)]))).not.toBe(fp(err([f('main', 'run', 11)])));
    // SDK frames do not count as usable: still a single usable frame.
    const sdk = {
      filename: '/srv/app/node_modules/@sentry/core/x.js',
      module: '@sentry.core:x',
      function: 'wrap',
      lineno: 1,
      in_app: false,
    };
    expect(fp(err([sdk, f('main', 'run', 10)]))).not.toBe(fp(err([sdk, f('main', 'run', 11)])));
  });

  it('splits by exception type, by function and by module', () => {
    const base = fp(err(stack));
    expect(fp(err(stack, 'RangeError'))).not.toBe(base);
    expect(fp(err([...stack.slice(0, 2), f('repo', 'insert', 30)]))).not.toBe(base);
    expect(fp(err([...stack.slice(0, 2), f('repo2', 'query', 30)]))).not.toBe(base);
  });

  it('splits by platform', () => {
    expect(fp(err(stack))).not.toBe(fp({ ...err(stack), platform: 'javascript' }));
  });

  it('uses the file basename when a frame has no module', () => {
    const a = [
      { filename: '/build/1/src/app.py', function: 'run', lineno: 1, in_app: true },
      { filename: '/build/1/src/db.py', function: 'q', lineno: 2, in_app: true },
    ];
    const b = [
      { filename: '/build/2/src/app.py', function: 'run', lineno: 5, in_app: true },
      { filename: '/build/2/src/db.py', function: 'q', lineno: 6, in_app: true },
    ];
    expect(fp(err(a))).toBe(fp(err(b)));
    expect(input(err(a))).toEqual(['stack', 'node', 'TypeError', 'app.py|run', 'db.py|q']);
  });

  it('uses only the innermost 5 in-app frames', () => {
    const deep = Array.from({ length: 8 }, (_, i) => f(`m${i}`, `fn${i}`, i + 1));
    const changedOuter = [f('other', 'elsewhere', 1), ...deep.slice(1)];
    expect(fp(err(deep))).toBe(fp(err(changedOuter)));
    const changedInner = [...deep.slice(0, 7), f('other', 'elsewhere', 8)];
    expect(fp(err(deep))).not.toBe(fp(err(changedInner)));
    expect(input(err(deep))).toHaveLength(3 + 5);
  });

  it('ignores frames that are not in-app when some are', () => {
    const withLib = [f('lib', 'call', 1, false), ...stack];
    const withOtherLib = [f('otherlib', 'invoke', 1, false), ...stack];
    expect(fp(err(withLib))).toBe(fp(err(withOtherLib)));
  });

  it('uses the innermost 5 of all frames when none is in-app', () => {
    const sys = Array.from({ length: 7 }, (_, i) => f(`sys${i}`, `fn${i}`, i + 1, false));
    expect(fp(err(sys))).not.toBe(fp(err([...sys.slice(0, 6), f('sysX', 'other', 7, false)])));
    expect(fp(err(sys))).toBe(fp(err([f('outer', 'changed', 1, false), ...sys.slice(1)])));
  });

  it('skips SDK frames (Node, Python, Java) and placeholder frames', () => {
    const noise = [
      {
        filename: '/srv/app/node_modules/@sentry/node/build/esm/x.js',
        module: '@sentry.node.build.esm:x',
        function: 'wrap',
        lineno: 1,
        in_app: true,
      },
      {
        abs_path: '/usr/lib/python3/dist-packages/sentry_sdk/hub.py',
        module: 'sentry_sdk.hub',
        function: 'capture',
        lineno: 2,
        in_app: true,
      },
      { module: 'io.sentry.SentryClient', function: 'captureEvent', lineno: 3, in_app: true },
      { function: '<anonymous>', in_app: true },
      { function: '?', filename: '<anonymous>', in_app: true },
    ];
    expect(fp(err([...stack, ...noise]))).toBe(fp(err(stack)));
    expect(fp(err([noise[3], f('main', 'run', 10), noise[0]]))).toBe(fp(err([f('main', 'run', 10)])));
  });

  it('uses <image debug_id>+0x<offset> for native frames without a function, stable across load addresses', () => {
    const ev = (base: bigint) => ({
      platform: 'cocoa',
      exception: {
        values: [
          {
            type: 'EXC_BAD_ACCESS',
            value: 'KERN_INVALID_ADDRESS at 0x0',
            stacktrace: {
              frames: [
                { function: 'main', instruction_addr: `0x${(base + 0x4f10n).toString(16)}`, in_app: true },
                { instruction_addr: `0x${(base + 0x5a3cn).toString(16)}`, in_app: true },
              ],
            },
          },
        ],
      },
      debug_meta: {
        images: [
          {
            type: 'macho',
            debug_id: '84A04D24-0E60-3810-A8C0-90A65E2DF61A',
            image_addr: `0x${base.toString(16)}`,
            image_size: 4194304,
          },
        ],
      },
    });
    expect(input(ev(0x100000000n))).toEqual([
      'stack',
      'cocoa',
      'EXC_BAD_ACCESS',
      '|main',
      '|84a04d24-0e60-3810-a8c0-90a65e2df61a+0x5a3c',
    ]);
    expect(fp(ev(0x100000000n))).toBe(fp(ev(0x104a8c000n)));
  });

  it('normalises JVM-generated class names', () => {
    const java = (lambda: string) => ({
      platform: 'java',
      exception: [
        {
          type: 'NullPointerException',
          stacktrace: {
            frames: [
              { module: `com.example.App$$Lambda$${lambda}`, function: 'run', lineno: 1, in_app: true },
              { module: 'com.example.App', function: 'lambda$main$0', lineno: 2, in_app: true },
            ],
          },
        },
      ],
    });
    expect(fp(java('14/0x0000000800c01234'))).toBe(fp(java('77/0x0000000800aa0000')));
  });

  it('groups the main exception only: a different cause does not split', () => {
    const chain = (causeType: string) => ({
      platform: 'python',
      exception: [
        { type: causeType, value: 'c' },
        { type: 'AppError', stacktrace: { frames: stack } },
      ],
    });
    expect(fp(chain('IOError'))).toBe(fp(chain('OSError')));
  });
});

describe('exception without a stack', () => {
  it('groups by type and the value with numbers, hex and UUIDs replaced', () => {
    const a = {
      platform: 'go',
      exception: [{ type: 'Err', value: 'order 1234 failed at 0x7ffe12 for 123e4567-e89b-12d3-a456-426614174000' }],
    };
    const b = {
      platform: 'go',
      exception: [{ type: 'Err', value: 'order 98 failed at 0xdead for 00000000-0000-4000-8000-0000000000ff' }],
    };
    expect(fp(a)).toBe(fp(b));
    expect(input(a)).toEqual(['exception', 'go', 'Err', 'order <n> failed at <n> for <n>']);
  });
  it('splits by words and by type', () => {
    const e = (type: string, value: string) => ({ exception: [{ type, value }] });
    expect(fp(e('Err', 'order failed'))).not.toBe(fp(e('Err', 'payment failed')));
    expect(fp(e('Err', 'order failed'))).not.toBe(fp(e('Fault', 'order failed')));
  });
});

describe('message grouping', () => {
  it('groups messages that differ only in numbers', () => {
    expect(fp({ message: 'user 123 logged in after 45 tries' })).toBe(
      fp({ message: 'user 9 logged in after 1 tries' }),
    );
    expect(fp({ logentry: { formatted: 'job 5 took 1.25s' } })).toBe(
      fp({ logentry: { formatted: 'job 77 took 3.5s' } }),
    );
  });
  it('splits messages with different words, and by platform', () => {
    expect(fp({ message: 'user logged in' })).not.toBe(fp({ message: 'user logged out' }));
    expect(fp({ message: 'm', platform: 'python' })).not.toBe(fp({ message: 'm', platform: 'node' }));
  });
  it('groups a synthetic exception (Node captureMessage) by the message, not its stack', () => {
    const msg = (text: string, line: number) => ({
      platform: 'node',
      message: text,
      exception: {
        values: [
          {
            value: text,
            stacktrace: { frames: [f('app', '?', line)] },
            mechanism: { type: 'generic', handled: true, synthetic: true },
          },
        ],
      },
    });
    expect(fp(msg('cart 12 emptied', 14))).toBe(fp(msg('cart 99 emptied', 40)));
    expect(fp(msg('cart emptied', 14))).not.toBe(fp(msg('cart filled', 14)));
    expect(fp(msg('hello', 14))).toBe(fp({ platform: 'node', message: 'hello' }));
  });

  it('normalizeGroupingText replaces numbers, 0x hex, hex runs with digits and UUIDs, keeping words', () => {
    expect(
      normalizeGroupingText('id 42, addr 0xFF00, sha deadbeef12, uuid 123E4567-E89B-12D3-A456-426614174000, word face'),
    ).toBe('id <n>, addr <n>, sha <n>, uuid <n>, word face');
    expect(normalizeGroupingText('user123 v2.5')).toBe('user<n> v<n>.<n>');
  });
});

describe('SDK fingerprint', () => {
  const stackA = err([f('a', 'x', 1), f('b', 'y', 2)]);
  const stackB = err([f('c', 'z', 1), f('d', 'w', 2)], 'RangeError');

  it('wins over the default: same custom fingerprint, same issue', () => {
    expect(fp({ ...stackA, fingerprint: ['checkout', 'card'] })).toBe(
      fp({ ...stackB, fingerprint: ['checkout', 'card'] }),
    );
    expect(fp({ ...stackA, fingerprint: ['checkout', 'card'] })).not.toBe(
      fp({ ...stackA, fingerprint: ['checkout', 'cash'] }),
    );
  });

  it('treats ["{{ default }}"] alone as the default', () => {
    expect(fp({ ...stackA, fingerprint: ['{{ default }}'] })).toBe(fp(stackA));
    expect(fp({ ...stackA, fingerprint: [] })).toBe(fp(stackA));
  });

  it('expands {{ default }} in any case and spacing to the default input', () => {
    const withMark = (mark: string) => fp({ ...stackA, fingerprint: [mark, 'tenant-1'] });
    expect(withMark('{{ default }}')).toBe(withMark('{{default}}'));
    expect(withMark('{{ default }}')).toBe(withMark('{{  DEFAULT  }}'));
    expect(withMark('{{ default }}')).not.toBe(fp(stackA));
    expect(fp({ ...stackA, fingerprint: ['{{ default }}', 'tenant-1'] })).not.toBe(
      fp({ ...stackB, fingerprint: ['{{ default }}', 'tenant-1'] }),
    );
    expect(fp({ ...stackA, fingerprint: ['{{ default }}', 'tenant-1'] })).not.toBe(
      fp({ ...stackA, fingerprint: ['{{ default }}', 'tenant-2'] }),
    );
    expect(input({ ...stackA, fingerprint: ['{{ default }}', 'tenant-1'] })).toEqual([
      'fingerprint',
      'stack',
      'node',
      'TypeError',
      'a|x',
      'b|y',
      'tenant-1',
    ]);
  });

  it('stringifies numbers in the fingerprint and ignores other non-strings', () => {
    expect(fp({ message: 'm', fingerprint: ['code', 42, null, { a: 1 }] })).toBe(
      fp({ message: 'other', fingerprint: ['code', '42'] }),
    );
  });

  it('never collides with a default input of the same text', () => {
    expect(fp({ message: 'x', fingerprint: ['message', 'other', 'x'] })).not.toBe(fp({ message: 'x' }));
  });
});

describe('mainExceptionIndex', () => {
  const ex = (mechanism?: Record<string, unknown>): NormalizedException => ({
    type: 'E',
    value: '',
    frames: [],
    ...(mechanism ? { mechanism } : {}),
  });
  it('is the last of a plain chain, -1 for none', () => {
    expect(mainExceptionIndex([ex(), ex(), ex()])).toBe(2);
    expect(mainExceptionIndex([])).toBe(-1);
  });
  it('is the last element of a chain whatever exception_id and parent_id say (the JS SDKs list causes first)', () => {
    // [TypeError "inner" {exception_id 1, parent_id 0}, Error "outer" {exception_id 0}]: the outer error is the main one.
    expect(mainExceptionIndex([ex({ exception_id: 1, parent_id: 0 }), ex({ exception_id: 0 })])).toBe(1);
    expect(
      mainExceptionIndex([
        ex({ exception_id: 2, parent_id: 1 }),
        ex({ exception_id: 1, parent_id: 0 }),
        ex({ exception_id: 0 }),
      ]),
    ).toBe(2);
    expect(mainExceptionIndex([ex({ exception_id: 0 }), ex({ exception_id: 1, parent_id: 0 })])).toBe(1);
  });
  const named = (type: string, mechanism: Record<string, unknown>): NormalizedException => ({
    type,
    value: '',
    frames: [],
    mechanism,
  });
  it('in an exception group, is the one distinct exception below the groups', () => {
    const group = [
      named('ValueError', { exception_id: 2, parent_id: 1 }),
      named('ExceptionGroup', { exception_id: 1, parent_id: 0, is_exception_group: true }),
      named('ValueError', { exception_id: 3, parent_id: 0 }),
      named('ExceptionGroup', { exception_id: 0, is_exception_group: true }),
    ];
    expect(group[mainExceptionIndex(group)].type).toBe('ValueError');
  });
  it('in an exception group with different exceptions below the groups, is the last element', () => {
    const group = [
      named('ValueError', { exception_id: 1, parent_id: 0 }),
      named('KeyError', { exception_id: 2, parent_id: 0 }),
      named('ExceptionGroup', { exception_id: 0, is_exception_group: true }),
    ];
    expect(mainExceptionIndex(group)).toBe(2);
  });
});

describe('ANRs and app hangs: grouped by the main thread stack', () => {
  const jf = (module: string, fn: string, lineno: number, inApp = true): Frame => ({
    module,
    function: fn,
    filename: `${module.split('.').pop()}.java`,
    lineno,
    in_app: inApp,
  });
  const looper = [jf('android.os.Looper', 'loop', 288, false), jf('android.os.MessageQueue', 'next', 335, false)];
  const blocked = [
    ...looper,
    jf('com.example.shop.CheckoutActivity', 'onCreate', 40),
    jf('com.example.shop.db.OrderDao', 'loadAll', 77),
  ];
  const other = [
    ...looper,
    jf('com.example.shop.CartActivity', 'onResume', 12),
    jf('com.example.shop.net.Http', 'get', 9),
  ];
  /** sentry-java's ANR shapes: v1 (ANR watchdog) and v2 (ApplicationExitInfo), foreground or background. */
  const javaAnr = (frames: Frame[], value: string, mechanism: string) => ({
    platform: 'java',
    exception: {
      values: [
        {
          type: 'ApplicationNotResponding',
          value,
          module: 'io.sentry.android.core',
          mechanism: { type: mechanism, handled: false },
          stacktrace: { frames },
        },
      ],
    },
  });
  /** sentry-cocoa's app hang: the stack lives on the main thread, which is not crashed. */
  const cocoaHang = (frames: Frame[], type: string) => ({
    platform: 'cocoa',
    exception: { values: [{ type, value: 'App hanging for at least 2000 ms.', mechanism: { type: 'AppHang' } }] },
    threads: {
      values: [
        { id: 1, name: 'worker', crashed: false, stacktrace: { frames: [jf('Worker', 'run', 1)] } },
        { id: 0, name: 'com.apple.main-thread', main: true, current: true, stacktrace: { frames } },
      ],
    },
  });

  it.each([
    [
      'v1 foreground and v2 background ANR on one stack',
      javaAnr(blocked, 'Application Not Responding for at least 5000 ms.', 'ANR'),
      javaAnr(blocked, 'Background ANR', 'AppExitInfo'),
      true,
    ],
    [
      'two ANRs on different stacks',
      javaAnr(blocked, 'Background ANR', 'AppExitInfo'),
      javaAnr(other, 'Background ANR', 'AppExitInfo'),
      false,
    ],
    [
      'an ANR and a crash on the same stack',
      javaAnr(blocked, 'Background ANR', 'ANR'),
      err(blocked, 'IllegalStateException', 'boom', { platform: 'java' }),
      false,
    ],
    [
      'app hangs fully and not fully blocked on one main-thread stack',
      cocoaHang(blocked, 'App Hang Fully Blocked'),
      cocoaHang(blocked, 'App Hanging'),
      true,
    ],
    [
      'app hangs on different main-thread stacks',
      cocoaHang(blocked, 'App Hanging'),
      cocoaHang(other, 'App Hanging'),
      false,
    ],
  ])('%s', (_name, a, b, same) => {
    expect(fp(a) === fp(b)).toBe(same);
  });

  it('takes an app hang stack from the main thread and names it in the grouping input', () => {
    expect(input(cocoaHang(blocked, 'App Hanging'))).toEqual([
      'anr',
      'cocoa',
      'com.example.shop.CheckoutActivity|onCreate',
      'com.example.shop.db.OrderDao|loadAll',
    ]);
    expect(norm(cocoaHang(blocked, 'App Hanging')).location).toBe('OrderDao.java:77');
  });
});
