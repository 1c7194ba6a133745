/**
 * The Summary menu as data (pure: no IO, no DOM): my limits and use at every
 * level that binds me (my resource policy or my keypair's, each project, my
 * domain) as bars per slot; my running and pending sessions; for each
 * resource group I may use, its free capacity and which share of each GPU
 * is taken. Mirrors `compose_quota` of the Python client (amounts.py).
 */

import { compareAmounts, subtractAmounts, sumAmounts } from '../amounts';
import { formatSlot, percentOf, slotLabel } from './exact';
import {
  IAllocation,
  IKeypairModel,
  IMeModel,
  IPolicyModel,
  SlotMap
} from './types';

/** the slots shown out of the box, in this order (always, even at 0) */
export const SLOTS = ['cpu', 'mem', 'gpu', 'gpu.shares'];
/** a device limit counts the devices held whole or shared */
const DEVICE_SHARES: { [slot: string]: string } = { gpu: 'gpu.shares' };
const ADMIN_ROLES = ['domain-admin', 'superadmin'];
const ACTIVE = ['allocated', 'pending'];

/** One slot at one level: a bar. */
export interface IBar {
  slot: string;
  label: string;
  /** null: unlimited */
  limit: string | null;
  used: string;
  /** what my pending sessions ask for on top */
  pending: string;
  /** null: unlimited */
  free: string | null;
  /** width of the used part, whole percent 0..100 (0 when unlimited) */
  usedPercent: number;
  /** width of the pending part after it */
  pendingPercent: number;
  /** used is over the limit (a limit lowered under running sessions) */
  over: boolean;
  /** "0.9 / 1.5", "512 MiB / 8 GiB", "0.9 (unlimited)" */
  text: string;
}

export interface ILevel {
  level: 'keypair' | 'user' | 'project' | 'domain';
  name: string;
  /** where the limits come from, for people */
  source: string;
  /** false: use counts only my sessions (others' are not visible to me) */
  complete: boolean;
  bars: IBar[];
  sessions: { limit: number | null; running: number; pending: number };
}

function sumSlots(allocations: IAllocation[], state: string): SlotMap {
  const parts: { [slot: string]: string[] } = {};
  for (const a of allocations) {
    if (a.state !== state) {
      continue;
    }
    for (const [slot, amount] of Object.entries(a.slots ?? {})) {
      (parts[slot] = parts[slot] ?? []).push(String(amount));
    }
  }
  const out: SlotMap = {};
  for (const [slot, list] of Object.entries(parts)) {
    out[slot] = sumAmounts(list);
  }
  return out;
}

function held(sums: SlotMap, slot: string): string {
  const amounts = [sums[slot] ?? '0'];
  if (DEVICE_SHARES[slot]) {
    amounts.push(sums[DEVICE_SHARES[slot]] ?? '0');
  }
  return sumAmounts(amounts);
}

/** One bar from a limit (null: unlimited) and what is used and pending. */
export function makeBar(
  slot: string,
  limit: string | null,
  used: string,
  pending: string
): IBar {
  const show = (v: string | null) => formatSlot(slot, v);
  if (limit === null) {
    return {
      slot,
      label: slotLabel(slot),
      limit,
      used,
      pending,
      free: null,
      usedPercent: 0,
      pendingPercent: 0,
      over: false,
      text: `${show(used)} (unlimited)`
    };
  }
  const usedPercent = percentOf(used, limit);
  const pendingPercent = Math.min(
    100 - usedPercent,
    percentOf(sumAmounts([used, pending]), limit) - usedPercent
  );
  const over = compareAmounts(used, limit) > 0;
  return {
    slot,
    label: slotLabel(slot),
    limit,
    used,
    pending,
    free: over ? '0' : subtractAmounts(limit, used),
    usedPercent,
    pendingPercent: Math.max(0, pendingPercent),
    over,
    text: `${show(used)} / ${show(limit)}`
  };
}

function slotNames(...maps: SlotMap[]): string[] {
  const extra = new Set<string>();
  for (const m of maps) {
    Object.keys(m).forEach(k => SLOTS.includes(k) || extra.add(k));
  }
  return [...SLOTS, ...[...extra].sort()];
}

