/**
 * The hubgrid API calls of the Data menu, through this Jupyter server's
 * forwarder (`requestAPI`): folders, their files, invitations and shares.
 */

import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import { downloadTicket, followDownload } from '../download';
import { API_NAMESPACE, requestAPI } from '../request';
import { encodePath } from './paths';
import {
  IDataMe,
  IFileListing,
  IFolder,
  IHost,
  IInvitation,
  IShare,
  IStoragePolicy,
  Permission
} from './types';

type Settings = ServerConnection.ISettings;

const q = encodeURIComponent;

function json(method: string, body?: unknown): RequestInit {
  return body === undefined
    ? { method }
    : { method, body: JSON.stringify(body) };
}

export function getMe(s: Settings): Promise<IDataMe> {
  return requestAPI<IDataMe>('me', s);
}

/** My resource policy (its storage limits), or null when I cannot read it. */
export async function getPolicy(
  s: Settings,
  name: string | null
): Promise<IStoragePolicy | null> {
  if (!name) {
    return null;
  }
  try {
    const all = await requestAPI<IStoragePolicy[]>('resource-policies', s);
    return all.find(p => p.name === name) ?? null;
  } catch {
    return null;
  }
}

/** Every folder I see, active and trashed (trashed: where I hold wd). */
export function listFolders(s: Settings): Promise<IFolder[]> {
  return requestAPI<IFolder[]>('vfolders?status=all', s);
}

export function listHosts(s: Settings): Promise<IHost[]> {
  return requestAPI<IHost[]>('vfolder-hosts', s);
}

export interface INewFolder {
  name: string;
  host?: string;
  usage_mode?: 'general' | 'data' | 'model';
  project?: string;
  permission?: Permission;
}

export function createFolder(s: Settings, body: INewFolder): Promise<IFolder> {
  return requestAPI<IFolder>('vfolders', s, json('POST', body));
}

export function renameFolder(
  s: Settings,
  id: string,
  name: string
): Promise<IFolder> {
  return requestAPI<IFolder>(`vfolders/${q(id)}`, s, json('PATCH', { name }));
}

/** To the trash (its files stay; no longer mounted into new sessions). */
export function trashFolder(s: Settings, id: string): Promise<void> {
  return requestAPI<void>(`vfolders/${q(id)}`, s, json('DELETE'));
}

export function restoreFolder(s: Settings, id: string): Promise<IFolder> {
  return requestAPI<IFolder>(`vfolders/${q(id)}/restore`, s, json('POST'));
}

/** Delete a trashed folder and its files for good. */
export function purgeFolder(s: Settings, id: string): Promise<void> {
  return requestAPI<void>(`vfolders/${q(id)}/purge`, s, json('POST'));
}

// --- files ----------------------------------------------------------------

export function listFiles(
  s: Settings,
  id: string,
  path: string
): Promise<IFileListing> {
  return requestAPI<IFileListing>(
    `vfolders/${q(id)}/files?path=${encodePath(path)}`,
    s
  );
}

export function makeDirectory(
  s: Settings,
  id: string,
  path: string
): Promise<unknown> {
  return requestAPI(`vfolders/${q(id)}/mkdir`, s, json('POST', { path }));
}

export function moveEntry(
  s: Settings,
  id: string,
  src: string,
  dst: string
): Promise<unknown> {
  return requestAPI(
    `vfolders/${q(id)}/move`,
    s,
    json('POST', { src, dst, overwrite: false })
  );
}

export function deleteEntry(
  s: Settings,
  id: string,
  path: string,
  recursive: boolean
): Promise<void> {
  const r = recursive ? '&recursive=true' : '';
  return requestAPI<void>(
    `vfolders/${q(id)}/files?path=${encodePath(path)}${r}`,
    s,
    json('DELETE')
  );
}

/**
 * Download one file: a one-use ticket from this server, then the browser
 * follows its link (the service sends Content-Disposition). No token goes
 * in the URL, whether the page logged in by cookie or by token.
 */
export async function downloadFile(s: Settings, id: string, path: string, name: string): Promise<void> {
  followDownload(await downloadTicket(s, id, path), name);
}

/** The folder's tus endpoint (resumable uploads). */
export function tusEndpoint(s: Settings, id: string): string {
  return URLExt.join(s.baseUrl, API_NAMESPACE, 'vfolders', q(id), 'tus');
}

// --- invitations and shares ----------------------------------------------------

export function invite(
  s: Settings,
  id: string,
  user: string,
  permission: Permission
): Promise<IInvitation> {
  return requestAPI<IInvitation>(
    `vfolders/${q(id)}/invitations`,
    s,
    json('POST', { user, permission })
  );
}

export function listInvitations(
  s: Settings,
  direction: 'received' | 'sent'
): Promise<IInvitation[]> {
  return requestAPI<IInvitation[]>(`invitations?direction=${direction}`, s);
}

/** The invitations waiting for my answer only (the quick check for new ones). */
export function listWaitingInvitations(s: Settings): Promise<IInvitation[]> {
  return requestAPI<IInvitation[]>('invitations?direction=received&state=pending', s);
}

export function acceptInvitation(s: Settings, id: string): Promise<IInvitation> {
  return requestAPI<IInvitation>(`invitations/${q(id)}/accept`, s, json('POST'));
}

export function declineInvitation(s: Settings, id: string): Promise<IInvitation> {
  return requestAPI<IInvitation>(`invitations/${q(id)}/reject`, s, json('POST'));
}

/** Revoke an invitation not yet answered (its inviter, or an admin). */
export function cancelInvitation(s: Settings, id: string): Promise<void> {
  return requestAPI<void>(`invitations/${q(id)}`, s, json('DELETE'));
}

export function listShares(s: Settings, id: string): Promise<IShare[]> {
  return requestAPI<IShare[]>(`vfolders/${q(id)}/shares`, s);
}

/** Revoke a share (wd), or leave a folder shared with me. */
export function revokeShare(s: Settings, id: string, user: string): Promise<void> {
  return requestAPI<void>(`vfolders/${q(id)}/shares/${q(user)}`, s, json('DELETE'));
}
