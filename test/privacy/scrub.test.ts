// The scrubber's rules as a table: every default key word, card numbers that pass and
// fail Luhn, bearer tokens, PEM keys, nested and array values, pair lists, query
// strings, form bodies and cookie strings, custom and safe fields, IP removal.
import { describe, expect, it } from 'vitest';
import {
  compileScrubber,
  DEFAULT_SCRUB_WORDS,
  FILTERED,
  luhnValid,
  maybeSensitive,
  scrubString,
  type ScrubSettings,
} from '../../src/privacy/scrub.js';

const DEFAULTS: ScrubSettings = { scrub_defaults: true, scrub_ip_addresses: false, scrub_fields: [], safe_fields: [] };

function scrub(event: Record<string, unknown>, settings: Partial<ScrubSettings> = {}) {
  const copy = structuredClone(event);
  const report = compileScrubber({ ...DEFAULTS, ...settings })(copy);
  return { event: copy, report };
}

describe('key rules', () => {
  const keys: [string, string][] = [
    ['password', 'password'],
    ['passwd', 'db_passwd'],
    ['secret', 'clientSecret'],
    ['token', 'X-Access-Token'],
    ['api_key', 'stripe_api_key'],
    ['apikey', 'APIKEY'],
    ['auth', 'x-auth-user'],
    ['authorization', 'Authorization'],
    ['credentials', 'aws_credentials'],
    ['cookie', 'Cookie'],
    ['session', 'sessionid'],
    ['csrf', 'csrfmiddlewaretoken'],
    ['private_key', 'PRIVATE_KEY_PATH'],
  ];
  it('covers every default word', () => {
    expect(new Set(keys.map(([w]) => w))).toEqual(new Set(DEFAULT_SCRUB_WORDS));
  });
  it.each(keys)('%s: the value under %s is filtered', (_word, key) => {
    const { event, report } = scrub({ extra: { [key]: 'hunter2', keep: 'visible' } });
    expect(event.extra).toEqual({ [key]: FILTERED, keep: 'visible' });
    expect(report).toMatchObject({ total: 1, rules: { key: 1 }, paths: [`extra.${key}`] });
  });
  it.each([
    ['a number', 12345],
    ['an object', { nested: 'x' }],
    ['a list', ['a', 'b']],
  ])('a matching key holding %s is filtered whole', (_what, value) => {
    const { event } = scrub({ extra: { secret: value } });
    expect(event.extra).toEqual({ secret: FILTERED });
  });
  it('walks nested objects and arrays', () => {
    const { event, report } = scrub({ contexts: { app: { deep: [{ x: { user_password: 'p', ok: 1 } }, 'plain'] } } });
    expect(event.contexts).toEqual({ app: { deep: [{ x: { user_password: FILTERED, ok: 1 } }, 'plain'] } });
    expect(report?.paths).toEqual(['contexts.app.deep.0.x.user_password']);
  });
  it('leaves keys that match nothing, and reports nothing', () => {
    const ev = { message: 'hello', extra: { user: 'bob', count: 3, list: [1, 2] } };
    const { event, report } = scrub(ev);
    expect(event).toEqual(ev);
    expect(report).toBeNull();
  });
  it('scrub_fields add words; safe_fields exempt exact keys (case-insensitive)', () => {
    const { event } = scrub(
      { extra: { ssn: '1', SSN_hash: '2', csrf_token: '3', api_token: '4' } },
      { scrub_fields: ['SSN'], safe_fields: ['CSRF_TOKEN'] },
    );
    expect(event.extra).toEqual({ ssn: FILTERED, SSN_hash: FILTERED, csrf_token: '3', api_token: FILTERED });
  });
  it('without the defaults only scrub_fields apply, and strings are left alone', () => {
    const { event } = scrub(
      { extra: { password: 'p', pin: '1234', card: '4111 1111 1111 1111' } },
      { scrub_defaults: false, scrub_fields: ['pin'] },
    );
    expect(event.extra).toEqual({ password: 'p', pin: FILTERED, card: '4111 1111 1111 1111' });
  });
});

