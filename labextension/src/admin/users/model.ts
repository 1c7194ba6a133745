/**
 * The Users page's pure parts: the search's query string, the edit form's
 * PATCH body and membership changes, the bulk add's per-row results.
 */

import { nameList, withQuery } from '../query';

export interface IUser {
  name: string;
  domain: string;
  role: string;
  active: boolean;
  resource_policy: string | null;
  projects: string[];
  created_at?: string;
}

export interface IKeypair {
  access_key: string;
  user: string;
  domain: string;
  resource_policy: string | null;
  active: boolean;
  expires_at: string | null;
  last_used_at: string | null;
  created_at: string | null;
  secret_key?: string;
}

export interface IUserFilters {
  q: string;
  role: string; // '' = any
  domain: string; // '' = any
  active: string; // '' | 'true' | 'false'
}

export const NO_FILTERS: IUserFilters = { q: '', role: '', domain: '', active: '' };

/** `users?q=&role=&domain=&active=` (empty filters left out). */
export function usersPath(f: IUserFilters): string {
  return withQuery('users', [
    ['q', f.q],
    ['role', f.role],
    ['domain', f.domain],
    ['active', f.active]
  ]);
}

/** The edit form of a user (strings, as the inputs hold them). */
export interface IUserDraft {
  role: string;
  domain: string;
  resource_policy: string; // '' = none chosen
  projects: string; // "a; b"
  active: boolean;
}

export function userDraft(u: IUser): IUserDraft {
  return {
    role: u.role,
    domain: u.domain,
    resource_policy: u.resource_policy || '',
    projects: u.projects.join('; '),
    active: u.active
  };
}

/** The PATCH users/{name} body: only what changed (null when nothing did). */
export function userPatch(u: IUser, d: IUserDraft): { [k: string]: unknown } | null {
  const body: { [k: string]: unknown } = {};
  if (d.role !== u.role) {
    body.role = d.role;
  }
  if (d.domain.trim() !== u.domain) {
    body.domain = d.domain.trim();
  }
  if (d.resource_policy.trim() && d.resource_policy.trim() !== (u.resource_policy || '')) {
    body.resource_policy = d.resource_policy.trim();
  }
  if (d.active !== u.active) {
    body.active = d.active;
  }
  return Object.keys(body).length ? body : null;
}

/** The project memberships to add and to remove (each one PUT / DELETE). */
export function membershipChanges(u: IUser, d: IUserDraft): { add: string[]; remove: string[] } {
  const want = new Set(nameList(d.projects));
  const have = new Set(u.projects);
  return {
    add: [...want].filter(p => !have.has(p)).sort(),
    remove: [...have].filter(p => !want.has(p)).sort()
  };
}

/** The POST users body of the create form. */
export function userCreateBody(name: string, domain: string, role: string): { [k: string]: unknown } {
  return { name: name.trim(), domain: domain.trim(), role };
}

// --- bulk add --------------------------------------------------------------

export interface IBulkRow {
  row: number;
  name: string;
  result: 'created' | 'refused';
  status?: number;
  reason?: string;
  user?: IUser;
}

export interface IBulkAnswer {
  created: number;
  refused: number;
  results: IBulkRow[];
}

/** One line of the per-row result table. */
export interface IBulkLine {
  row: number;
  name: string;
  result: 'created' | 'refused';
  /** "acme, user, projects ml" for a created row; "404: no domain x" for a refused one. */
  text: string;
}

/** The per-row table of a bulk answer, in row order, and its one-line summary. */
export function bulkLines(answer: IBulkAnswer): { summary: string; lines: IBulkLine[] } {
  const lines = [...answer.results]
    .sort((a, b) => a.row - b.row)
    .map(r => {
      let text: string;
      if (r.result === 'created' && r.user) {
        const u = r.user;
        text = [u.domain, u.role, u.projects.length ? `projects ${u.projects.join(', ')}` : '', u.resource_policy ? `policy ${u.resource_policy}` : '']
          .filter(Boolean)
          .join(', ');
      } else if (r.result === 'created') {
        text = 'created';
      } else {
        text = `${r.status ?? ''}${r.status ? ': ' : ''}${r.reason ?? 'refused'}`;
      }
      return { row: r.row, name: r.name, result: r.result, text };
    });
  const summary = `${answer.created} created, ${answer.refused} refused`;
  return { summary, lines };
}

/** The keypair form's POST keypairs body. */
export function keypairBody(user: string, policy: string, expires: string): { [k: string]: unknown } {
  const body: { [k: string]: unknown } = { user };
  if (policy.trim()) {
    body.resource_policy = policy.trim();
  }
  if (expires.trim()) {
    body.expires_at = expires.trim();
  }
  return body;
}

/** The roles a user may have. */
export const ROLES = ['user', 'domain-admin', 'superadmin'];
