/** Folders, invitations and callers as the service answers them (for data-*.spec.ts). */

import { IDataMe, IFolder, IInvitation, Permission } from '../data/types';

let next = 0;

export function userFolder(
  name: string,
  user: string,
  permission: Permission,
  extra: Partial<IFolder> = {}
): IFolder {
  next += 1;
  return {
    id: extra.id ?? `f${next}`,
    name,
    host: 'local',
    owner: { kind: 'user', user, domain: 'acme' },
    usage_mode: 'general',
    permission,
    project_permission: null,
    status: 'active',
    auto_mount: name.startsWith('.'),
    usage_bytes: 0,
    usage_measured_at: null,
    created_at: '2026-11-20T10:00:00+00:00',
    trashed_at: null,
    ...extra
  };
}

export function projectFolder(
  name: string,
  project: string,
  membersGet: Permission,
  extra: Partial<IFolder> = {}
): IFolder {
  return userFolder(name, '', extra.permission ?? membersGet, {
    owner: { kind: 'project', project, domain: 'acme' },
    project_permission: membersGet,
    ...extra
  });
}

export const alice: IDataMe = {
  name: 'alice',
  domain: 'acme',
  role: 'user',
  resource_policy: 'default',
  projects: [
    { name: 'ml', domain: 'acme', max_vfolder_count: 3, max_vfolder_size: 1000 },
    { name: 'web', domain: 'acme', max_vfolder_count: null, max_vfolder_size: null }
  ]
};

export function invitation(
  id: string,
  inviter: string,
  invitee: string,
  state: IInvitation['state'] = 'pending',
  extra: Partial<IInvitation> = {}
): IInvitation {
  return {
    id,
    folder: `folder-of-${id}`,
    folder_name: `data-${id}`,
    owner: { kind: 'user', user: inviter, domain: 'acme' },
    inviter,
    invitee,
    permission: 'ro',
    state,
    created_at: '2026-11-20T10:00:00+00:00',
    updated_at: '2026-11-20T10:00:00+00:00',
    ...extra
  };
}
