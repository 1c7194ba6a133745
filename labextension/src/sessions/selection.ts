/**
 * The Sessions panel's tabs (interactive, batch) and its selection: which
 * sessions a tab shows, which selected ones one "Stop selected" stops, the
 * one question it asks, and stopping them one after another (pure, but
 * for the stop function it is given).
 */

import { IAllocation } from '../summary/types';
import { ACTIVE, sessionRow } from './model';

/** The sessions of one type ("interactive" or "batch"). */
export function ofType(all: IAllocation[], type: string): IAllocation[] {
  return all.filter(a => (a.session_type || 'interactive') === type);
}

/** How many active sessions each type has: a tab's count. */
export function activeCounts(all: IAllocation[]): { [type: string]: number } {
  const out: { [type: string]: number } = {};
  for (const a of all) {
    if (ACTIVE.includes(a.state)) {
      const type = a.session_type || 'interactive';
      out[type] = (out[type] ?? 0) + 1;
    }
  }
  return out;
}

/** `selected` with `id` added, or taken out when it was there (a new set). */
export function toggle(selected: ReadonlySet<string>, id: string): Set<string> {
  const next = new Set(selected);
  if (next.has(id)) {
    next.delete(id);
  } else {
    next.add(id);
  }
  return next;
}

/** The selected sessions that can still be stopped (running or waiting), in the list's order. */
export function stopTargets(all: IAllocation[], selected: ReadonlySet<string>): IAllocation[] {
  return all.filter(a => selected.has(a.id) && ACTIVE.includes(a.state));
}

/** The one question before stopping them: a title and the names. */
export function stopQuestion(targets: IAllocation[], now: number): { title: string; body: string } {
  const names = targets.map(a => sessionRow(a, now).name);
  const waiting = targets.filter(a => a.state === 'pending').length;
  const running = targets.length - waiting;
  const parts: string[] = [];
  if (running) {
    parts.push(`stop ${running} running`);
  }
  if (waiting) {
    parts.push(`cancel ${waiting} waiting`);
  }
  const what = targets.length === 1 ? 'session' : 'sessions';
  return {
    title: `${parts.join(' and ').replace(/^./, c => c.toUpperCase())} ${what}?`,
    body: `${names.join(', ')}. Their processes end; files in their folders stay.`
  };
}

export interface IStopReport {
  stopped: string[];
  failed: Array<{ id: string; name: string; message: string }>;
}

/** Stop each target (one call each, as its own Stop button would), all of them even when some fail. */
export async function stopEach(
  targets: IAllocation[],
  stop: (a: IAllocation) => Promise<void>,
  now: number
): Promise<IStopReport> {
  const report: IStopReport = { stopped: [], failed: [] };
  for (const a of targets) {
    try {
      await stop(a);
      report.stopped.push(a.id);
    } catch (e) {
      report.failed.push({ id: a.id, name: sessionRow(a, now).name, message: (e as Error).message });
    }
  }
  return report;
}

/**
 * One tab's ended sessions: `count` says how many of this type were read
 * ("12+" when the service holds ended sessions not read yet, of whichever
 * type), `more` whether "Show more" may find more. `serverTotal` is how many
 * ended sessions of mine the service has, of every type.
 */
export function endedOfTab(
  mine: IAllocation[],
  type: string,
  shown: IAllocation[],
  serverTotal: number
): { count: string; more: boolean } {
  const endedRead = mine.filter(a => !ACTIVE.includes(a.state));
  const unread = serverTotal > endedRead.length;
  const ofThis = ofType(endedRead, type).length;
  return { count: `${ofThis}${unread ? '+' : ''}`, more: unread || ofThis > shown.length };
}
