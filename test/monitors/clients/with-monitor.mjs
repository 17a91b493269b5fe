// @sentry/node's withMonitor against the real server, run as a child process by
// test/monitors/clients.test.ts (Sentry.init is process-global).
// Usage: node with-monitor.mjs <ok|fail>; FAULTLINE_DSN names the server and project.
import * as Sentry from '@sentry/node';

const scenario = process.argv[2];
const dsn = process.env.FAULTLINE_DSN;
if (!dsn) throw new Error('FAULTLINE_DSN is not set');
Sentry.init({ dsn, release: 'cron@2.0.0', environment: 'staging', tracesSampleRate: 0, sendClientReports: false });

const config = {
  schedule: { type: 'interval', value: 10, unit: 'minute' },
  checkinMargin: 2,
  maxRuntime: 5,
  timezone: 'Europe/Vienna',
  failureIssueThreshold: 1,
  recoveryThreshold: 1,
};
try {
  await Sentry.withMonitor(
    `node-${scenario}`,
    async () => {
      await new Promise((resolve) => setTimeout(resolve, 50));
      if (scenario === 'fail') throw new Error('the job failed');
    },
    config,
  );
} catch (err) {
  if (scenario !== 'fail') throw err;
}
if (!(await Sentry.flush(10_000))) {
  console.error('flush timed out');
  process.exit(3);
}
