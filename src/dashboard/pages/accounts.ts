// Account pages: sign-in (email and password, SSO when configured, or an API key
// while no user exists), the first admin's setup page, the invite page, the signed-in
// user's settings (password, sessions, personal tokens), and the admin's users and
// audit log pages.
import type { auditJson, tokenJson, userJson } from '../../accounts/store.js';
import { ROLES } from '../../accounts/rules.js';
import { href, html, options, utc, type Html } from '../html.js';
import { csrfField, flash, page, type PageContext } from '../layout.js';

const anonymous: PageContext = { csrf: '', signedIn: false, now: 0 };

export interface LoginOptions {
  /** Users exist: email and password; otherwise the instance's API key. */
  passwords: boolean;
  /** Show "Sign in with SSO". */
  sso: boolean;
  /** No user yet: point to the setup page. */
  setup: boolean;
  email?: string;
}

export function loginPage(
  next: string,
  error?: string,
  o: LoginOptions = { passwords: false, sso: false, setup: false },
): Html {
  const form = o.passwords
    ? html`<form method="post" action="/login" class="card">
    <input type="hidden" name="next" value="${next}">
    <p><label>Email<input name="email" type="email" autocomplete="username" required autofocus value="${o.email ?? ''}"></label></p>
    <p><label>Password<input name="password" type="password" autocomplete="current-password" required></label></p>
    <button type="submit">Sign in</button>
  </form>`
    : html`<form method="post" action="/login" class="card">
    <input type="hidden" name="next" value="${next}">
    <p>This Faultline server asks for one of its API keys (the <code>API_KEYS</code> setting).</p>
    <p><label>API key<input name="key" type="password" autocomplete="current-password" required autofocus></label></p>
    <button type="submit">Sign in</button>
  </form>`;
  const body = html`<h1>Sign in</h1>
  ${flash(error, 'error')}
  ${form}
  ${o.sso ? html`<p><a class="button" href="${href('/login/sso', { next: next === '/' ? undefined : next })}">Sign in with SSO</a></p>` : ''}
  ${o.setup ? html`<p class="sub">No user yet? <a href="/login/setup">Create the first admin</a> with the setup token the server logged at start.</p>` : ''}`;
  return page(anonymous, { title: 'Sign in', body });
}

