// Accounts: users and their roles (viewer < member < admin), personal tokens,
// password hashing, dashboard sessions kept in the database, invites, the one-time
// setup token and the audit log (docs/api.md "Accounts", docs/architecture.md).
// Rules are pure (rules.ts, password.ts); store.ts reads and writes. HTTP lives in
// src/http/users.ts and src/http/auth.ts, pages in src/dashboard.
export type { Actor, Role, RouteClass } from './rules.js';
export { ROLES, isRole, roleAtLeast, routeClass, ROUTE_CLASS_ROLE } from './rules.js';
