// The monitors' pure rules: the health state machine as a table, schedules (crontabs in
// time zones across daylight saving changes, intervals), missed / timed-out decisions
// at injected times, what a check-in and its monitor_config may say, and the monitor
// alert as the channels render it.
import { describe, expect, it } from 'vitest';
import {
  InvalidCheckInError,
  MonitorConfigError,
  parseCheckIn,
  parseMonitorConfig,
  slugifyMonitor,
} from '../../src/monitors/config.js';
import { Schedules, type Schedule } from '../../src/monitors/schedule.js';
import { monitorAlertPayload } from '../../src/monitors/alert.js';
import { telegramText, webhookPayload } from '../../src/alerts/channels.js';
import { summarize } from '../../src/alerts/messages.js';
import {
  applyOutcome,
  deadlineOf,
  nextAfterCheckIn,
  nextAfterMiss,
  timedOut,
  type Health,
  type Outcome,
} from '../../src/monitors/state.js';

const ok: Health = { health: 'ok', failures: 0, successes: 0 };
const t = (failure_issue_threshold: number, recovery_threshold: number) => ({
  failure_issue_threshold,
  recovery_threshold,
});

describe('applyOutcome', () => {
  const cases: [string, Health, Outcome, ReturnType<typeof t>, Health, string | null][] = [
    ['ok stays ok', ok, 'ok', t(1, 1), ok, null],
    [
      'first error opens an incident at threshold 1',
      ok,
      'error',
      t(1, 1),
      { health: 'failing', failures: 1, successes: 0 },
      'incident',
    ],
    ['a miss opens an incident', ok, 'missed', t(1, 1), { health: 'failing', failures: 1, successes: 0 }, 'incident'],
    [
      'a timeout opens an incident',
      ok,
      'timeout',
      t(1, 1),
      { health: 'failing', failures: 1, successes: 0 },
      'incident',
    ],
    [
      'below the threshold: counted, no incident',
      ok,
      'error',
      t(3, 1),
      { health: 'ok', failures: 1, successes: 0 },
      null,
    ],
    [
      'the third failure in a row opens it',
      { health: 'ok', failures: 2, successes: 0 },
      'missed',
      t(3, 1),
      { health: 'failing', failures: 3, successes: 0 },
      'incident',
    ],
    ['an ok between failures resets the count', { health: 'ok', failures: 2, successes: 0 }, 'ok', t(3, 1), ok, null],
    [
      'failing: another failure is not alerted again',
      { health: 'failing', failures: 1, successes: 0 },
      'error',
      t(1, 1),
      { health: 'failing', failures: 2, successes: 0 },
      null,
    ],
    [
      'failing: one ok recovers at threshold 1',
      { health: 'failing', failures: 4, successes: 0 },
      'ok',
      t(1, 1),
      ok,
      'recovery',
    ],
    [
      'failing: ok below the recovery threshold',
      { health: 'failing', failures: 4, successes: 0 },
      'ok',
      t(1, 2),
      { health: 'failing', failures: 4, successes: 1 },
      null,
    ],
    [
      'failing: the second ok in a row recovers',
      { health: 'failing', failures: 4, successes: 1 },
      'ok',
      t(1, 2),
      ok,
      'recovery',
    ],
    [
      'failing: a failure resets the oks in a row',
      { health: 'failing', failures: 4, successes: 1 },
      'timeout',
      t(1, 2),
      { health: 'failing', failures: 5, successes: 0 },
      null,
    ],
  ];
  it.each(cases)('%s', (_name, before, outcome, thresholds, after, transition) => {
    expect(applyOutcome(before, outcome, thresholds)).toEqual({ next: after, transition });
  });
});

