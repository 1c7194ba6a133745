/**
 * A node's per-device GPU map as data: for each GPU its taken and free
 * share, which session holds which share (user/server, project; its id in a title) and
 * the share of sessions the caller may not see (`others`: a domain admin
 * reads it as "other domains"). From GET nodes/{node}/sessions.
 */

import { compareAmounts, subtractAmounts } from '../../amounts';
import { ISharesLine, memoryCap, sharesLine } from '../../gpushares';
import { percentOf } from '../../summary/exact';
import { barLevel, BarLevel } from './bars';
import { IAdminNode } from './types';

export interface IGpuHolderRow {
  allocation: string;
  /** "alice/lab1 (acme/ml)": the session (sessionName) and its project */
  who: string;
  share: string;
  /** false: the "other domains" row (a share summed over sessions not shown) */
  visible: boolean;
  /** "memory cap 40 GiB" of a share ('' unknown, a whole GPU, others) */
  cap: string;
}

export interface IGpuCellModel {
  index: number;
  model: string;
  taken: string;
  free: string;
  percent: number;
  level: BarLevel;
  holders: IGpuHolderRow[];
}

export const OTHERS_LABEL = 'other domains';

export function shortId(id: string): string {
  return id.slice(0, 8);
}

/**
 * A session as the admin tables name it: its owner and server,
 * "alice/lab1", "alice/(default)" for a default server, or "alice/3f2a9c1b"
 * (its short id) for a session started through the API. The full id goes
 * in the cell's title.
 */
export function sessionName(s: { id?: string; user?: string; server_name?: string; origin?: string }): string {
  const server = s.server_name || (s.origin === 'hub' ? '(default)' : shortId(s.id ?? ''));
  return `${s.user ?? '?'}/${server}`;
}

export function gpuMap(node: IAdminNode): IGpuCellModel[] {
  return [...(node.devices ?? [])]
    .sort((a, b) => a.index - b.index)
    .map(d => {
      const taken = String(d.taken ?? '0');
      const holders: IGpuHolderRow[] = (d.holders ?? []).map(h => ({
        allocation: h.allocation,
        who: `${sessionName({ ...h, id: h.allocation })} (${h.domain}/${h.project})`,
        share: String(h.share),
        visible: true,
        cap: String(h.share) === '1' ? '' : memoryCap(h.memory)
      }));
      const others = String(d.others ?? '0');
      if (compareAmounts(others, '0') > 0) {
        holders.push({ allocation: '', who: OTHERS_LABEL, share: others, visible: false, cap: '' });
      }
      return {
        index: d.index,
        model: d.model,
        taken,
        free:
          d.free !== undefined
            ? String(d.free)
            : compareAmounts(taken, '1') >= 0
              ? '0'
              : subtractAmounts('1', taken),
        percent: percentOf(taken, '1'),
        level: barLevel(taken, '1'),
        holders
      };
    });
}

/** "empty now", "in 2 h 5 min (at ...)", or why it is not known. */
export function untilEmptyText(u: IAdminNode['until_empty']): string {
  if (!u) {
    return '';
  }
  if (u.sessions === 0 || u.seconds === 0) {
    return 'empty now';
  }
  if (u.seconds === null) {
    return `not known: ${u.unlimited} of ${u.sessions} session(s) have no lifetime limit`;
  }
  return `in ${durationText(u.seconds)}${u.at ? ` (at ${u.at})` : ''}, ${u.sessions} session(s)`;
}

export function durationText(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  const d = Math.floor(s / 86400);
  const h = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  const parts: string[] = [];
  if (d) {
    parts.push(`${d} d`);
  }
  if (h) {
    parts.push(`${h} h`);
  }
  if (m || parts.length === 0) {
    parts.push(m ? `${m} min` : `${s % 60} s`);
  }
  return parts.join(' ');
}

/** How a node with GPUs enforces shares (null: no GPUs, or the service does not say). */
export function nodeShares(node: IAdminNode): ISharesLine | null {
  return node.devices?.length ? sharesLine(node.shares) : null;
}
