/**
 * A node's slots as exact bars: what every session holds against the
 * node's capacity, for CPU, memory and GPUs (whole devices and shares
 * together: the sum of each device's taken share). A bar warns above 80 %
 * and is full at 100 %; the test is exact (used x 5 > capacity x 4), never
 * a rounded percentage.
 */

import { compareAmounts, subtractAmounts, sumAmounts } from '../../amounts';
import { formatSlot, percentOf } from '../../summary/exact';
import { IAdminNode } from './types';

export type BarLevel = 'ok' | 'warn' | 'full';

export interface INodeBar {
  slot: string;
  label: string;
  used: string;
  capacity: string;
  free: string;
  /** whole percent for the bar's width (rounded down, 0..100) */
  percent: number;
  level: BarLevel;
  /** "1.5 of 4 used, 2.5 free" */
  text: string;
}

function times(value: string, n: number): string {
  return sumAmounts(Array(n).fill(value));
}

/** 'full' at or above capacity, 'warn' above 80 % of it, else 'ok'. */
export function barLevel(used: string, capacity: string): BarLevel {
  if (compareAmounts(capacity, '0') <= 0) {
    return compareAmounts(used, '0') > 0 ? 'full' : 'ok';
  }
  if (compareAmounts(used, capacity) >= 0) {
    return 'full';
  }
  return compareAmounts(times(used, 5), times(capacity, 4)) > 0 ? 'warn' : 'ok';
}

export function makeBar(slot: string, label: string, used: string, capacity: string): INodeBar {
  const free = compareAmounts(used, capacity) >= 0 ? '0' : subtractAmounts(capacity, used);
  return {
    slot,
    label,
    used,
    capacity,
    free,
    percent: percentOf(used, capacity),
    level: barLevel(used, capacity),
    text: `${formatSlot(slot, used)} of ${formatSlot(slot, capacity)} used, ${formatSlot(slot, free)} free`
  };
}

/** The GPUs taken on a node: the exact sum of each device's taken share. */
export function gpuTaken(node: IAdminNode): string {
  return sumAmounts((node.devices ?? []).map(d => String(d.taken ?? '0')));
}

/** CPU and memory (as the node declares them) and GPUs (when it has any). */
export function nodeBars(node: IAdminNode): INodeBar[] {
  const bars: INodeBar[] = [];
  for (const [slot, label] of [
    ['cpu', 'CPU'],
    ['mem', 'Memory']
  ]) {
    const capacity = node.capacity?.[slot];
    if (capacity !== undefined && capacity !== null) {
      bars.push(makeBar(slot, label, String(node.used?.[slot] ?? '0'), String(capacity)));
    }
  }
  const devices = node.devices ?? [];
  if (devices.length > 0) {
    bars.push(makeBar('gpu', 'GPU', gpuTaken(node), String(devices.length)));
  }
  return bars;
}