describe('value rules in any string', () => {
  const cases: [string, string, string][] = [
    ['Visa, Luhn-valid', 'paid with 4111111111111111 today', `paid with ${FILTERED} today`],
    ['Visa with spaces', 'card 4111 1111 1111 1111', `card ${FILTERED}`],
    ['Mastercard with dashes', '5500-0000-0000-0004', FILTERED],
    ['Amex (15 digits)', 'amex 378282246310005', `amex ${FILTERED}`],
    ['Discover', '6011111111111117', FILTERED],
    ['Luhn-invalid Visa', 'order 4111111111111112', 'order 4111111111111112'],
    ['a millisecond timestamp', 'at 1700000000000123', 'at 1700000000000123'],
    ['too short', '411111111111', '411111111111'],
    ['bearer token', 'sent Bearer abc.def-ghi to the api', `sent Bearer ${FILTERED} to the api`],
    ['bearer, any case', 'bearer xyz', `bearer ${FILTERED}`],
    [
      'PEM private key',
      '-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nabc\n-----END RSA PRIVATE KEY-----',
      `-----BEGIN RSA PRIVATE KEY-----\n${FILTERED}\n-----END RSA PRIVATE KEY-----`,
    ],
    [
      'PEM public key (kept)',
      '-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----',
      '-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----',
    ],
  ];
  it.each(cases)('%s', (_name, input, expected) => {
    expect(scrubString(input)).toBe(expected);
    const { event, report } = scrub({ exception: { values: [{ value: input }] }, breadcrumbs: [{ message: input }] });
    expect((event.exception as { values: { value: string }[] }).values[0].value).toBe(expected);
    expect((event.breadcrumbs as { message: string }[])[0].message).toBe(expected);
    if (expected === input) expect(report).toBeNull();
    else expect(report?.total).toBe(2);
  });
  it('Luhn', () => {
    expect(luhnValid('4111111111111111')).toBe(true);
    expect(luhnValid('4111-1111-1111-1111')).toBe(true);
    expect(luhnValid('4111111111111112')).toBe(false);
    expect(luhnValid('79927398713')).toBe(false); // valid checksum, too short for a card
  });
  it('numbers that are JSON numbers are not strings and stay', () => {
    const { event } = scrub({ extra: { n: 4111111111111111 } });
    expect(event.extra).toEqual({ n: 4111111111111111 });
  });
});

describe('stack frames', () => {
  it('scrubs frame variables, not code', () => {
    const frame = {
      function: 'charge',
      context_line: 'charge("4111111111111111")',
      vars: { password: 'p', card: '4111111111111111', n: 1 },
    };
    const { event, report } = scrub({
      exception: { values: [{ stacktrace: { frames: [frame] } }] },
      threads: { values: [{ stacktrace: { frames: [frame] } }] },
    });
    const expected = { ...frame, vars: { password: FILTERED, card: FILTERED, n: 1 } };
    expect(
      (event.exception as { values: { stacktrace: { frames: unknown[] } }[] }).values[0].stacktrace.frames[0],
    ).toEqual(expected);
    expect(
      (event.threads as { values: { stacktrace: { frames: unknown[] } }[] }).values[0].stacktrace.frames[0],
    ).toEqual(expected);
    expect(report?.paths).toContain('exception.values.0.stacktrace.frames.0.vars.password');
  });
  it('scrubs the query of a frame file name that is a URL, and only that', () => {
    const frame = {
      filename: 'https://shop.example/checkout?token=abc123&view=cart#top',
      abs_path: 'https://shop.example/checkout?token=abc123&view=cart#top',
      function: 'pay',
    };
    const plain = { filename: 'app/checkout.js', function: 'pay' };
    const { event, report } = scrub({ exception: { values: [{ stacktrace: { frames: [frame, plain] } }] } });
    const frames = (event.exception as { values: { stacktrace: { frames: unknown[] } }[] }).values[0].stacktrace.frames;
    const url = `https://shop.example/checkout?token=${FILTERED}&view=cart#top`;
    expect(frames).toEqual([{ filename: url, abs_path: url, function: 'pay' }, plain]);
    expect(report?.paths).toEqual(
      expect.arrayContaining([
        'exception.values.0.stacktrace.frames.0.filename.token',
        'exception.values.0.stacktrace.frames.0.abs_path.token',
      ]),
    );
  });
  it('leaves sdk, modules and debug_meta alone', () => {
    const ev = {
      sdk: { name: 'x', integrations: ['SessionTiming'] },
      modules: { 'express-session': '1.17.3' },
      debug_meta: { images: [{ code_file: 'auth.so' }] },
    };
    expect(scrub(ev).event).toEqual(ev);
  });
});

