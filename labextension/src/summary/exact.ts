/**
 * Exact helpers on decimal strings that src/amounts.ts does not offer:
 * a percentage for a bar's width, memory in binary units without rounding,
 * and one slot's amount for people. No float ever carries an amount.
 */

import { compareAmounts, formatAmount, formatBytes } from '../amounts';

/** value as an integer count of 10^-scale units (value is a plain decimal). */
function units(value: string, scale: number): bigint {
  const plain = formatAmount(value); // "1E+1" -> "10", no exponent left
  const negative = plain.startsWith('-');
  const [whole, fraction = ''] = plain.replace('-', '').split('.');
  const digits = whole + fraction.padEnd(scale, '0').slice(0, scale);
  const result = BigInt(digits);
  return negative ? -result : result;
}

function scaleOf(value: string): number {
  const plain = formatAmount(value);
  const dot = plain.indexOf('.');
  return dot < 0 ? 0 : plain.length - dot - 1;
}

/**
 * How many whole percent `part` is of `whole`, rounded down and kept within
 * 0..100 (a bar's width); 0 when `whole` is 0 or less.
 */
export function percentOf(part: string, whole: string): number {
  if (compareAmounts(whole, '0') <= 0 || compareAmounts(part, '0') <= 0) {
    return 0;
  }
  const scale = Math.max(scaleOf(part), scaleOf(whole));
  const p = units(part, scale) * BigInt(100);
  const w = units(whole, scale);
  const pct = Number(p / w);
  return Math.min(100, pct);
}

/** The larger of two amounts. */
export function maxAmount(a: string, b: string): string {
  return compareAmounts(a, b) >= 0 ? a : b;
}

/** Bytes for people, exact, in binary units (src/amounts.ts: the one formatting). */
export { formatBytes };

/** One slot's amount for people: memory in binary units, the rest as is. */
export function formatSlot(slot: string, value: string | null | undefined): string {
  if (value === null || value === undefined) {
    return 'unlimited';
  }
  return slot === 'mem' ? formatBytes(value) : formatAmount(value);
}

/** Human names of the slots hubgrid knows. */
export const SLOT_LABELS: { [slot: string]: string } = {
  cpu: 'CPU',
  mem: 'Memory',
  gpu: 'GPU',
  'gpu.shares': 'GPU shares'
};

export function slotLabel(slot: string): string {
  return SLOT_LABELS[slot] ?? slot;
}