describe('schedules', () => {
  const s = new Schedules();
  const cron = (value: string, timezone = 'UTC'): Schedule => ({ type: 'crontab', value, unit: null, timezone });
  const at = (iso: string) => Date.parse(iso);

  it('crontab: the next tick strictly after, in the time zone, across daylight saving changes', () => {
    expect(s.next(cron('0 * * * *'), at('2026-01-01T10:00:00Z'))).toBe(at('2026-01-01T11:00:00Z'));
    expect(s.next(cron('0 * * * *'), at('2026-01-01T10:00:00.001Z'))).toBe(at('2026-01-01T11:00:00Z'));
    // 03:00 in Vienna: 02:00 UTC in winter, 01:00 UTC once summer time starts (2026-03-29).
    expect(s.next(cron('0 3 * * *', 'Europe/Vienna'), at('2026-03-28T12:00:00Z'))).toBe(at('2026-03-29T01:00:00Z'));
    expect(s.next(cron('0 3 * * *', 'Europe/Vienna'), at('2026-03-27T12:00:00Z'))).toBe(at('2026-03-28T02:00:00Z'));
    expect(s.next(cron('@daily', 'America/New_York'), at('2026-07-01T12:00:00Z'))).toBe(at('2026-07-02T04:00:00Z'));
  });

  it('interval: after the last check-in, months by the calendar', () => {
    const every = (value: number, unit: Schedule['unit']): Schedule => ({
      type: 'interval',
      value: String(value),
      unit,
      timezone: 'UTC',
    });
    expect(s.next(every(10, 'minute'), at('2026-01-01T10:03:00Z'))).toBe(at('2026-01-01T10:13:00Z'));
    expect(s.next(every(2, 'hour'), at('2026-01-01T10:03:00Z'))).toBe(at('2026-01-01T12:03:00Z'));
    expect(s.next(every(1, 'week'), at('2026-01-01T00:00:00Z'))).toBe(at('2026-01-08T00:00:00Z'));
    expect(s.next(every(1, 'month'), at('2026-01-31T00:00:00Z'))).toBe(at('2026-02-28T00:00:00Z'));
    expect(s.next(every(1, 'year'), at('2026-05-01T00:00:00Z'))).toBe(at('2027-05-01T00:00:00Z'));
  });

  it('missed and timed out at injected times', () => {
    const hourly = cron('0 * * * *');
    const expected = at('2026-01-01T11:00:00Z');
    expect(deadlineOf(expected, 5)).toBe(at('2026-01-01T11:05:00Z'));
    // Seen a minute after the deadline: the next tick.
    expect(nextAfterMiss(s, hourly, expected, 5, at('2026-01-01T11:06:00Z'))).toBe(at('2026-01-01T12:00:00Z'));
    // Seen after a day down: one miss, then the next tick whose deadline is still ahead.
    expect(nextAfterMiss(s, hourly, expected, 5, at('2026-01-02T08:04:00Z'))).toBe(at('2026-01-02T08:00:00Z'));
    expect(nextAfterMiss(s, hourly, expected, 5, at('2026-01-02T08:06:00Z'))).toBe(at('2026-01-02T09:00:00Z'));
    // An early check-in never pulls the schedule back.
    expect(nextAfterCheckIn(s, hourly, at('2026-01-01T10:59:58Z'), at('2026-01-01T12:00:00Z'))).toBe(
      at('2026-01-01T12:00:00Z'),
    );
    expect(nextAfterCheckIn(s, hourly, at('2026-01-01T11:00:03Z'), at('2026-01-01T11:00:00Z'))).toBe(
      at('2026-01-01T12:00:00Z'),
    );
    expect(timedOut(at('2026-01-01T11:00:00Z'), 30, at('2026-01-01T11:29:59Z'))).toBe(false);
    expect(timedOut(at('2026-01-01T11:00:00Z'), 30, at('2026-01-01T11:30:00Z'))).toBe(true);
  });
});