describe('breadcrumbs', () => {
  it.each([
    ['{values: [...]}', (b: unknown[]) => ({ values: b }), 'breadcrumbs.values.0'],
    ['a bare list', (b: unknown[]) => b, 'breadcrumbs.0'],
  ])('as %s: message, data and added keys scrubbed; the SDK’s own fields kept', (_form, wrap, prefix) => {
    const crumb = {
      type: 'http',
      category: 'auth',
      level: 'info',
      timestamp: 1700000000,
      message: 'paid with 4111111111111111',
      data: { url: '/login', password: 'p' },
      session_token: 't',
    };
    const { event, report } = scrub({ breadcrumbs: wrap([crumb]) });
    const out = wrap([
      {
        ...crumb,
        message: `paid with ${FILTERED}`,
        data: { url: '/login', password: FILTERED },
        session_token: FILTERED,
      },
    ]);
    expect(event.breadcrumbs).toEqual(out);
    expect(report?.paths).toEqual([`${prefix}.message`, `${prefix}.data.password`, `${prefix}.session_token`]);
  });
});

describe('request parts', () => {
  it('headers as an object and as a pair list', () => {
    const { event, report } = scrub({
      request: {
        headers: { Authorization: 'Bearer t', Cookie: 'sid=1', 'User-Agent': 'node' },
        env: {
          headers: [
            ['X-Api-Key', 'k'],
            ['Accept', 'json'],
          ],
        },
      },
    });
    expect(event.request).toEqual({
      headers: { Authorization: FILTERED, Cookie: FILTERED, 'User-Agent': 'node' },
      env: {
        headers: [
          ['X-Api-Key', FILTERED],
          ['Accept', 'json'],
        ],
      },
    });
    expect(report?.total).toBe(3);
  });
  it('query string as a string, as pairs, and in the URL', () => {
    const { event } = scrub({
      request: {
        url: 'https://x.test/a?token=abc&q=1#frag',
        query_string: 'q=shoes&api_key=123&page=2',
        env: {
          query: [
            ['password', 'x'],
            ['q', 'y'],
          ],
        },
      },
    });
    const r = event.request as Record<string, unknown>;
    expect(r.url).toBe(`https://x.test/a?token=${FILTERED}&q=1#frag`);
    expect(r.query_string).toBe(`q=shoes&api_key=${FILTERED}&page=2`);
    expect(r.env).toEqual({
      query: [
        ['password', FILTERED],
        ['q', 'y'],
      ],
    });
  });
  it('form bodies and cookie strings', () => {
    const { event } = scrub({
      request: { data: 'user=bob&password=hunter2&remember=1', cookies: 'theme=dark; sessionid=abc; csrftoken=zz' },
    });
    const r = event.request as Record<string, unknown>;
    expect(r.data).toBe(`user=bob&password=${FILTERED}&remember=1`);
    // `cookies` is itself a key word: the whole value goes.
    expect(r.cookies).toBe(FILTERED);
  });
  it('a JSON body is walked as an object', () => {
    const { event } = scrub({ request: { data: { user: 'bob', password: 'p', nested: [{ secret_answer: 'x' }] } } });
    expect((event.request as Record<string, unknown>).data).toEqual({
      user: 'bob',
      password: FILTERED,
      nested: [{ secret_answer: FILTERED }],
    });
  });
  it('a form body key that is percent-encoded', () => {
    const { event } = scrub({ request: { data: 'pass%77ord=x&a=b' } });
    expect((event.request as Record<string, unknown>).data).toBe(`pass%77ord=${FILTERED}&a=b`);
  });
});

