// CSRF tokens as pure functions (the CSRF token tied to one session) and the origin
// rule for state-changing requests. Sessions themselves live in the database:
// test/accounts/sessions.test.ts.
import { describe, expect, it } from 'vitest';
import { csrfTokenOf, sameOrigin } from '../../src/dashboard/session.js';

describe('dashboard CSRF tokens', () => {
  it('are tied to one session id, the same on every instance, and never the id itself', async () => {
    const a = await csrfTokenOf('a'.repeat(43));
    expect(a).toBe(await csrfTokenOf('a'.repeat(43)));
    expect(a).not.toBe(await csrfTokenOf('b'.repeat(43)));
    expect(a).not.toContain('a'.repeat(10));
  });
});

describe('origin check of state-changing requests', () => {
  const allowed = ['https://errors.example.com'];
  it('accepts this origin, and requests without browser headers (left to the token)', () => {
    expect(sameOrigin({ origin: 'https://errors.example.com' }, allowed)).toBe(true);
    expect(sameOrigin({ referer: 'https://errors.example.com/demo/settings' }, allowed)).toBe(true);
    expect(sameOrigin({ fetchSite: 'same-origin', origin: 'https://errors.example.com' }, allowed)).toBe(true);
    expect(sameOrigin({}, allowed)).toBe(true);
  });
  it('refuses other origins, opaque origins and cross-site fetches', () => {
    expect(sameOrigin({ origin: 'https://evil.example' }, allowed)).toBe(false);
    expect(sameOrigin({ origin: 'null' }, allowed)).toBe(false);
    expect(sameOrigin({ origin: 'http://errors.example.com' }, allowed)).toBe(false);
    expect(sameOrigin({ referer: 'https://evil.example/x' }, allowed)).toBe(false);
    expect(sameOrigin({ referer: 'not a url' }, allowed)).toBe(false);
    expect(sameOrigin({ fetchSite: 'cross-site' }, allowed)).toBe(false);
    expect(sameOrigin({ fetchSite: 'same-site', origin: 'https://errors.example.com' }, allowed)).toBe(false);
  });
});
