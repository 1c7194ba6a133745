/**
 * A resource group's settings form and grants: the PATCH body of the
 * scheduler policy and pending timeout (only what changed; an empty timeout
 * clears it), a grant's label and the PUT/DELETE body from the form.
 */

import { IAdminGroup, IGrant } from './types';

export interface IGroupForm {
  queueOrder: string;
  /** seconds, or '' for none */
  pendingTimeout: string;
}

export function groupForm(g: IAdminGroup): IGroupForm {
  return {
    queueOrder: g.queue_order,
    pendingTimeout: g.pending_timeout === null || g.pending_timeout === undefined ? '' : String(g.pending_timeout)
  };
}

/** The PATCH resource-groups/{g} body (throws on a timeout that is not whole seconds). */
export function groupChange(g: IAdminGroup, form: IGroupForm): { [k: string]: unknown } {
  const before = groupForm(g);
  const change: { [k: string]: unknown } = {};
  if (form.queueOrder !== before.queueOrder) {
    change.queue_order = form.queueOrder;
  }
  const t = form.pendingTimeout.trim();
  if (t !== before.pendingTimeout) {
    if (t === '') {
      change.clear = ['pending_timeout'];
    } else if (/^\d+$/.test(t)) {
      change.pending_timeout = Number(t);
    } else {
      throw new Error(`pending timeout: whole seconds, or empty for none (not "${t}")`);
    }
  }
  return change;
}

export type GrantKind = 'domain' | 'project' | 'user';

export function grantLabel(g: IGrant): string {
  if (g.domain) {
    return `domain ${g.domain}`;
  }
  if (g.project) {
    return `project ${g.project}`;
  }
  return `user ${g.user ?? ''}`;
}

/** The grant body; a project is "domain/project". Throws on an empty or malformed name. */
export function grantBody(kind: GrantKind, name: string): IGrant {
  const n = name.trim();
  if (!n) {
    throw new Error(`name the ${kind} to grant`);
  }
  if (kind === 'project' && !/^[^/]+\/[^/]+$/.test(n)) {
    throw new Error(`a project is named domain/project, not "${n}"`);
  }
  return { [kind]: n } as IGrant;
}
