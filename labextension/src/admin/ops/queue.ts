/**
 * A resource group's pending queue as rows, and the change requests the
 * Scheduler page sends (PATCH resource-groups/{g}/queue/{id}): a priority,
 * or one place (the front, before or after another request). Other
 * domains' requests a domain admin may not see stay anonymous positions.
 */

import { formatSlot, slotLabel } from '../../summary/exact';
import { sessionName } from './gpumap';
import { IQueue, IQueueEntry, SlotMap } from './types';

export interface IMoveRequest {
  priority?: number;
  position?: number;
  before?: string;
  after?: string;
}

export type MoveKind = 'front' | 'before' | 'after';

/** The PATCH body of a move; `target` is the other request's id. */
export function moveRequest(kind: MoveKind, self: string, target?: string): IMoveRequest {
  if (kind === 'front') {
    return { position: 0 };
  }
  if (!target) {
    throw new Error(`choose the request to move ${kind}`);
  }
  if (target === self) {
    throw new Error(`a request cannot move ${kind} itself`);
  }
  return kind === 'before' ? { before: target } : { after: target };
}

/** The PATCH body of a priority change: an integer 0..100, else an Error. */
export function priorityRequest(text: string): IMoveRequest {
  const t = text.trim();
  if (!/^\d{1,3}$/.test(t) || Number(t) > 100) {
    throw new Error(`priority must be a whole number from 0 to 100, not "${text}"`);
  }
  return { priority: Number(t) };
}

export interface IQueueRow {
  position: number;
  visible: boolean;
  id: string;
  /** "alice/lab1 (acme/ml)" (the session, sessionName) or "another domain's request" */
  who: string;
  slots: string;
  priority: string;
  waits: string;
  reasons: string[];
  created: string;
}

export const HIDDEN_LABEL = "another domain's request";

export function slotsText(slots: SlotMap | undefined): string {
  return Object.entries(slots ?? {})
    .map(([slot, value]) => `${slotLabel(slot)} ${formatSlot(slot, String(value))}`)
    .join(', ');
}

function waitsText(e: IQueueEntry): string {
  if (e.waits_for === 'capacity') {
    return e.holds_line ? 'capacity (holds the line)' : 'capacity';
  }
  if (e.waits_for === 'limits') {
    return 'its limits';
  }
  return 'next pass';
}

export function queueRows(queue: IQueue): IQueueRow[] {
  return [...queue.entries]
    .sort((a, b) => a.position - b.position)
    .map(e =>
      e.visible
        ? {
            position: e.position,
            visible: true,
            id: e.id ?? '',
            who: `${sessionName(e)} (${e.domain}/${e.project})`,
            slots: slotsText(e.slots),
            priority: String(e.priority ?? 0),
            waits: `${waitsText(e)}, ${e.passes ?? 0} pass(es)`,
            reasons: (e.reasons ?? []).map(r => r.text),
            created: e.created_at ?? ''
          }
        : {
            position: e.position,
            visible: false,
            id: '',
            who: HIDDEN_LABEL,
            slots: '',
            priority: '',
            waits: '',
            reasons: [],
            created: ''
          }
    );
}

/** The requests a row may move before/after: every other visible one. */
export function moveTargets(rows: IQueueRow[], self: string): IQueueRow[] {
  return rows.filter(r => r.visible && r.id !== self);
}

/** "3 pending (1 of other domains), fifo" */
export function queueSummary(queue: IQueue): string {
  const hidden = queue.hidden ? ` (${queue.hidden} of other domains)` : '';
  const timeout =
    queue.pending_timeout === null ? 'no pending timeout' : `pending timeout ${queue.pending_timeout} s`;
  return `${queue.pending} pending${hidden}; order ${queue.queue_order}; ${timeout}`;
}
