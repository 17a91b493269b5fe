// The pure rules of accounts: roles and route classes, emails, passwords, token format,
// expiry, the last-admin rule, and the password KDF's hash format.
import { describe, expect, it } from 'vitest';
import { hashPassword, isPasswordHash, PBKDF2_ITERATIONS, verifyPassword } from '../../src/accounts/password.js';
import {
  AccountInputError,
  checkPassword,
  isPersonalToken,
  lastAdminRefusal,
  newPersonalToken,
  normaliseEmail,
  parseExpiry,
  roleAtLeast,
  roleRefusal,
  routeClass,
  ROUTE_CLASS_ROLE,
  secretHash,
} from '../../src/accounts/rules.js';

const NOW = Date.UTC(2026, 10, 25, 12);

describe('roles', () => {
  it('order viewer < member < admin', () => {
    expect(roleAtLeast('admin', 'member')).toBe(true);
    expect(roleAtLeast('member', 'member')).toBe(true);
    expect(roleAtLeast('viewer', 'member')).toBe(false);
    expect(roleAtLeast('member', 'admin')).toBe(false);
    expect(roleRefusal('viewer', 'member', 'changing an issue')).toBe('changing an issue needs the member role');
    expect(roleRefusal('admin', 'admin')).toBeNull();
  });

  it('classify every management route, unknown writes as admin', () => {
    const cases: [string, string, string][] = [
      ['GET', '/api/projects', 'read'],
      ['GET', '/api/projects/web/issues', 'read'],
      ['POST', '/api/projects', 'projects'],
      ['PATCH', '/api/projects/web', 'projects'],
      ['DELETE', '/api/projects/web', 'projects'],
      ['POST', '/api/projects/web/rotate-key', 'projects'],
      ['PATCH', '/api/projects/web/issues/abc', 'triage'],
      ['POST', '/api/projects/web/issues/bulk', 'triage'],
      ['POST', '/api/projects/web/issues/merge', 'triage'],
      ['PATCH', '/api/projects/web/alerts/new_issue', 'alerts'],
      ['POST', '/api/projects/web/alerts/channels', 'alerts'],
      ['PATCH', '/api/projects/web/monitors/nightly', 'alerts'],
      ['DELETE', '/api/projects/web/monitors/nightly', 'alerts'],
      ['GET', '/api/projects/web/monitors', 'read'],
      ['POST', '/api/projects/web/symbols', 'symbols'],
      ['DELETE', '/api/projects/web/symbols/3', 'symbols'],
      ['POST', '/api/0/organizations/o/releases/', 'uploads'],
      ['GET', '/api/0/', 'read'],
      ['GET', '/api/users', 'read'],
      ['POST', '/api/users', 'users'],
      ['PATCH', '/api/users/3', 'self'],
      ['DELETE', '/api/users/3', 'users'],
      ['DELETE', '/api/users/3/sessions', 'self'],
      ['GET', '/api/users/me', 'self'],
      ['POST', '/api/tokens', 'self'],
      ['DELETE', '/api/tokens/4', 'self'],
      ['GET', '/api/audit', 'audit'],
      ['GET', '/api/export', 'transfer'],
      ['POST', '/api/import', 'transfer'],
      ['POST', '/api/something-new', 'projects'],
    ];
    for (const [m, p, cls] of cases) expect(routeClass(m, p), `${m} ${p}`).toBe(cls);
    expect(ROUTE_CLASS_ROLE.projects).toBe('admin');
    expect(ROUTE_CLASS_ROLE.triage).toBe('member');
    expect(ROUTE_CLASS_ROLE.read).toBe('viewer');
  });
});

