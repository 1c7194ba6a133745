/**
 * The Statistics page's periods, in UTC days as the service counts them:
 * a period is `[start, end)` of `YYYY-MM-DD` days; "the last 7 days" are
 * today (UTC) and the 6 days before, as the service's default 30 days are.
 */

/** The longest period the service answers (docs/operations.md). */
export const MAX_PERIOD_DAYS = 731;

/** A period of whole UTC days: from `start` (included) to `end` (excluded). */
export interface IPeriod {
  start: string;
  end: string;
}

/** What the picker chose: the last N days, or a range of days (both included). */
export type PeriodChoice =
  | { kind: 'last'; days: number }
  | { kind: 'range'; from: string; to: string };

export const PRESETS: ReadonlyArray<{ days: number; label: string }> = [
  { days: 7, label: 'Last 7 days' },
  { days: 30, label: 'Last 30 days' },
  { days: 90, label: 'Last 90 days' }
];

const DAY_MS = 86400000;
const DAY = /^(\d{4})-(\d{2})-(\d{2})$/;

/** The UTC day of a time, `YYYY-MM-DD`. */
export function utcDay(t: Date): string {
  return t.toISOString().slice(0, 10);
}

/** Milliseconds of a day's UTC midnight; null for anything but a real `YYYY-MM-DD`. */
export function dayMs(day: string): number | null {
  const m = DAY.exec(day);
  if (m === null) {
    return null;
  }
  const ms = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  return utcDay(new Date(ms)) === day ? ms : null; // 2026-02-30 is no day
}

/** `day` plus `n` days (n may be negative). */
export function addDays(day: string, n: number): string {
  const ms = dayMs(day);
  if (ms === null) {
    throw new Error(`not a day: ${JSON.stringify(day)}`);
  }
  return utcDay(new Date(ms + n * DAY_MS));
}

/** Whole days from `a` to `b`. */
export function daysBetween(a: string, b: string): number {
  const x = dayMs(a);
  const y = dayMs(b);
  if (x === null || y === null) {
    throw new Error(`not days: ${JSON.stringify(a)}, ${JSON.stringify(b)}`);
  }
  return Math.round((y - x) / DAY_MS);
}

/** The last `days` UTC days up to the end of today (`now`'s UTC day). */
export function lastDays(days: number, now: Date): IPeriod {
  const end = addDays(utcDay(now), 1);
  return { start: addDays(end, -days), end };
}

/** The period a choice means at `now`, or the reason it is none. */
export function resolvePeriod(
  choice: PeriodChoice,
  now: Date
): { period: IPeriod } | { error: string } {
  if (choice.kind === 'last') {
    if (!Number.isInteger(choice.days) || choice.days < 1 || choice.days > MAX_PERIOD_DAYS) {
      return { error: `the last ${choice.days} days: ask for 1 to ${MAX_PERIOD_DAYS} days` };
    }
    return { period: lastDays(choice.days, now) };
  }
  if (dayMs(choice.from) === null) {
    return { error: `From: not a date (YYYY-MM-DD): ${choice.from || '(empty)'}` };
  }
  if (dayMs(choice.to) === null) {
    return { error: `To: not a date (YYYY-MM-DD): ${choice.to || '(empty)'}` };
  }
  const end = addDays(choice.to, 1);
  const days = daysBetween(choice.from, end);
  if (days < 1) {
    return { error: `From (${choice.from}) is after To (${choice.to})` };
  }
  if (days > MAX_PERIOD_DAYS) {
    return { error: `${days} days: the service answers at most ${MAX_PERIOD_DAYS} days at a time` };
  }
  return { period: { start: choice.from, end } };
}

/** "2026-11-23 to 2026-11-29 (7 UTC days)": the last day shown is included. */
export function describePeriod(period: IPeriod): string {
  const days = daysBetween(period.start, period.end);
  const last = addDays(period.end, -1);
  const span = days === 1 ? period.start : `${period.start} to ${last}`;
  return `${span} (${days} UTC day${days === 1 ? '' : 's'})`;
}

/**
 * The UTC days of a service time such as "2026-11-23T00:00:00+00:00"
 * (the report's start and end): null when it is not a UTC midnight.
 */
export function reportDay(time: string): string | null {
  const ms = Date.parse(time);
  if (Number.isNaN(ms)) {
    return null;
  }
  const t = new Date(ms);
  return t.getUTCHours() || t.getUTCMinutes() || t.getUTCSeconds() || t.getUTCMilliseconds()
    ? null
    : utcDay(t);
}

/** "2026-11-24 10:00 UTC" for the report's `as_of`; the text itself if unreadable. */
export function asOfText(time: string): string {
  const ms = Date.parse(time);
  return Number.isNaN(ms) ? time : `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}