/** After an SSO sign-in: goes on to `next` by a same-site navigation of its own. */
export function continuePage(next: string): Html {
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=${next}"><title>Signed in · Faultline</title><link rel="stylesheet" href="/static/dashboard.css"></head>
<body><main id="main"><p>Signed in. <a href="${next}">Continue</a></p></main></body></html>`;
}

export function setupPage(error?: string, form: Record<string, string> = {}): Html {
  const body = html`<h1>Create the first admin</h1>
  ${flash(error, 'error')}
  <form method="post" action="/login/setup" class="card">
    <p>The server logs a one-time setup token at start while no user exists (<code>setup token</code> in its log).</p>
    <p><label>Setup token<input name="setup_token" autocomplete="off" required autofocus></label></p>
    <p><label>Email<input name="email" type="email" autocomplete="username" required value="${form.email ?? ''}"></label></p>
    <p><label>Name<input name="name" value="${form.name ?? ''}"></label></p>
    <p><label>Password (at least 10 characters)<input name="password" type="password" autocomplete="new-password" minlength="10" required></label></p>
    <button type="submit">Create admin and sign in</button>
  </form>`;
  return page(anonymous, { title: 'Setup', body });
}

export function invitePage(token: string, email: string, error?: string): Html {
  const body = html`<h1>Welcome</h1>
  ${flash(error, 'error')}
  <form method="post" action="/login/invite/${token}" class="card">
    <p>Choose a password for <strong>${email}</strong>.</p>
    <p><label>Password (at least 10 characters)<input name="password" type="password" autocomplete="new-password" minlength="10" required autofocus></label></p>
    <button type="submit">Set password and sign in</button>
  </form>`;
  return page(anonymous, { title: 'Invite', body });
}

export interface SessionView {
  current: boolean;
  created_at: string;
  last_seen_at: string;
  ip: string | null;
  user_agent: string | null;
}

export function accountPage(
  ctx: PageContext,
  user: ReturnType<typeof userJson> | null,
  sessions: SessionView[],
  tokens: ReturnType<typeof tokenJson>[],
  o: { message?: string; error?: string; newToken?: string } = {},
): Html {
  const body = html`<h1>Your account</h1>
  ${flash(o.message)}${flash(o.error, 'error')}
  ${
    user
      ? html`<p>${user.name} · ${user.email} · role <strong>${user.role}</strong></p>
  <section class="card" aria-labelledby="pw-h"><h2 id="pw-h">Password</h2>
    <form method="post" action="/settings/password" class="filters">
      ${csrfField(ctx)}
      <label>New password (at least 10 characters)<input name="password" type="password" autocomplete="new-password" minlength="10" required></label>
      <button type="submit">Change password</button>
    </form>
    <p class="sub">Changing it signs you out everywhere.</p>
  </section>
  <section class="card" aria-labelledby="sessions-h"><h2 id="sessions-h">Sessions</h2>
    <div class="scroll"><table><thead><tr><th>Signed in</th><th>Last seen</th><th>Address</th><th>Browser</th></tr></thead><tbody>
    ${sessions.map((s) => html`<tr><td>${utc(s.created_at)}${s.current ? html` <strong>(this one)</strong>` : ''}</td><td>${utc(s.last_seen_at)}</td><td>${s.ip ?? ''}</td><td class="sub">${s.user_agent ?? ''}</td></tr>`)}
    </tbody></table></div>
    <form method="post" action="/settings/end-sessions">${csrfField(ctx)}<button type="submit" class="secondary">End all sessions</button></form>
  </section>
  <section class="card" aria-labelledby="tokens-h"><h2 id="tokens-h">Personal tokens</h2>
    ${o.newToken ? html`<p class="flash" role="status">Your new token (shown only now): <code id="new-token">${o.newToken}</code></p>` : ''}
    <p class="sub">Use a token as <code>Authorization: Bearer …</code> or as <code>SENTRY_AUTH_TOKEN</code> for sentry-cli; it acts with your role.</p>
    <div class="scroll"><table><thead><tr><th>Name</th><th>Created</th><th>Expires</th><th>Last used</th><th></th></tr></thead><tbody>
    ${tokens.map(
      (
        t,
      ) => html`<tr><td>${t.name}</td><td>${utc(t.created_at)}</td><td>${t.expires_at ? utc(t.expires_at) : 'never'}</td><td>${t.last_used_at ? utc(t.last_used_at) : '—'}</td>
      <td><form method="post" action="/settings/tokens/${t.id}/delete">${csrfField(ctx)}<button type="submit" class="secondary">Delete</button></form></td></tr>`,
    )}
    </tbody></table></div>
    <form method="post" action="/settings/tokens" class="filters">
      ${csrfField(ctx)}
      <label>Name<input name="name" required maxlength="200"></label>
      <label>Expires (optional)<input name="expires_at" type="date"></label>
      <button type="submit">Create token</button>
    </form>
  </section>`
      : html`<p>You are signed in with an instance API key. Create a user (<code>faultline users create</code> or the users page) to get an account.</p>`
  }`;
  return page(ctx, { title: 'Your account', body });
}

export function usersPage(
  ctx: PageContext,
  users: ReturnType<typeof userJson>[],
  o: { message?: string; error?: string; inviteUrl?: string } = {},
): Html {
  const body = html`<h1>Users</h1>
  ${flash(o.message)}${flash(o.error, 'error')}
  ${o.inviteUrl ? html`<p class="flash" role="status">Send this one-time link (valid 7 days): <code id="invite-url">${o.inviteUrl}</code></p>` : ''}
  <div class="scroll"><table><thead><tr><th>User</th><th>Role</th><th>Status</th><th>Last sign-in</th><th></th></tr></thead><tbody>
  ${users.map(
    (u) => html`<tr><td>${u.name}<div class="sub">${u.email}</div></td>
    <td><form method="post" action="/admin/users/${u.id}" class="actions">${csrfField(ctx)}<select name="role" aria-label="Role of ${u.email}">${options(ROLES, u.role)}</select><button type="submit" class="secondary">Set role</button></form></td>
    <td>${u.disabled ? 'disabled' : 'enabled'}</td><td>${u.last_login_at ? utc(u.last_login_at) : '—'}</td>
    <td class="actions">
      <form method="post" action="/admin/users/${u.id}">${csrfField(ctx)}<input type="hidden" name="disabled" value="${u.disabled ? 'false' : 'true'}"><button type="submit" class="secondary">${u.disabled ? 'Enable' : 'Disable'}</button></form>
      <form method="post" action="/admin/users/${u.id}/end-sessions">${csrfField(ctx)}<button type="submit" class="secondary">End sessions</button></form>
      <form method="post" action="/admin/users/${u.id}/delete">${csrfField(ctx)}<button type="submit" class="danger" data-confirm="Delete ${u.email}?">Delete</button></form>
    </td></tr>`,
  )}
  </tbody></table></div>
  <section class="card" aria-labelledby="new-user"><h2 id="new-user">New user</h2>
    <form method="post" action="/admin/users" class="filters">
      ${csrfField(ctx)}
      <label>Email<input name="email" type="email" required></label>
      <label>Name<input name="name"></label>
      <label>Role<select name="role">${options(ROLES, 'viewer')}</select></label>
      <button type="submit">Create and get an invite link</button>
    </form>
  </section>`;
  return page(ctx, { title: 'Users', body });
}

export function auditPage(
  ctx: PageContext,
  entries: ReturnType<typeof auditJson>[],
  q: Record<string, string>,
  nextBefore: number | null,
): Html {
  const body = html`<h1>Audit log</h1>
  <form method="get" action="/admin/audit" class="filters">
    <label>Actor<input name="actor" value="${q.actor ?? ''}"></label>
    <label>Action<input name="action" value="${q.action ?? ''}" placeholder="e.g. user.sign_in"></label>
    <label>Target<input name="target" value="${q.target ?? ''}"></label>
    <button type="submit">Filter</button>
  </form>
  <div class="scroll"><table><thead><tr><th>When</th><th>Actor</th><th>Action</th><th>Target</th><th>Details</th><th>Address</th></tr></thead><tbody>
  ${entries.map((e) => html`<tr><td>${utc(e.at)}</td><td>${e.actor}</td><td>${e.action}</td><td>${e.target ?? ''}</td><td class="sub"><code>${JSON.stringify(e.details)}</code></td><td>${e.ip ?? ''}</td></tr>`)}
  </tbody></table></div>
  ${nextBefore !== null ? html`<p><a href="${href('/admin/audit', { ...q, before: nextBefore })}">Older entries</a></p>` : ''}`;
  return page(ctx, { title: 'Audit log', body });
}
