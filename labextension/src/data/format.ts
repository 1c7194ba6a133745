/** Byte counts and times as people read them. */

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

/**
 * A byte count in binary units: `0 B`, `512 B`, `1.5 KiB`, `8 MiB`. One
 * decimal, dropped when it is 0. null (never measured) shows as an en dash.
 */
export function formatBytes(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) {
    return '–';
  }
  let value = Math.max(0, bytes);
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  if (unit === 0) {
    return `${value} B`;
  }
  const text = (Math.round(value * 10) / 10).toFixed(1).replace(/\.0$/, '');
  return `${text} ${UNITS[unit]}`;
}

/** A transfer rate: `12.5 MiB/s`. */
export function formatRate(bytesPerSecond: number | null): string {
  if (bytesPerSecond === null || !Number.isFinite(bytesPerSecond)) {
    return '';
  }
  return `${formatBytes(Math.round(bytesPerSecond))}/s`;
}

/** A duration in seconds as `45 s`, `3 min 5 s`, `2 h 10 min`. */
export function formatSeconds(seconds: number | null): string {
  if (seconds === null || !Number.isFinite(seconds) || seconds < 0) {
    return '';
  }
  const s = Math.round(seconds);
  if (s < 60) {
    return `${s} s`;
  }
  if (s < 3600) {
    return `${Math.floor(s / 60)} min ${s % 60} s`;
  }
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/** An ISO time as a local date and time, or '' when absent or unreadable. */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) {
    return '';
  }
  const t = new Date(iso);
  if (Number.isNaN(t.getTime())) {
    return '';
  }
  return t.toLocaleString();
}
