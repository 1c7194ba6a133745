/**
 * Who may see what on the Statistics page, and the `GET usage` request
 * for it: "my usage" for everyone; a domain admin also their domain's, a
 * superadmin also everyone's (the service narrows to what the caller may
 * read anyway: authz.usage_scope).
 */

import { IPeriod } from './period';
import { Grouping } from './types';

/** Whose usage: mine, my domain's, everyone's. */
export type Scope = 'mine' | 'domain' | 'all';

/** The caller as `GET me` names them. */
export interface ICaller {
  name: string;
  domain: string;
  role: string;
}

export interface IUsageQuery {
  period: IPeriod;
  scope: Scope;
  by: Grouping;
}

export const GROUPING_LABELS: { [by in Grouping]: string } = {
  user: 'User',
  project: 'Project',
  resource_group: 'Resource group',
  domain: 'Domain'
};

/** The key fields of a group, as the service sends them (api: KEY_FIELDS). */
export const KEY_FIELDS: { [by in Grouping]: ReadonlyArray<'domain' | 'user' | 'project' | 'resource_group'> } = {
  user: ['domain', 'user'],
  project: ['domain', 'project'],
  domain: ['domain'],
  resource_group: ['resource_group']
};

export function isSuperadmin(role: string): boolean {
  return role === 'superadmin';
}

/** Domain admins and superadmins see more than their own usage. */
export function isAdmin(role: string): boolean {
  return role === 'domain-admin' || isSuperadmin(role);
}

/** The scopes a caller may pick, with their labels (names as plain text). */
export function scopesFor(me: ICaller): Array<{ scope: Scope; label: string }> {
  const scopes: Array<{ scope: Scope; label: string }> = [{ scope: 'mine', label: 'My usage' }];
  if (isAdmin(me.role)) {
    scopes.push({ scope: 'domain', label: `Domain ${me.domain}` });
  }
  if (isSuperadmin(me.role)) {
    scopes.push({ scope: 'all', label: 'Everyone' });
  }
  return scopes;
}

/** The groupings a caller may pick: by domain for admins only. */
export function groupingsFor(me: ICaller): Grouping[] {
  const by: Grouping[] = ['user', 'project', 'resource_group'];
  return isAdmin(me.role) ? [...by, 'domain'] : by;
}

/** A scope the caller may pick (anything else reads as "mine"). */
export function allowedScope(me: ICaller, scope: Scope): Scope {
  return scopesFor(me).some(s => s.scope === scope) ? scope : 'mine';
}

/**
 * The API path (under the hubgrid API) of the report: its period, grouping,
 * a daily series, the scope as a filter, and `format=csv` for the download.
 */
export function usagePath(me: ICaller, q: IUsageQuery, format: 'json' | 'csv' = 'json'): string {
  const params = new URLSearchParams({
    start: q.period.start,
    end: q.period.end,
    by: q.by,
    series: 'daily'
  });
  const scope = allowedScope(me, q.scope);
  if (scope === 'mine') {
    params.set('user', me.name);
  } else if (scope === 'domain') {
    params.set('domain', me.domain);
  }
  if (format === 'csv') {
    params.set('format', 'csv');
  }
  return `usage?${params.toString()}`;
}

/** The CSV's file name as the service names it (used when no header says). */
export function csvFallbackName(q: IUsageQuery): string {
  return `usage-${q.by}-${q.period.start}-${q.period.end}.csv`;
}

