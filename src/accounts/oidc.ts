// OpenID Connect sign-in (docs/api.md "Single sign-on") with openid-client, a certified
// relying party that runs on Web APIs (both editions): discovery, authorization code
// with PKCE (S256), `state` and `nonce`. The state's hash, nonce and PKCE verifier wait
// in the database (`sso_states`, minutes, used once), so any instance finishes a sign-in
// another one started and a replayed or forged `state` finds nothing. openid-client
// verifies the ID token's signature, issuer, audience, expiry and nonce; the rules here
// then ask for a verified email in an allowed domain and pick the role.
import * as oidc from 'openid-client';
import type { Kysely } from 'kysely';
import type { OidcConfig } from '../config.js';
import type { Database } from '../store/schema.js';
import { emailDomain, normaliseEmail, type Role, secretHash } from './rules.js';

/** How long a sign-in may take at the provider. */
export const SSO_STATE_TTL_MS = 10 * 60 * 1000;

export class SsoRefusal extends Error {}

export interface SsoIdentity {
  email: string;
  name: string | null;
  /** The `groups` claim names one of OIDC_ADMIN_GROUPS. */
  admin: boolean;
}

/** What the verified ID token's claims allow: a verified email in an allowed domain. */
export function ssoIdentity(
  claims: Record<string, unknown>,
  settings: Pick<OidcConfig, 'allowedDomains' | 'adminGroups'>,
): SsoIdentity {
  let email: string;
  try {
    email = normaliseEmail(claims.email);
  } catch {
    throw new SsoRefusal('the identity provider sent no valid email address (ask for the "email" scope)');
  }
  if (claims.email_verified !== true) throw new SsoRefusal(`the identity provider has not verified ${email}`);
  if (!settings.allowedDomains.includes(emailDomain(email)))
    throw new SsoRefusal(`${email} is not in a domain allowed to sign in here`);
  const groups = Array.isArray(claims.groups) ? claims.groups.filter((g): g is string => typeof g === 'string') : [];
  const name = typeof claims.name === 'string' && claims.name.trim() !== '' ? claims.name.trim().slice(0, 200) : null;
  return { email, name, admin: groups.some((g) => settings.adminGroups.includes(g)) };
}

/** The role of a user signing in: an admin group makes an admin; otherwise theirs, or the default for a new user. */
export function ssoRole(identity: SsoIdentity, existing: Role | null, defaultRole: Role): Role {
  if (identity.admin) return 'admin';
  return existing ?? defaultRole;
}

/** The provider's configuration, discovered once per app and again after a failure. */
export class SsoClient {
  private discovered: Promise<oidc.Configuration> | null = null;

  constructor(
    readonly settings: OidcConfig,
    private readonly db: Kysely<Database>,
  ) {}

  private configuration(): Promise<oidc.Configuration> {
    if (!this.discovered) {
      // Plain http only for a provider on this machine or a test; production issuers are https.
      const insecure = this.settings.issuer.startsWith('http:') ? { execute: [oidc.allowInsecureRequests] } : undefined;
      this.discovered = oidc.discovery(
        new URL(this.settings.issuer),
        this.settings.clientId,
        this.settings.clientSecret,
        undefined,
        insecure,
      );
      this.discovered.catch(() => {
        this.discovered = null;
      });
    }
    return this.discovered;
  }

  /** Where to send the browser to sign in; `redirectUri` is this server's callback. */
  async start(redirectUri: string, next: string, now: number): Promise<string> {
    const config = await this.configuration();
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    await this.db
      .deleteFrom('sso_states')
      .where('created_at', '<', now - SSO_STATE_TTL_MS)
      .execute();
    await this.db
      .insertInto('sso_states')
      .values({ state_hash: await secretHash(state), nonce, code_verifier: verifier, next, created_at: now })
      .execute();
    return oidc
      .buildAuthorizationUrl(config, {
        redirect_uri: redirectUri,
        scope: 'openid email profile',
        code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        state,
        nonce,
      })
      .toString();
  }

  /**
   * Finishes a sign-in at the callback URL (as the browser reached it, with this server's
   * public origin): spends the state, exchanges the code, verifies the ID token.
   */
  async finish(callbackUrl: URL, now: number): Promise<{ identity: SsoIdentity; next: string }> {
    const state = callbackUrl.searchParams.get('state') ?? '';
    const error = callbackUrl.searchParams.get('error');
    const hash = await secretHash(state);
    // Spent before anything else: a replayed state finds nothing, whatever happens next.
    const row = await this.db.deleteFrom('sso_states').where('state_hash', '=', hash).returningAll().executeTakeFirst();
    if (error) throw new SsoRefusal(`the identity provider refused the sign-in (${error.slice(0, 100)})`);
    if (!row || Number(row.created_at) < now - SSO_STATE_TTL_MS)
      throw new SsoRefusal('this sign-in link is unknown, used or expired; start again');
    const config = await this.configuration();
    let tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>;
    try {
      tokens = await oidc.authorizationCodeGrant(config, callbackUrl, {
        pkceCodeVerifier: row.code_verifier,
        expectedState: state,
        expectedNonce: row.nonce,
        idTokenExpected: true,
      });
    } catch (err) {
      // openid-client's error wraps oauth4webapi's, whose message names the check that failed
      // (the "iss", "aud", "nonce" or "exp" claim, the state, the code).
      const inner = (err as { cause?: unknown }).cause;
      const detail = inner instanceof Error && inner.message !== (err as Error).message ? `: ${inner.message}` : '';
      throw new SsoRefusal(`the sign-in could not be verified: ${((err as Error).message + detail).slice(0, 300)}`);
    }
    const claims = tokens.claims();
    if (!claims) throw new SsoRefusal('the identity provider sent no ID token');
    return { identity: ssoIdentity(claims as Record<string, unknown>, this.settings), next: row.next };
  }
}
