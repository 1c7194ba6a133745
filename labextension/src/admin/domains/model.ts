/**
 * The Domains and projects page's pure parts: a level's bars per slot from
 * `GET domains/{d}/totals` (exact amounts: makeBar, src/amounts.ts), which
 * resource groups a domain may use (from the groups' grants), the create
 * project body.
 */

import { IBar, makeBar } from '../../summary/model';
import { parseMap } from '../policies/form';
import { nameList } from '../query';

export type Slots = { [slot: string]: string };

export interface IFigures {
  limits: Slots;
  used: Slots;
  sessions: number;
  pending: Slots;
  pending_sessions: number;
}

export interface IProjectTotals extends IFigures {
  name: string;
  active: boolean;
  max_concurrent_sessions: number | null;
  members: number;
  max_vfolder_count: number | null;
  max_vfolder_size: number | null;
  allowed_vfolder_hosts: string[];
}

export interface IDomainTotals extends IFigures {
  domain: string;
  active: boolean;
  users: number;
  allowed_vfolder_hosts: string[];
  projects: IProjectTotals[];
}

export interface IGroup {
  name: string;
  active: boolean;
  grants?: Array<{ domain?: string; project?: string; user?: string }>;
}

const ORDER = ['cpu', 'mem', 'gpu', 'gpu.shares'];

/** The slots a level names (its limits, its use): known ones first, then by name. */
export function slotsOf(f: IFigures): string[] {
  const all = new Set([...Object.keys(f.limits || {}), ...Object.keys(f.used || {}), ...Object.keys(f.pending || {})]);
  const known = ORDER.filter(s => all.has(s));
  const others = [...all].filter(s => !ORDER.includes(s)).sort();
  return [...known, ...others];
}

/** One exact bar per slot: used and pending against the limit (none: unlimited). */
export function totalsBars(f: IFigures): IBar[] {
  return slotsOf(f).map(slot =>
    makeBar(slot, f.limits?.[slot] ?? null, f.used?.[slot] ?? '0', f.pending?.[slot] ?? '0')
  );
}

/** what a domain admin is told of a group whose grants only a superadmin reads */
export const GRANTED_HERE = 'a grant to this domain, one of its projects or users';

/**
 * The groups granted to the domain, to one of its projects, or to a named user.
 * A domain admin's listing carries no grants: every group it holds is one
 * granted to their domain, a project or a user of it, and reads so.
 */
export function groupsFor(groups: IGroup[], domain: string): Array<{ group: string; via: string }> {
  const out: Array<{ group: string; via: string }> = [];
  for (const g of groups) {
    if (g.grants === undefined) {
      out.push({ group: g.name, via: GRANTED_HERE });
      continue;
    }
    for (const grant of g.grants) {
      if (grant.domain === domain) {
        out.push({ group: g.name, via: 'the domain' });
      } else if (grant.project && grant.project.startsWith(`${domain}/`)) {
        out.push({ group: g.name, via: `project ${grant.project.slice(domain.length + 1)}` });
      }
    }
  }
  return out;
}

/** The create project form's values. */
export interface IProjectDraft {
  name: string;
  description: string;
  total_resource_slots: string;
  max_concurrent_sessions: string;
  max_vfolder_count: string;
  allowed_vfolder_hosts: string;
}

export const EMPTY_PROJECT: IProjectDraft = {
  name: '',
  description: '',
  total_resource_slots: '',
  max_concurrent_sessions: '',
  max_vfolder_count: '',
  allowed_vfolder_hosts: ''
};

/** POST domains/{d}/projects body (empty fields left out) or a field's problem. */
export function projectBody(d: IProjectDraft): { body: { [k: string]: unknown }; errors: { [f: string]: string } } {
  const body: { [k: string]: unknown } = { name: d.name.trim() };
  const errors: { [f: string]: string } = {};
  if (d.description.trim()) {
    body.description = d.description.trim();
  }
  if (d.total_resource_slots.trim()) {
    const m = parseMap(d.total_resource_slots);
    if (m.error) {
      errors.total_resource_slots = `total_resource_slots: ${m.error}`;
    } else {
      body.total_resource_slots = m.value;
    }
  }
  for (const k of ['max_concurrent_sessions', 'max_vfolder_count'] as const) {
    const t = d[k].trim();
    if (t) {
      body[k] = /^\d+$/.test(t) ? Number(t) : t;
    }
  }
  if (d.allowed_vfolder_hosts.trim()) {
    body.allowed_vfolder_hosts = nameList(d.allowed_vfolder_hosts);
  }
  return { body, errors };
}

/**
 * The groups a superadmin may still grant to the domain itself (those whose
 * grants, read, name it not), by name; none when the grants are not read.
 */
export function grantable(groups: IGroup[], domain: string): string[] {
  return groups
    .filter(g => g.grants !== undefined && !g.grants.some(x => x.domain === domain))
    .map(g => g.name)
    .sort();
}
