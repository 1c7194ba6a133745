/**
 * The UI's words for states and steps, in one place: every page names the
 * same state the same way (the Sessions panel, the session's detail view,
 * the admin Sessions, Queue and Scheduler pages). These labels are stable:
 * the CLI maps its own words onto them, tests and users read them.
 */

/** an allocation's state (the API's word) for people */
export const STATE_LABELS: { readonly [state: string]: string } = {
  allocated: 'running',
  pending: 'waiting',
  released: 'ended',
  cancelled: 'cancelled'
};

/** while the hub starts or stops a session's server */
export const STARTING = 'starting';
export const STOPPING = 'stopping';

/** The label of an allocation state; an unknown state shows as it is. */
export function stateLabel(state: string): string {
  return STATE_LABELS[state] ?? state;
}

/** a step of a session's history (GET allocations/{id}/history's `event`) for people */
export const HISTORY_LABELS: { readonly [event: string]: string } = {
  requested: 'asked for',
  queued: 'queued',
  admitted: 'admitted',
  warned: 'warned',
  kept: 'kept',
  'would-reclaim': 'would be reclaimed',
  reclaimed: 'reclaimed',
  logged: 'access log',
  cancelled: 'cancelled',
  stopped: 'stopped',
  ended: 'ended'
};

export function historyLabel(event: string): string {
  return HISTORY_LABELS[event] ?? event;
}

/** a session type (the API's word) for the Sessions panel's tabs */
export const SESSION_TYPES: ReadonlyArray<{ type: string; label: string }> = [
  { type: 'interactive', label: 'Interactive' },
  { type: 'batch', label: 'Batch' }
];

/** A count with its noun, singular for one: '1 user', '3 users', '0 users'. */
export function counted(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}
