/**
 * What a live page keeps when its data is read again (pure): an edit the
 * admin has begun (a form, a priority being typed), a chosen move target
 * while it is still in the queue, and each node's GPU holders and sessions
 * until their next read. Which nodes a poll reads again: those whose
 * figures in GET nodes changed, and those never read.
 */

import { IAdminNode } from './types';

function same<T>(a: T, b: T): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * A form's value after a read: the admin's edit when they changed it from
 * `before` (what the form was filled from), else the new answer `after`.
 */
export function keepEdit<T>(current: T, before: T, after: T): T {
  return same(current, before) ? after : current;
}

/** A chosen move target, or '' when it has left the queue. */
export function keepTarget(target: string, targets: Array<{ id: string }>): string {
  return target && targets.some(t => t.id === target) ? target : '';
}

/** The nodes' details (GET nodes/{n}/sessions) of the nodes still listed. */
export function keepDetails(details: Record<string, IAdminNode>, listed: IAdminNode[]): Record<string, IAdminNode> {
  const out: Record<string, IAdminNode> = {};
  for (const n of listed) {
    if (details[n.name]) {
      out[n.name] = details[n.name];
    }
  }
  return out;
}

/** What GET nodes says of a node that its details depend on. */
function figures(n: IAdminNode): unknown {
  return [n.used ?? {}, n.schedulable, (n.devices ?? []).map(d => [d.index, d.taken ?? '0'])];
}

/**
 * The nodes to read again: every listed node when `all` (a Refresh, another
 * group), else those without details yet and those whose use, GPU shares
 * taken or schedulable flag changed since the previous listing.
 */
export function nodesToRead(
  previous: IAdminNode[],
  listed: IAdminNode[],
  details: Record<string, IAdminNode>,
  all: boolean
): string[] {
  const before = new Map(previous.map(n => [n.name, n]));
  return listed
    .filter(n => {
      if (all || !details[n.name]) {
        return true;
      }
      const old = before.get(n.name);
      return old === undefined || !same(figures(old), figures(n));
    })
    .map(n => n.name);
}

/** keepEdit for each field of a flat form. */
export function keepForm<T extends object>(current: T, before: T, after: T): T {
  const out = { ...after };
  for (const key of Object.keys(after) as Array<keyof T>) {
    out[key] = keepEdit(current[key], before[key], after[key]);
  }
  return out;
}

/** how many nodes' details one read asks for (GET node-sessions takes up to 200) */
export const NODES_PER_READ = 50;

/** `names` in reads of at most `size`, in order. */
export function inChunks(names: string[], size: number): string[][] {
  const out: string[][] = [];
  for (let i = 0; i < names.length; i += size) {
    out.push(names.slice(i, i + size));
  }
  return out;
}
