/**
 * Resource groups as data (pure): each group's capacity, what is taken and
 * what is free, and the per-device GPU map (which share of each GPU is
 * taken, and which of it by my sessions). Built from `GET resource-groups`,
 * `GET nodes` (capacity, devices, and what every session holds: `used`, each
 * device's `taken`) and the allocations I can see (their node and `gpus`:
 * [{index, share}]), which name my own sessions on the map.
 */

import { compareAmounts, subtractAmounts, sumAmounts } from '../amounts';
import { ISharesLine, memoryCap, sharesLine } from '../gpushares';
import { formatSlot, percentOf } from './exact';
import { IAllocation, IGroupModel, INodeModel } from './types';

export interface IGpuHolder {
  /** the session's name (server name) or its short id */
  session: string;
  share: string;
  mine: boolean;
  /** "memory cap 40 GiB" ('' unknown or a whole GPU) */
  cap: string;
}

export interface IGpuCell {
  index: number;
  model: string;
  /** the share of this device taken ("0.9"), exact */
  taken: string;
  free: string;
  takenPercent: number;
  holders: IGpuHolder[];
}

export interface ISlotCapacity {
  slot: string;
  capacity: string;
  used: string;
  free: string;
  usedPercent: number;
  text: string;
}

export interface INodeView {
  name: string;
  schedulable: boolean;
  slots: ISlotCapacity[];
  gpus: IGpuCell[];
  /** how it enforces GPU shares; null when the service does not say */
  shares: ISharesLine | null;
}

export interface IGroupView {
  name: string;
  description: string;
  active: boolean;
  sessionTypes: string[];
  /** free and taken over the group's schedulable nodes */
  slots: ISlotCapacity[];
  /** whole GPUs with nothing taken, and the free share over all of them */
  gpusIdle: number;
  gpuSharesFree: string;
  gpuCount: number;
  nodes: INodeView[];
  /** false: only my sessions' use is counted (others' are not shown to me) */
  complete: boolean;
}

function slotCapacity(slot: string, capacity: string, used: string): ISlotCapacity {
  const free =
    compareAmounts(used, capacity) >= 0 ? '0' : subtractAmounts(capacity, used);
  return {
    slot,
    capacity,
    used,
    free,
    usedPercent: percentOf(used, capacity),
    text: `${formatSlot(slot, free)} free of ${formatSlot(slot, capacity)}`
  };
}

function flat<T>(lists: T[][]): T[] {
  return ([] as T[]).concat(...lists);
}

function sessionName(a: IAllocation): string {
  return a.server_name || a.id.slice(0, 8);
}

/** One node: cpu/mem taken and free, and each GPU's taken share. */
export function nodeView(
  node: INodeModel,
  running: IAllocation[],
  me: string
): INodeView {
  const here = running.filter(
    a => a.node === node.name && a.resource_group === node.resource_group
  );
  const slots = ['cpu', 'mem']
    .filter(slot => node.capacity?.[slot] !== undefined)
    .map(slot =>
      slotCapacity(
        slot,
        String(node.capacity[slot]),
        node.used !== undefined
          ? String(node.used[slot] ?? '0')
          : sumAmounts(here.map(a => String(a.slots?.[slot] ?? '0')))
      )
    );
  const gpus = [...(node.devices ?? [])]
    .sort((x, y) => x.index - y.index)
    .map(device => {
      const holders: IGpuHolder[] = [];
      for (const a of here) {
        for (const g of a.gpus ?? []) {
          if (g.index === device.index) {
            holders.push({
              session: sessionName(a),
              share: String(g.share),
              mine: a.user === me,
              cap: String(g.share) === '1' ? '' : memoryCap(g.memory)
            });
          }
        }
      }
      const taken =
        device.taken !== undefined
          ? String(device.taken)
          : sumAmounts(holders.map(h => h.share));
      return {
        index: device.index,
        model: device.model,
        taken,
        free: compareAmounts(taken, '1') >= 0 ? '0' : subtractAmounts('1', taken),
        takenPercent: percentOf(taken, '1'),
        holders
      };
    });
  return {
    name: node.name, schedulable: node.schedulable, slots, gpus,
    shares: node.devices?.length ? sharesLine(node.shares) : null
  };
}

/**
 * Each resource group I may use, with its nodes. `complete`: the caller
 * sees every session of the group (an admin); else only theirs count.
 */
export function groupViews(
  groups: IGroupModel[],
  nodes: INodeModel[],
  allocations: IAllocation[],
  me: string,
  complete: boolean
): IGroupView[] {
  const running = allocations.filter(a => a.state === 'allocated');
  return groups.map(group => {
    const views = nodes
      .filter(n => n.resource_group === group.name)
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .map(n => nodeView(n, running, me));
    const usable = views.filter(v => v.schedulable);
    const slots = ['cpu', 'mem'].map(slot => {
      const of = flat(usable.map(v => v.slots.filter(s => s.slot === slot)));
      return slotCapacity(
        slot,
        sumAmounts(of.map(s => s.capacity)),
        sumAmounts(of.map(s => s.used))
      );
    });
    const cells = flat(usable.map(v => v.gpus));
    const ofGroup = nodes.filter(n => n.resource_group === group.name);
    // the service counts every session's use on its nodes: complete for anyone
    const counted = ofGroup.length > 0 && ofGroup.every(n => n.used !== undefined);
    return {
      name: group.name,
      description: group.description ?? '',
      active: group.active,
      sessionTypes: group.session_types ?? [],
      slots,
      gpusIdle: cells.filter(c => compareAmounts(c.taken, '0') === 0).length,
      gpuSharesFree: sumAmounts(cells.map(c => c.free)),
      gpuCount: cells.length,
      nodes: views,
      complete: complete || counted
    };
  });
}
