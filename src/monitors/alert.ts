// The `monitor` alert's outbox payload (docs/api.md "Cron monitors"): what the channels
// show for an incident (a missed, failed or timed-out check-in) and for its recovery.
// Pure; src/alerts/channels.ts renders it like the other alert types.
import type { Outcome, Transition } from './state.js';

export interface MonitorAlertPayload {
  title: string;
  monitor: string;
  /** incident: what failed; recovery: `recovered`. */
  reason: Exclude<Outcome, 'ok'> | 'recovered';
  /** Failures in a row when the incident opened; ok check-ins in a row at recovery. */
  failures: number;
  environment?: string;
  /** For a miss: when the check-in was expected (ISO 8601). */
  expected_at?: string;
}

const REASONS: Record<Exclude<Outcome, 'ok'>, string> = {
  missed: 'missed a check-in',
  error: 'reported a failure',
  timeout: 'timed out',
};

export function monitorAlertPayload(
  slug: string,
  transition: Exclude<Transition, null>,
  outcome: Outcome,
  o: { failures: number; environment?: string | null; expectedAt?: number | null; maxRuntime?: number },
): MonitorAlertPayload {
  if (transition === 'recovery') {
    return {
      title: `Monitor ${slug} recovered`,
      monitor: slug,
      reason: 'recovered',
      failures: o.failures,
      ...(o.environment ? { environment: o.environment } : {}),
    };
  }
  const reason = outcome === 'ok' ? 'error' : outcome;
  let title = `Monitor ${slug} ${REASONS[reason]}`;
  if (reason === 'timeout' && o.maxRuntime !== undefined)
    title += ` (running longer than ${o.maxRuntime} minute${o.maxRuntime === 1 ? '' : 's'})`;
  if (o.failures > 1) title += ` (${o.failures} failures in a row)`;
  const payload: MonitorAlertPayload = { title, monitor: slug, reason, failures: o.failures };
  if (o.environment) payload.environment = o.environment;
  if (reason === 'missed' && o.expectedAt != null) payload.expected_at = new Date(o.expectedAt).toISOString();
  return payload;
}
