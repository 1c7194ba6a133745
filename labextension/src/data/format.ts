/** Byte counts and times as people read them. */

import { formatBytes as exactBytes } from '../amounts';

/**
 * A byte count in binary units, exactly as every hubgrid page shows bytes
 * (src/amounts.ts): `0 B`, `512 B`, `1.5 KiB`, `8 MiB`, `≈ 1.18 MiB`.
 * null (never measured) shows as an en dash.
 */
export function formatBytes(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) {
    return '–';
  }
  return exactBytes(BigInt(Math.max(0, Math.round(bytes))));
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
