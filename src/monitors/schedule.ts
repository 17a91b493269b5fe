// When a monitor's next check-in is expected (docs/api.md "Cron monitors"): the next
// tick of its crontab in its time zone (cron-parser, which follows the zone's daylight
// saving changes), or the interval after the last check-in. Pure apart from the parser's
// cache, which belongs to one Schedules object (a check pass or a request), never to
// the process.
import type { CronExpression } from 'cron-parser';
import { CronExpressionParser } from 'cron-parser/dist/CronExpressionParser.js';

export const INTERVAL_UNITS = ['minute', 'hour', 'day', 'week', 'month', 'year'] as const;
export type IntervalUnit = (typeof INTERVAL_UNITS)[number];

export interface Schedule {
  type: 'crontab' | 'interval';
  /** The crontab, or the interval's number of units (as text, as stored). */
  value: string;
  unit: IntervalUnit | null;
  timezone: string;
}

const NICKNAMES = new Set(['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@hourly']);
const UNIT_MS: Partial<Record<IntervalUnit, number>> = {
  minute: 60_000,
  hour: 3_600_000,
  day: 86_400_000,
  week: 604_800_000,
};

/** Why a time zone name is not usable, or null when it is (an IANA name such as Europe/Vienna, or UTC). */
export function checkTimezone(tz: string): string | null {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return null;
  } catch {
    return `${JSON.stringify(tz)} is not a time zone name (use an IANA name such as "Europe/Vienna" or "UTC")`;
  }
}

/** Why a crontab is not usable, or null: five fields (minute hour day month weekday) or @hourly … @yearly. */
export function checkCrontab(crontab: string, timezone: string): string | null {
  const fields = crontab.split(' ');
  if (crontab === '' || (fields.length !== 5 && !(fields.length === 1 && NICKNAMES.has(crontab.toLowerCase())))) {
    return `${JSON.stringify(crontab)} is not a crontab: five fields (minute hour day-of-month month day-of-week) or @hourly, @daily, @weekly, @monthly, @yearly`;
  }
  try {
    const expression = CronExpressionParser.parse(crontab, { tz: timezone, strict: false });
    expression.next();
    return null;
  } catch (err) {
    return `${JSON.stringify(crontab)} is not a crontab (${err instanceof Error ? err.message : String(err)})`;
  }
}

/** Adds whole months in UTC, keeping the day where the month has it (else its last day). */
function addMonths(ms: number, months: number): number {
  const d = new Date(ms);
  const day = d.getUTCDate();
  d.setUTCDate(1);
  d.setUTCMonth(d.getUTCMonth() + months);
  const last = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 0)).getUTCDate();
  d.setUTCDate(Math.min(day, last));
  return d.getTime();
}

/** At most this many answers are remembered (monitors due together share their schedule's next tick). */
const MEMO_SIZE = 10_000;

/**
 * Next expected times of many monitors; parsed crontabs, and the answers for a crontab
 * and a time (a crontab's next tick costs tens of microseconds; monitors due in the same
 * minute ask the same question), are kept for the object's life.
 */
export class Schedules {
  private readonly parsed = new Map<string, CronExpression>();
  private readonly answers = new Map<string, number>();

  /** The first time after `after` (strictly) the schedule expects a check-in. */
  next(schedule: Schedule, after: number): number {
    if (schedule.type === 'interval') {
      const n = Number(schedule.value);
      const unit = schedule.unit ?? 'minute';
      if (unit === 'month') return addMonths(after, n);
      if (unit === 'year') return addMonths(after, 12 * n);
      return after + n * UNIT_MS[unit]!;
    }
    const key = `${schedule.timezone}\u0000${schedule.value}`;
    const question = `${key}\u0000${after}`;
    const known = this.answers.get(question);
    if (known !== undefined) return known;
    let expression = this.parsed.get(key);
    if (!expression) {
      expression = CronExpressionParser.parse(schedule.value, { tz: schedule.timezone, strict: false });
      this.parsed.set(key, expression);
    }
    expression.reset(new Date(after));
    const answer = expression.next().getTime();
    if (this.answers.size >= MEMO_SIZE) this.answers.clear();
    this.answers.set(question, answer);
    return answer;
  }
}
