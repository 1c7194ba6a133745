/**
 * Live admin pages: `useLivePoll` runs a page's quiet refresh on a
 * @lumino/polling Poll while the page is shown (its tab current and Lab's
 * browser tab visible; standby otherwise), backing off on errors up to
 * LIVE_MAX and back to the interval after a success. The page's first read
 * is its own (useAdminLoad): the poll's first tick waits one interval.
 */

import { Poll } from '@lumino/polling';
import * as React from 'react';

/** The longest wait after failures (ms). */
export const LIVE_MAX = 60_000;

/** Whether `el` is on screen: attached, and neither it nor a parent hidden (display: none). */
export function isShown(el: Element | null): boolean {
  return el !== null && el.isConnected && el.getClientRects().length > 0;
}

/**
 * Call `refresh` every `interval` ms while the element of `ref` is shown.
 * `refresh` rejects on failure (the poll backs off); the newest `refresh`
 * given is the one called.
 */
export function useLivePoll(
  name: string,
  ref: React.RefObject<Element>,
  refresh: () => Promise<unknown>,
  interval: number
): void {
  const latest = React.useRef(refresh);
  latest.current = refresh;
  React.useEffect(() => {
    const poll = new Poll({
      name,
      // the 'started' tick would read again at once: the page has just read
      factory: state => (state.phase === 'started' ? Promise.resolve() : latest.current().then(() => undefined)),
      frequency: { interval, backoff: true, max: LIVE_MAX },
      standby: () => document.hidden || !isShown(ref.current)
    });
    return () => poll.dispose();
  }, [name, interval]);
}
