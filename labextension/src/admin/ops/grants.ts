/** Resource-group grants: a label for people and the PUT/DELETE body from the form. */

import { IGrant } from './types';

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
