/**
 * The Sessions (all) page's pure parts: the filters as the query string of
 * GET allocations (`state`, `user`: what the service narrows) and the rest
 * (domain, project, resource group, node) applied to its answer; a row per
 * session.
 */

import { slotsText } from './queue';
import { IAllocation } from './types';

export interface ISessionFilters {
  state: string;
  user: string;
  domain: string;
  project: string;
  group: string;
  node: string;
}

export const NO_FILTERS: ISessionFilters = {
  state: 'allocated',
  user: '',
  domain: '',
  project: '',
  group: '',
  node: ''
};

/** `state` ('' or 'all': every state) and `user`, as GET allocations takes them. */
/** the states whose sessions are all read; the others: the ENDED_LIMIT that began or ended last */
const ACTIVE_STATES = ['allocated', 'pending'];
export const ENDED_LIMIT = 500;

export function sessionsQuery(f: ISessionFilters): string {
  const q = new URLSearchParams();
  if (f.state && f.state !== 'all') {
    q.set('state', f.state);
  }
  if (f.user.trim()) {
    q.set('user', f.user.trim());
  }
  if (!ACTIVE_STATES.includes(f.state)) {
    q.set('limit', String(ENDED_LIMIT)); // a cluster's history is long: the latest only
  }
  return q.toString();
}

function matches(value: string | null | undefined, wanted: string): boolean {
  const w = wanted.trim();
  return !w || (value ?? '') === w;
}

export function filterSessions(list: IAllocation[], f: ISessionFilters): IAllocation[] {
  return list.filter(
    a =>
      matches(a.domain, f.domain) &&
      matches(a.project, f.project) &&
      matches(a.resource_group, f.group) &&
      matches(a.node, f.node)
  );
}

export interface ISessionRow {
  id: string;
  name: string;
  owner: string;
  project: string;
  group: string;
  node: string;
  state: string;
  resources: string;
  gpus: string;
  started: string;
  /** hub sessions end by stopping their server; the service refuses a release (409) */
  origin: string;
}

export function sessionRow(a: IAllocation): ISessionRow {
  return {
    id: a.id,
    name: a.server_name || a.id.slice(0, 8),
    owner: a.user,
    project: `${a.domain}/${a.project}`,
    group: a.resource_group,
    node: a.node ?? '',
    state: a.state,
    resources: slotsText(a.slots),
    gpus: (a.gpus ?? []).map(g => `#${g.index}: ${g.share}`).join(', '),
    started: a.admitted_at ?? a.created_at ?? '',
    origin: a.origin
  };
}
