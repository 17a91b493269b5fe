// Session and CSRF tokens as pure functions: what a token carries, what makes it
// invalid (expiry, tampering, a key taken out of API_KEYS), the CSRF token tied to
// one session, and the origin rule for state-changing requests.
import { describe, expect, it } from 'vitest';
import { issueSession, matchApiKey, sameOrigin, SESSION_TTL_MS, sessionKeys, verifySession } from '../../src/dashboard/session.js';

const NOW = Date.UTC(2026, 10, 25, 12);

describe('dashboard sessions', () => {
  it('match the presented API key against every configured one', async () => {
    const keys = await sessionKeys(['alpha-key', 'beta-key']);
    expect((await matchApiKey(keys, 'beta-key'))?.id).toBe(keys.keys[1].id);
    expect(await matchApiKey(keys, 'beta-ke')).toBeNull();
    expect(await matchApiKey(keys, '')).toBeNull();
  });

  it('are valid until they expire, and carry neither key nor secret', async () => {
    const keys = await sessionKeys(['alpha-key']);
    const token = await issueSession(keys.keys[0], NOW);
    expect(token).not.toContain('alpha-key');
    const session = await verifySession(keys, token, NOW + 1000);
    expect(session).toMatchObject({ keyId: keys.keys[0].id, expires: NOW + SESSION_TTL_MS });
    expect(await verifySession(keys, token, NOW + SESSION_TTL_MS - 1)).not.toBeNull();
    expect(await verifySession(keys, token, NOW + SESSION_TTL_MS)).toBeNull();
  });

  it('are refused when tampered with, malformed, or signed by a key no longer configured', async () => {
    const keys = await sessionKeys(['alpha-key', 'beta-key']);
    const token = await issueSession(keys.keys[0], NOW);
    const [id, expires, nonce, sig] = token.split('.');
    const bad = [
      [id, String(Number(expires) + 1), nonce, sig],
      [id, expires, nonce.replace(/^./, (c) => (c === 'a' ? 'b' : 'a')), sig],
      [keys.keys[1].id, expires, nonce, sig],
      [id, expires, nonce, sig.slice(0, -2)],
      [id, expires, nonce],
      ['', '', '', ''],
    ].map((p) => p.join('.'));
    for (const t of [...bad, '', 'garbage', `${token}.x`]) expect(await verifySession(keys, t, NOW), t).toBeNull();
    expect(await verifySession(await sessionKeys(['beta-key']), token, NOW)).toBeNull();
    // The same key configured on another instance accepts it.
    expect(await verifySession(await sessionKeys(['beta-key', 'alpha-key']), token, NOW)).not.toBeNull();
  });

  it('give each session its own CSRF token, the same on every instance', async () => {
    const keys = await sessionKeys(['alpha-key']);
    const a = await issueSession(keys.keys[0], NOW);
    const b = await issueSession(keys.keys[0], NOW);
    const csrfA = (await verifySession(keys, a, NOW))!.csrf;
    expect(csrfA).not.toBe((await verifySession(keys, b, NOW))!.csrf);
    expect((await verifySession(await sessionKeys(['alpha-key']), a, NOW))!.csrf).toBe(csrfA);
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
