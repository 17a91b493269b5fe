// The event view's formatting rules, without a database: the raw stack trace in each
// platform's own form, numbered context lines, collapsed library runs, byte sizes,
// breadcrumb data, empty fields, and the cut title's ellipsis.
import { describe, expect, it } from 'vitest';
import {
  breadcrumbData,
  contextLines,
  formatBytes,
  frameRuns,
  isByteField,
  isEmptyValue,
  rawStackTrace,
  shownEntries,
  stackStyle,
  titleDisplay,
  type ChainException,
} from '../../src/dashboard/event-format.js';
import type { NormalizedFrame } from '../../src/ingest/types.js';

describe('rawStackTrace', () => {
  const jvmChain: ChainException[] = [
    {
      type: 'IOException',
      module: 'java.io',
      value: 'disk full\nsecond line',
      frames: [
        { module: 'com.example.Main', function: 'main', filename: 'Main.java', lineno: 5 },
        { module: 'java.io.FileOutputStream', function: 'write', filename: 'FileOutputStream.java' },
      ],
    },
    {
      type: 'IllegalStateException',
      module: 'java.lang',
      value: 'cannot save',
      frames: [
        { module: 'com.example.Main', function: 'main', filename: 'Main.java', lineno: 5 },
        { module: 'com.example.Store', function: 'save', filename: 'Store.java', lineno: 28 },
      ],
    },
  ];

  it('prints the JVM form: outermost first, innermost call first, then each cause', () => {
    expect(rawStackTrace('java', jvmChain)).toBe(
      [
        'java.lang.IllegalStateException: cannot save',
        '\tat com.example.Store.save(Store.java:28)',
        '\tat com.example.Main.main(Main.java:5)',
        'Caused by: java.io.IOException: disk full',
        '\tat java.io.FileOutputStream.write(FileOutputStream.java)',
        '\tat com.example.Main.main(Main.java:5)',
      ].join('\n'),
    );
  });

  it('keeps a type that is already qualified and names a frame without a file Unknown Source', () => {
    const out = rawStackTrace('java', [
      { type: 'com.example.Boom', module: 'com.example', value: '', frames: [{ module: 'a.B', function: 'c' }] },
    ]);
    expect(out).toBe('com.example.Boom\n\tat a.B.c(Unknown Source)');
  });

  it('prints a Python traceback: cause first, oldest call first, the source line under each frame', () => {
    const chain: ChainException[] = [
      {
        type: 'KeyError',
        value: "'id'",
        frames: [
          {
            filename: 'app.py',
            abs_path: '/srv/app.py',
            function: 'load',
            lineno: 3,
            context_line: '    return row["id"]  ',
          },
        ],
      },
      { type: 'ValueError', value: 'bad row', frames: [{ filename: 'x.py', function: 'f', lineno: 9 }] },
    ];
    expect(rawStackTrace('python', chain)).toBe(
      [
        'Traceback (most recent call last):',
        '  File "/srv/app.py", line 3, in load',
        '    return row["id"]',
        "KeyError: 'id'",
        '',
        'The above exception was the direct cause of the following exception:',
        '',
        'Traceback (most recent call last):',
        '  File "x.py", line 9, in f',
        'ValueError: bad row',
      ].join('\n'),
    );
  });

  it('prints the JavaScript form for browsers, Node and every other platform', () => {
    const chain: ChainException[] = [
      {
        type: 'TypeError',
        value: 'x is undefined',
        frames: [
          { abs_path: 'https://shop.example/app.js', function: '?', lineno: 1, colno: 200 },
          { filename: 'file.js', function: 'f', lineno: 1, colno: 2 },
          { filename: 'nocol.js', function: 'g', lineno: 4 },
        ],
      },
    ];
    const expected = [
      'TypeError: x is undefined',
      '    at g (nocol.js:4)',
      '    at f (file.js:1:2)',
      '    at https://shop.example/app.js:1:200',
    ].join('\n');
    expect(rawStackTrace('javascript', chain)).toBe(expected);
    expect(rawStackTrace('node', chain)).toBe(expected);
    expect(stackStyle('cocoa')).toBe('javascript');
    expect(stackStyle('Java')).toBe('jvm');
  });

  it('prints an exception without frames as its head alone, and nothing for no exceptions', () => {
    expect(rawStackTrace('node', [{ type: '', value: 'just a message', frames: [] }])).toBe('just a message');
    expect(rawStackTrace('node', [])).toBe('');
  });
});