export function makeLevel(
  level: ILevel['level'],
  name: string,
  limits: SlotMap,
  allocations: IAllocation[],
  options: {
    complete: boolean;
    source: string;
    unspecifiedLimited?: boolean;
    maxSessions?: number | null;
  }
): ILevel {
  const used = sumSlots(allocations, 'allocated');
  const pending = sumSlots(allocations, 'pending');
  const bars = slotNames(limits, used, pending).map(slot => {
    let limit: string | null = limits[slot] ?? null;
    if (limit === null && options.unspecifiedLimited) {
      limit = '0';
    }
    return makeBar(slot, limit, held(used, slot), held(pending, slot));
  });
  return {
    level,
    name,
    source: options.source,
    complete: options.complete,
    bars,
    sessions: {
      limit: options.maxSessions ?? null,
      running: allocations.filter(a => a.state === 'allocated').length,
      pending: allocations.filter(a => a.state === 'pending').length
    }
  };
}

/**
 * The keypair this Lab calls with, when it calls with one: the service does
 * not name it in `GET me`, but it has just marked it used, so it is my
 * keypair used last.
 */
export function keypairInUse(
  me: IMeModel,
  keypairs: IKeypairModel[]
): IKeypairModel | null {
  if (me.credential !== 'keypair' || keypairs.length === 0) {
    return null;
  }
  const used = keypairs.filter(k => k.active && k.last_used_at);
  used.sort((a, b) => (a.last_used_at! < b.last_used_at! ? 1 : -1));
  return used[0] ?? null;
}

/** The policy that binds me: my keypair's when it names one, else my user's. */
export function bindingPolicy(
  me: IMeModel,
  policies: IPolicyModel[],
  keypair: IKeypairModel | null
): { policy: IPolicyModel | null; via: 'keypair' | 'user' } {
  const fromKeypair = keypair?.resource_policy;
  const name = fromKeypair || me.resource_policy;
  const policy = policies.find(p => p.name === name) ?? null;
  return { policy, via: fromKeypair ? 'keypair' : 'user' };
}

/**
 * My limits and use at every level that binds me, from `GET me`, the
 * resource policy that binds me and the allocations I can see (admins see
 * their domain's; a user sees only theirs, so a project's and a domain's
 * use then count only mine: `complete` false).
 */
export function composeLevels(
  me: IMeModel,
  policy: IPolicyModel | null,
  allocations: IAllocation[],
  via: 'keypair' | 'user' = 'user'
): ILevel[] {
  const sees = ADMIN_ROLES.includes(me.role);
  const active = allocations.filter(a => ACTIVE.includes(a.state));
  const mine = active.filter(a => a.user === me.name);
  const levels: ILevel[] = [
    makeLevel(via, me.name, policy?.total_resource_slots ?? {}, mine, {
      complete: true,
      source: policy
        ? `${via === 'keypair' ? 'keypair' : 'resource'} policy ${policy.name}`
        : 'no resource policy',
      unspecifiedLimited: !!policy?.unspecified_limited,
      maxSessions: policy?.max_concurrent_sessions ?? null
    })
  ];
  for (const p of me.projects ?? []) {
    const of = active.filter(
      a => a.domain === p.domain && a.project === p.name
    );
    levels.push(
      makeLevel('project', p.name, p.total_resource_slots ?? {}, of, {
        complete: sees,
        source: `project ${p.domain}/${p.name}`,
        maxSessions: p.max_concurrent_sessions ?? null
      })
    );
  }
  levels.push(
    makeLevel(
      'domain',
      me.domain,
      me.domain_detail?.total_resource_slots ?? {},
      active.filter(a => a.domain === me.domain),
      { complete: sees, source: `domain ${me.domain}` }
    )
  );
  return levels;
}

/** My running and pending sessions. */
export function sessionCounts(
  me: { name: string },
  allocations: IAllocation[]
): { running: number; pending: number } {
  const mine = allocations.filter(a => a.user === me.name);
  return {
    running: mine.filter(a => a.state === 'allocated').length,
    pending: mine.filter(a => a.state === 'pending').length
  };
}

export * from './capacity';