describe('emails and passwords', () => {
  it('normalise emails and refuse malformed ones', () => {
    expect(normaliseEmail('  Ana@Example.COM ')).toBe('ana@example.com');
    for (const bad of ['', 'ana', 'ana@', '@example.com', 'a b@example.com', 'ana@example', 'ana@@example.com', 42]) {
      expect(() => normaliseEmail(bad), String(bad)).toThrow(AccountInputError);
    }
  });

  it('need at least 10 characters in a password', () => {
    expect(() => checkPassword('short-pw1')).toThrow(/at least 10/);
    expect(checkPassword('ten-chars!')).toBe('ten-chars!');
    expect(() => checkPassword('x'.repeat(1025))).toThrow(/at most 1024/);
    expect(() => checkPassword(undefined)).toThrow(/string/);
  });

  it('hash passwords with PBKDF2 at 600 000 iterations, verifying only the right one', async () => {
    expect(PBKDF2_ITERATIONS).toBe(600_000);
    const hash = await hashPassword('correct horse battery', 1000);
    expect(hash).toMatch(/^pbkdf2-sha256\$1000\$[A-Za-z0-9_-]+\$[A-Za-z0-9_-]{43}$/);
    expect(hash).not.toContain('correct');
    expect(isPasswordHash(hash)).toBe(true);
    expect(await verifyPassword('correct horse battery', hash)).toEqual({ ok: true, rehash: true });
    expect((await verifyPassword('correct horse batterY', hash)).ok).toBe(false);
    expect((await verifyPassword('anything', null)).ok).toBe(false);
    expect((await verifyPassword('anything', 'pbkdf2-sha256$x$y$z')).ok).toBe(false);
    expect(await hashPassword('same password', 1000)).not.toBe(await hashPassword('same password', 1000));
  });
});

describe('personal tokens', () => {
  it('are flt_ and 40 random characters, stored as a SHA-256 hex hash', async () => {
    const a = newPersonalToken();
    expect(a).toMatch(/^flt_[A-Za-z0-9]{40}$/);
    expect(isPersonalToken(a)).toBe(true);
    expect(isPersonalToken(`${a}x`)).toBe(false);
    expect(newPersonalToken()).not.toBe(a);
    expect(await secretHash('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('take an optional expiry in the future', () => {
    expect(parseExpiry(undefined, NOW)).toBeNull();
    expect(parseExpiry(null, NOW)).toBeNull();
    expect(parseExpiry('2027-01-01T00:00:00Z', NOW)).toBe(Date.UTC(2027, 0, 1));
    expect(() => parseExpiry('2020-01-01T00:00:00Z', NOW)).toThrow(/future/);
    expect(() => parseExpiry('tomorrow', NOW)).toThrow(/RFC 3339/);
  });
});

describe('the last enabled admin', () => {
  const users = [
    { id: 1, role: 'admin' as const, disabled: false },
    { id: 2, role: 'admin' as const, disabled: true },
    { id: 3, role: 'member' as const, disabled: false },
  ];
  it('cannot be removed, disabled or demoted', () => {
    expect(lastAdminRefusal(users, 1, null)).toMatch(/last enabled admin/);
    expect(lastAdminRefusal(users, 1, { role: 'admin', disabled: true })).toMatch(/last/);
    expect(lastAdminRefusal(users, 1, { role: 'member', disabled: false })).toMatch(/last/);
    expect(lastAdminRefusal(users, 1, { role: 'admin', disabled: false })).toBeNull();
    expect(lastAdminRefusal(users, 2, null)).toBeNull();
    expect(lastAdminRefusal(users, 3, null)).toBeNull();
    expect(lastAdminRefusal([...users, { id: 4, role: 'admin', disabled: false }], 1, null)).toBeNull();
  });
});

describe('SSO claims', () => {
  const settings = { allowedDomains: ['example.com'], adminGroups: ['ops'] };
  it('need a verified email in an allowed domain; an admin group makes an admin', async () => {
    const { ssoIdentity, ssoRole, SsoRefusal } = await import('../../src/accounts/oidc.js');
    const ana = ssoIdentity(
      { email: 'Ana@Example.com', email_verified: true, name: ' Ana ', groups: ['ops', 3] },
      settings,
    );
    expect(ana).toEqual({ email: 'ana@example.com', name: 'Ana', admin: true });
    expect(ssoRole(ana, 'viewer', 'viewer')).toBe('admin');
    const bo = ssoIdentity({ email: 'bo@example.com', email_verified: true }, settings);
    expect(ssoRole(bo, null, 'member')).toBe('member');
    expect(ssoRole(bo, 'admin', 'viewer')).toBe('admin');
    for (const claims of [
      { email: 'bo@example.com', email_verified: 'true' },
      { email: 'bo@example.com' },
      { email: 'bo@example.org', email_verified: true },
      { email: 'bo@sub.example.com', email_verified: true },
      { email_verified: true },
    ]) {
      expect(() => ssoIdentity(claims, settings), JSON.stringify(claims)).toThrow(SsoRefusal);
    }
  });
});
