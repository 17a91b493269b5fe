// `serve`'s minutely monitor check (docs/api.md "Cron monitors"): runMonitorCheck at the
// app's clock every minute, one run at a time; the alerts it records are the dispatcher's.
// `faultline alerts` and the Worker's every-minute cron call runMonitorCheck themselves.
import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import type { Store } from '../store/database.js';
import { runMonitorCheck, type MonitorCheckResult } from './store.js';

export const MONITOR_CHECK_INTERVAL_MS = 60_000;

export interface MonitorJob {
  runOnce(): Promise<MonitorCheckResult | null>;
  stop(): Promise<void>;
}

export function startMonitorJob(
  deps: { store: Store; clock: Clock; logger: Logger; onAlerts?: () => void },
  options: { intervalMs?: number } = {},
): MonitorJob {
  let current: Promise<MonitorCheckResult | null> | null = null;
  let stopped = false;
  const runOnce = () => {
    if (current) return current;
    current = (async () => {
      try {
        const result = await runMonitorCheck(deps.store, deps.clock.now());
        if (result.missed + result.timed_out > 0) deps.logger.info(result, 'cron monitors checked');
        if (result.incidents + result.recoveries > 0) deps.onAlerts?.();
        return result;
      } catch (err) {
        if (!stopped) deps.logger.error({ err }, 'the cron monitor check failed; it runs again in a minute');
        return null;
      } finally {
        current = null;
      }
    })();
    return current;
  };
  const timer = setInterval(() => void runOnce(), options.intervalMs ?? MONITOR_CHECK_INTERVAL_MS);
  (timer as { unref?: () => void }).unref?.();
  return {
    runOnce,
    async stop() {
      stopped = true;
      clearInterval(timer);
      if (current) await current;
    },
  };
}