describe('IP addresses and the report', () => {
  it('scrub_ip_addresses removes the user and request addresses', () => {
    const { event, report } = scrub(
      { user: { id: 'u1', ip_address: '10.1.2.3' }, request: { env: { REMOTE_ADDR: '10.1.2.3', SERVER: 'a' } } },
      { scrub_ip_addresses: true },
    );
    expect(event.user).toEqual({ id: 'u1' });
    expect(event.request).toEqual({ env: { SERVER: 'a' } });
    expect(report?.rules).toEqual({ ip: 2 });
  });
  it('IP addresses stay by default', () => {
    const { event } = scrub({ user: { ip_address: '10.1.2.3' } });
    expect(event.user).toEqual({ ip_address: '10.1.2.3' });
  });
  it('the report is stored on the event, and a client cannot claim one', () => {
    const { event } = scrub({ _scrubbed: { total: 99 }, extra: { token: 't' } });
    expect(event._scrubbed).toEqual({ total: 1, rules: { key: 1 }, paths: ['extra.token'] });
    const clean = scrub({ _scrubbed: { total: 99 }, extra: {} });
    expect(clean.event._scrubbed).toBeUndefined();
  });
  it('scrubbing twice changes nothing more', () => {
    const once = scrub({ extra: { token: 't' }, message: 'Bearer x 4111111111111111' });
    const twice = scrub(once.event);
    expect(twice.event.extra).toEqual(once.event.extra);
    expect(twice.event.message).toBe(once.event.message);
  });
});

describe('maybeSensitive (the pre-check before the value rules)', () => {
  // What it must answer: a run of 13 digits with only spaces or dashes between them, `bearer`
  // in any case, or `PRIVATE KEY`, wherever they stand in the string.
  const reference = (s: string) => /(?:\d[ -]*){12}\d/.test(s) || /bearer/i.test(s) || s.includes('PRIVATE KEY');

  it('agrees with the rules as regular expressions on strings where runs start, end and break at every offset', () => {
    // A seeded generator: the same strings on every run.
    let seed = 42;
    const next = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const alphabet = '0123456789012345678901234567890123456789 --xa.';
    let sensitive = 0;
    for (let n = 0; n < 20_000; n++) {
      const length = 1 + Math.floor(next() * 40);
      let s = '';
      for (let i = 0; i < length; i++) s += alphabet[Math.floor(next() * alphabet.length)];
      if (reference(s)) sensitive++;
      expect(maybeSensitive(s), JSON.stringify(s)).toBe(reference(s));
    }
    expect(sensitive).toBeGreaterThan(1000);
    expect(sensitive).toBeLessThan(19_000);
  });

  it('finds each word and run at the start, middle and end of longer text', () => {
    const filler = 'loaded 7 rows from orders_1 in 12 ms; ';
    for (const needle of [
      '4111 1111 1111 1111',
      '4111-1111-1111-1',
      '1234567890123',
      'Bearer x',
      'bEaReR',
      '-----BEGIN PRIVATE KEY-----',
    ]) {
      for (const text of [needle + filler, filler + needle + filler, filler + filler + needle])
        expect(maybeSensitive(text), text).toBe(true);
    }
    for (const text of [filler.repeat(5), '123456789012 x 123456789012', 'private key', 'bear er'])
      expect(maybeSensitive(text), text).toBe(false);
  });
});
