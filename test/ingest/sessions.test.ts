// Release-health items: `session` updates and `sessions` aggregates.
import { describe, expect, it } from 'vitest';
import { InvalidItemError } from '../../src/errors.js';
import { parseSessionAggregates, parseSessionUpdate } from '../../src/ingest/sessions.js';

const RECEIVED = Date.UTC(2026, 10, 21, 14, 0, 0);
const enc = new TextEncoder();
const update = (p: unknown) => parseSessionUpdate(enc.encode(JSON.stringify(p)), { receivedAt: RECEIVED });
const aggregates = (p: unknown) => parseSessionAggregates(enc.encode(JSON.stringify(p)), { receivedAt: RECEIVED });

const BASE = {
  sid: '79a18c2b97c6472ba5b996ba0b435c6e',
  started: '2026-11-21T13:46:49.339Z',
  attrs: { release: 'demo@1.0.0', environment: 'test' },
};

describe('parseSessionUpdate', () => {
  it('reads a full update', () => {
    expect(
      update({
        ...BASE,
        init: true,
        timestamp: '2026-11-21T13:46:49.394Z',
        status: 'ok',
        errors: 1,
        did: 'u1',
        duration: 0.05,
      }),
    ).toEqual({
      sid: '79a18c2b97c6472ba5b996ba0b435c6e',
      did: 'u1',
      init: true,
      started: Date.UTC(2026, 10, 21, 13, 46, 49, 339),
      timestamp: Date.UTC(2026, 10, 21, 13, 46, 49, 394),
      status: 'ok',
      errors: 1,
      release: 'demo@1.0.0',
      environment: 'test',
      anr: false,
    });
  });

  it.each([
    ['anr_foreground', 'abnormal', true],
    ['anr_background', 'abnormal', true],
    ['app_hang', 'abnormal', false],
    [42, 'abnormal', false],
  ])('marks abnormal_mechanism %s (status %s) as an ANR: %s', (mechanism, status, anr) => {
    expect(update({ ...BASE, status, abnormal_mechanism: mechanism }).anr).toBe(anr);
  });

  it('makes sid dashless lowercase', () => {
    expect(update({ ...BASE, sid: 'ADA695D4-373B-4C5E-A679-4D51CD6B0E99' }).sid).toBe(
      'ada695d4373b4c5ea6794d51cd6b0e99',
    );
  });

  it('makes a random sid when it is missing', () => {
    const { sid: _omit, ...rest } = BASE;
    const a = update(rest).sid;
    expect(a).toMatch(/^[0-9a-f]{32}$/);
    expect(update(rest).sid).not.toBe(a);
  });

  it('applies defaults: status ok, init false, errors 0, no did, timestamp = receive time, environment production', () => {
    expect(update({ sid: BASE.sid, started: BASE.started, attrs: { release: 'r' } })).toMatchObject({
      status: 'ok',
      init: false,
      errors: 0,
      did: null,
      timestamp: RECEIVED,
      environment: 'production',
    });
  });

  it.each([
    ['exited', 'exited'],
    ['crashed', 'crashed'],
    ['Crashed', 'crashed'],
    ['abnormal', 'abnormal'],
    ['errored', 'errored'],
    ['unhandled', 'unhandled'],
    ['bogus', 'ok'],
    [7, 'ok'],
  ])('status %j → %s', (status, expected) => {
    expect(update({ ...BASE, status }).status).toBe(expected);
  });

  it('reads init only when it is true', () => {
    expect(update({ ...BASE, init: 'true' }).init).toBe(false);
    expect(update({ ...BASE, init: true }).init).toBe(true);
  });

  it('reads errors as a non-negative integer', () => {
    expect(update({ ...BASE, errors: 3.7 }).errors).toBe(3);
    expect(update({ ...BASE, errors: -2 }).errors).toBe(0);
    expect(update({ ...BASE, errors: '5' }).errors).toBe(0);
    expect(update({ ...BASE, errors: 1e12 }).errors).toBe(2_147_483_647);
  });

  it('reads did as a string', () => {
    expect(update({ ...BASE, did: 42 }).did).toBe('42');
    expect(update({ ...BASE, did: '' }).did).toBeNull();
  });

  it('accepts started as epoch seconds', () => {
    expect(update({ ...BASE, started: 1795268809.339 }).started).toBe(1795268809339);
  });

  it('uses the receive time for times more than one hour in the future', () => {
    const future = new Date(RECEIVED + 2 * 3_600_000).toISOString();
    const s = update({ ...BASE, started: future, timestamp: future });
    expect([s.started, s.timestamp]).toEqual([RECEIVED, RECEIVED]);
  });

  it.each([
    ['not JSON', 'nope'],
    ['a JSON array', '[]'],
    ['no started', JSON.stringify({ sid: BASE.sid, attrs: BASE.attrs })],
    ['an invalid started', JSON.stringify({ ...BASE, started: 'yesterday' })],
    ['no attrs', JSON.stringify({ sid: BASE.sid, started: BASE.started })],
    ['no release', JSON.stringify({ ...BASE, attrs: { environment: 'test' } })],
    ['an empty release', JSON.stringify({ ...BASE, attrs: { release: ' ' } })],
    ['an invalid sid', JSON.stringify({ ...BASE, sid: 'session-1' })],
  ])('refuses %s', (_n, body) => {
    expect(() => parseSessionUpdate(enc.encode(body), { receivedAt: RECEIVED })).toThrow(InvalidItemError);
  });
});

describe('parseSessionAggregates', () => {
  it('reads buckets with counts defaulting to 0', () => {
    expect(
      aggregates({
        attrs: { release: 'app@1.0.0', environment: 'test' },
        aggregates: [{ started: '2026-11-21T13:45:00.000Z', exited: 3, errored: 1 }],
      }),
    ).toEqual([
      {
        started: Date.UTC(2026, 10, 21, 13, 45),
        release: 'app@1.0.0',
        environment: 'test',
        exited: 3,
        errored: 1,
        abnormal: 0,
        crashed: 0,
        unhandled: 0,
      },
    ]);
  });

  it('reads every count and defaults environment to production', () => {
    const [b] = aggregates({
      attrs: { release: 'r' },
      aggregates: [{ started: '2026-11-21T13:00:00Z', exited: 1, errored: 2, abnormal: 3, crashed: 4, unhandled: 5 }],
    });
    expect(b).toMatchObject({
      environment: 'production',
      exited: 1,
      errored: 2,
      abnormal: 3,
      crashed: 4,
      unhandled: 5,
    });
  });

  it('leaves out buckets without a valid started and buckets with nothing in them', () => {
    const out = aggregates({
      attrs: { release: 'r' },
      aggregates: [
        { exited: 1 },
        { started: 'bad', exited: 1 },
        { started: '2026-11-21T13:00:00Z' },
        'junk',
        { started: '2026-11-21T13:01:00Z', crashed: 1 },
      ],
    });
    expect(out.map((b) => b.crashed)).toEqual([1]);
  });

  it('has no buckets without aggregates', () => {
    expect(aggregates({ attrs: { release: 'r' } })).toEqual([]);
  });

  it.each([
    ['not JSON', '{'],
    ['no attrs', JSON.stringify({ aggregates: [] })],
    ['no release', JSON.stringify({ attrs: { environment: 'e' }, aggregates: [] })],
    ['aggregates not a list', JSON.stringify({ attrs: { release: 'r' }, aggregates: { started: 'x' } })],
  ])('refuses %s', (_n, body) => {
    expect(() => parseSessionAggregates(enc.encode(body), { receivedAt: RECEIVED })).toThrow(InvalidItemError);
  });
});
