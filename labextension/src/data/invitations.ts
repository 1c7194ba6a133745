/**
 * Invitations as the Data menu shows them: what waits for me, what I sent;
 * and the quick check for new ones (a cheap read of the invitations waiting
 * for me every `CHECK_INTERVAL` while the page is visible: a new one shows
 * within seconds, while the Data menu's full read backs off to minutes).
 */

import { IInvitation } from './types';

/** Invitations waiting for my answer (pending, addressed to me). */
export function waitingForMe(
  invitations: IInvitation[],
  me: string
): IInvitation[] {
  return invitations.filter(i => i.state === 'pending' && i.invitee === me);
}

/** The badge on the Data tab: '' for none, the count, '9+' past nine. */
export function badgeText(count: number): string {
  if (count <= 0) {
    return '';
  }
  return count > 9 ? '9+' : String(count);
}

export interface IInvitationGroups {
  /** pending, to me: accept or decline */
  received: IInvitation[];
  /** pending, from me: revoke */
  sent: IInvitation[];
  /** answered or canceled, newest first */
  history: IInvitation[];
}

function newestFirst(a: IInvitation, b: IInvitation): number {
  const at = a.updated_at ?? a.created_at ?? '';
  const bt = b.updated_at ?? b.created_at ?? '';
  return bt.localeCompare(at) || a.id.localeCompare(b.id);
}

/**
 * Received and sent invitations (the answers of `GET invitations` and
 * `GET invitations?direction=sent`; an invitation in both lists, sent to
 * myself, is counted once), grouped for the view.
 */
export function groupInvitations(
  received: IInvitation[],
  sent: IInvitation[],
  me: string
): IInvitationGroups {
  const seen = new Set<string>();
  const all: IInvitation[] = [];
  for (const i of [...received, ...sent]) {
    if (!seen.has(i.id)) {
      seen.add(i.id);
      all.push(i);
    }
  }
  const pending = all.filter(i => i.state === 'pending');
  return {
    received: pending
      .filter(i => i.invitee === me)
      .sort((a, b) => a.folder_name.localeCompare(b.folder_name)),
    sent: pending
      .filter(i => i.inviter === me && i.invitee !== me)
      .sort(
        (a, b) =>
          a.folder_name.localeCompare(b.folder_name) ||
          a.invitee.localeCompare(b.invitee)
      ),
    history: all.filter(i => i.state !== 'pending').sort(newestFirst)
  };
}

/** How often the invitations waiting for me are checked while the page is visible (ms). */
export const CHECK_INTERVAL = 10 * 1000;

/**
 * What the quick check compares: the ids of the invitations waiting for
 * me, in order. A different key than the last full read's: read everything.
 */
export function waitingKey(invitations: IInvitation[], me: string): string {
  return waitingForMe(invitations, me)
    .map(i => i.id)
    .sort()
    .join(' ');
}
