/**
 * How often the Data menu asks the service while nothing changes: every
 * BASE ms after a change, doubling while the answers stay the same, up to
 * MAX. (Hidden tabs do not ask at all: the poll's standby.)
 */

export const BASE_INTERVAL = 15 * 1000;
export const MAX_INTERVAL = 5 * 60 * 1000;

export function nextInterval(
  current: number,
  changed: boolean,
  base: number = BASE_INTERVAL,
  max: number = MAX_INTERVAL
): number {
  if (changed) {
    return base;
  }
  return Math.min(max, Math.max(base, current * 2));
}

/**
 * A key that changes when anything shown changes: the answers as JSON
 * (ids, names, states, usage). Equal keys: nothing to redraw.
 */
export function answerKey(...answers: unknown[]): string {
  return JSON.stringify(answers);
}