describe('contextLines', () => {
  const frame: NormalizedFrame = {
    lineno: 11,
    pre_context: ['l4', 'l5', 'l6', 'l7', 'l8', 'l9', 'l10'],
    context_line: 'l11',
    post_context: ['l12', 'l13', 'l14', 'l15', 'l16', 'l17'],
  };

  it('numbers five lines on each side from the frame’s line, marking the frame’s own', () => {
    const lines = contextLines(frame);
    expect(lines.map((l) => [l.lineno, l.text, l.current])).toEqual([
      [6, 'l6', false],
      [7, 'l7', false],
      [8, 'l8', false],
      [9, 'l9', false],
      [10, 'l10', false],
      [11, 'l11', true],
      [12, 'l12', false],
      [13, 'l13', false],
      [14, 'l14', false],
      [15, 'l15', false],
      [16, 'l16', false],
    ]);
  });

  it('leaves numbers out without a line number and below line 1, and shows nothing without a context line', () => {
    expect(contextLines({ ...frame, lineno: undefined }).every((l) => l.lineno === null)).toBe(true);
    expect(contextLines({ lineno: 2, pre_context: ['a', 'b', 'c'], context_line: 'd' }).map((l) => l.lineno)).toEqual([
      null,
      null,
      1,
      2,
    ]);
    expect(contextLines({ lineno: 3, pre_context: ['a'] })).toEqual([]);
    // Non-string entries (a repaired payload) become text rather than breaking the page.
    expect(contextLines({ lineno: 3, pre_context: [null, 7], context_line: 'x' }).map((l) => l.text)).toEqual([
      '',
      '7',
      'x',
    ]);
  });
});

describe('frameRuns', () => {
  const app = (n: string): NormalizedFrame => ({ function: n, in_app: true });
  const lib = (n: string): NormalizedFrame => ({ function: n, in_app: false });

  it('collapses each run of library frames between app frames', () => {
    const runs = frameRuns([lib('a'), lib('b'), app('c'), lib('d'), app('e'), { function: 'f' }]);
    expect(
      runs.map((r) => (r.kind === 'frame' ? r.frame.function : r.frames.map((f) => f.function).join('+'))),
    ).toEqual(['a+b', 'c', 'd', 'e', 'f']);
    expect(runs.map((r) => r.kind)).toEqual(['collapsed', 'frame', 'collapsed', 'frame', 'collapsed']);
  });

  it('shows every frame when none is marked in-app', () => {
    expect(frameRuns([lib('a'), { function: 'b' }]).map((r) => r.kind)).toEqual(['frame', 'frame']);
    expect(frameRuns([])).toEqual([]);
  });
});

describe('formatBytes', () => {
  it('reads in binary units with up to three significant digits', () => {
    expect(formatBytes(0)).toBe('0 bytes');
    expect(formatBytes(1)).toBe('1 byte');
    expect(formatBytes(1023)).toBe('1023 bytes');
    expect(formatBytes(1024)).toBe('1 KiB');
    expect(formatBytes(1536)).toBe('1.5 KiB');
    expect(formatBytes(134_217_728)).toBe('128 MiB');
    expect(formatBytes(8_083_230_720)).toBe('7.53 GiB');
    expect(formatBytes(25_276_502_016)).toBe('23.5 GiB');
    expect(formatBytes(2 ** 60)).toBe('1024 PiB');
  });

  it('knows which context fields are byte counts', () => {
    expect(isByteField('memory_size', 1024)).toBe(true);
    expect(isByteField('memory_size', '1024')).toBe(false);
    expect(isByteField('memory_size', -1)).toBe(false);
    expect(isByteField('processor_count', 2)).toBe(false);
  });
});

describe('breadcrumbData and empty fields', () => {
  it('reads an HTTP breadcrumb as its request line, the rest as key/value text', () => {
    expect(
      breadcrumbData('http', {
        method: 'POST',
        url: 'https://x/y',
        status_code: 502,
        reason: 'Bad Gateway',
        body: { a: 1 },
      }),
    ).toEqual({
      summary: 'POST https://x/y → 502',
      entries: [
        ['reason', 'Bad Gateway'],
        ['body', '{"a":1}'],
      ],
    });
    expect(breadcrumbData('default', { to: '/cart', from: '', n: 0, ok: false })).toEqual({
      summary: null,
      entries: [
        ['to', '/cart'],
        ['n', '0'],
        ['ok', 'false'],
      ],
    });
    expect(breadcrumbData('http', 'not an object')).toEqual({ summary: null, entries: [] });
  });

  it('treats null, empty strings, lists and objects as empty, and keeps 0 and false', () => {
    for (const v of [null, undefined, '', [], {}]) expect(isEmptyValue(v)).toBe(true);
    for (const v of [0, false, ' ', [0], { a: null }]) expect(isEmptyValue(v)).toBe(false);
    expect(shownEntries({ a: '', b: 0, c: null, d: 'x' })).toEqual([
      ['b', 0],
      ['d', 'x'],
    ]);
    expect(shownEntries(['a'])).toEqual([]);
  });
});

describe('titleDisplay', () => {
  const long = `ValueError: ${'x'.repeat(150)}`;
  const stored = long.slice(0, 100);

  it('adds an ellipsis and the whole title when ingest cut it', () => {
    expect(titleDisplay(stored, ['', long], 100)).toEqual({ text: `${stored}…`, full: long });
    expect(titleDisplay(stored, [`${long}\nsecond line`], 100)).toEqual({ text: `${stored}…`, full: long });
  });

  it('leaves a title alone when it was not cut, or when what it was cut from is unknown', () => {
    expect(titleDisplay('short', ['short and more'], 100)).toEqual({ text: 'short', full: null });
    expect(titleDisplay(stored, ['something else entirely'.repeat(10)], 100)).toEqual({ text: stored, full: null });
  });
});