describe('check-ins and monitor_config', () => {
  it("fills in Sentry's defaults and slugifies", () => {
    expect(parseMonitorConfig({ schedule: { type: 'crontab', value: ' 0  3 * * * ' } })).toEqual({
      schedule: { type: 'crontab', value: '0 3 * * *', unit: null, timezone: 'UTC' },
      checkin_margin: 1,
      max_runtime: 30,
      failure_issue_threshold: 1,
      recovery_threshold: 1,
    });
    expect(
      parseCheckIn({
        monitor_slug: 'Nightly Backup!',
        status: 'in_progress',
        check_in_id: '83a7c03e-d0a0-4e1b-97e2-e3b18d38f244',
      }),
    ).toMatchObject({
      slug: 'nightly-backup',
      checkInId: '83a7c03ed0a04e1b97e2e3b18d38f244',
      status: 'in_progress',
      config: null,
    });
    expect(slugifyMonitor('x'.repeat(80))).toHaveLength(50);
  });

  it.each([
    [{ schedule: { type: 'crontab', value: '61 * * * *' } }, /schedule.value: "61 \* \* \* \*" is not a crontab/],
    [{ schedule: { type: 'crontab', value: '* * * *' } }, /five fields/],
    [{ schedule: { type: 'crontab', value: '0 0 * * * *' } }, /five fields/],
    [{ schedule: { type: 'interval', value: 0, unit: 'minute' } }, /positive whole number/],
    [{ schedule: { type: 'interval', value: 5, unit: 'fortnight' } }, /schedule.unit must be one of/],
    [{ schedule: { type: 'weekly' } }, /schedule must be/],
    [
      { schedule: { type: 'crontab', value: '0 * * * *' }, checkin_margin: -5 },
      /checkin_margin must be between 1 and 40320/,
    ],
    [{ schedule: { type: 'crontab', value: '0 * * * *' }, max_runtime: 1.5 }, /max_runtime must be a whole number/],
    [
      { schedule: { type: 'crontab', value: '0 * * * *' }, failure_issue_threshold: 0 },
      /failure_issue_threshold must be between 1 and 720/,
    ],
    [
      { schedule: { type: 'crontab', value: '0 * * * *' }, timezone: 'Mars/Olympus' },
      /timezone: "Mars\/Olympus" is not a time zone name/,
    ],
    [[], /monitor_config must be an object/],
  ])('malformed monitor_config %j', (config, message) => {
    expect(() => parseMonitorConfig(config)).toThrow(MonitorConfigError);
    expect(() => parseMonitorConfig(config)).toThrow(message);
  });

  it.each([
    [{ status: 'ok' }, /monitor_slug/],
    [{ monitor_slug: '!!!', status: 'ok' }, /letter or digit/],
    [{ monitor_slug: 'a', status: 'missed' }, /status must be one of ok, error, in_progress/],
    [{ monitor_slug: 'a', status: 'ok', check_in_id: 'nope' }, /check_in_id/],
    [{ monitor_slug: 'a', status: 'ok', duration: -1 }, /duration/],
  ])('unusable check-in %j', (raw, message) => {
    expect(() => parseCheckIn(raw)).toThrow(InvalidCheckInError);
    expect(() => parseCheckIn(raw)).toThrow(message);
  });
});

describe("the monitor alert in the channels' messages", () => {
  const project = { slug: 'shop', name: 'Shop' };
  const at = Date.parse('2030-06-03T10:05:00Z');

  it('webhook, Telegram and the summary the provider messages are built from name the monitor and link to its page', () => {
    const payload = monitorAlertPayload('nightly', 'incident', 'missed', {
      failures: 1,
      expectedAt: Date.parse('2030-06-03T10:00:00Z'),
    });
    expect(payload).toEqual({
      title: 'Monitor nightly missed a check-in',
      monitor: 'nightly',
      reason: 'missed',
      failures: 1,
      expected_at: '2030-06-03T10:00:00.000Z',
    });
    const content = { ...payload, type: 'monitor' as const, triggered_at: at };
    expect(webhookPayload(content, project, 'https://errors.example')).toEqual({
      type: 'monitor',
      project,
      title: 'Monitor nightly missed a check-in',
      url: 'https://errors.example/shop/monitors/nightly',
      monitor: 'nightly',
      reason: 'missed',
      triggered_at: '2030-06-03T10:05:00.000Z',
    });
    expect(telegramText(content, project, 'https://errors.example')).toBe(
      'Cron monitor in Shop (shop)\nMonitor nightly missed a check-in\nhttps://errors.example/shop/monitors/nightly',
    );
    const summary = summarize(content, project, 'https://errors.example');
    expect(summary).toMatchObject({
      headline: 'Cron monitor in Shop',
      title: 'Monitor nightly missed a check-in',
      url: 'https://errors.example/shop/monitors/nightly',
    });
    expect(summary.facts).toContainEqual({ name: 'Monitor', value: 'nightly' });
    const recovered = monitorAlertPayload('nightly', 'recovery', 'ok', { failures: 1, environment: 'production' });
    expect(recovered).toEqual({
      title: 'Monitor nightly recovered',
      monitor: 'nightly',
      reason: 'recovered',
      failures: 1,
      environment: 'production',
    });
  });
});
