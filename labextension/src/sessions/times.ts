/**
 * Times as people read them (pure): an instant in the browser's local time,
 * and the service's times inside its texts (reclaim reasons: `2026-11-26
 * 10:00:05 UTC`, or ISO 8601) turned into local time.
 */

function time(iso: string | null | undefined): number | null {
  if (!iso) {
    return null;
  }
  const t = Date.parse(iso);
  return Number.isNaN(t) ? null : t;
}

const pad = (n: number) => String(n).padStart(2, '0');

/**
 * An instant in the browser's local time: "14:05:09" today, else
 * "Thu 26 Nov 14:05:09" (this year) or "26 Nov 2025 14:05:09"; "" for none.
 */
export function localTime(iso: string | null | undefined, now: number = Date.now()): string {
  const t = time(iso);
  if (t === null) {
    return '';
  }
  const d = new Date(t);
  const today = new Date(now);
  const clock = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  if (d.toDateString() === today.toDateString()) {
    return clock;
  }
  const month = d.toLocaleString('en-GB', { month: 'short' });
  if (d.getFullYear() === today.getFullYear()) {
    const day = d.toLocaleString('en-GB', { weekday: 'short' });
    return `${day} ${d.getDate()} ${month} ${clock}`;
  }
  return `${d.getDate()} ${month} ${d.getFullYear()} ${clock}`;
}

/** The service's times in a text (`2026-11-26 10:00:05 UTC`, or ISO 8601) in local time. */
export function localizeTimes(text: string, now: number = Date.now()): string {
  return text
    .replace(/\b(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2}) UTC\b/g, (_m, day, clock) =>
      localTime(`${day}T${clock}Z`, now)
    )
    .replace(
      /\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})/g,
      iso => localTime(iso, now) || iso
    );
}

