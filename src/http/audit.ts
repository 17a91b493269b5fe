// Audit entries from route handlers: the request's actor and client address with the
// action, written after the change (docs/api.md "Audit log"). Domain functions that
// commit a change and its entry together (src/accounts/store.ts) take auditFrom's
// result instead.
import type { Context } from 'hono';
import type { AppDeps } from '../context.js';
import { type AuditEntry, recordAudit } from '../accounts/store.js';
import { requestActor } from './auth.js';
import { clientAddressOf } from './forwarded.js';

/** The actor and address an audit entry of this request carries. */
export function auditFrom(deps: AppDeps, c: Context): Pick<AuditEntry, 'actor' | 'ip'> {
  const ip = clientAddressOf(deps, c.req.raw, c.env);
  return { actor: requestActor(c), ip: ip === 'unknown' ? null : ip };
}

/**
 * Records one action. A failure to write it is logged, not answered: the change it
 * records has already happened.
 */
export async function audit(
  deps: AppDeps,
  c: Context,
  action: string,
  target: string | null,
  details: Record<string, unknown> = {},
): Promise<void> {
  try {
    await recordAudit(deps.store, { ...auditFrom(deps, c), action, target, details }, deps.clock.now());
  } catch (err) {
    deps.logger.error({ err, action }, 'writing an audit entry failed');
  }
}
