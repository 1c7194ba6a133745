/**
 * "This session" in the Data panel: the folders mounted in the session this
 * Lab runs in, and "Mount in this session" for the others, without a
 * restart (the service's `allocations/<id>/mounts`; the spawner mounts a
 * folder within seconds at `live_folders/NAME`). Pure rows here; the calls
 * below.
 */

import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import { requestAPI } from '../request';
import { IFolder } from './types';

/** Which session this Lab's server is (its spawner's environment). */
export interface IThisSession {
  /** its allocation id; '' outside a hubgrid session */
  allocation: string;
  /** where folders mounted while it runs appear; '' when it cannot have any */
  live_folders: string;
}

export interface ISessionMount {
  folder: string;
  name: string;
  mode: 'ro' | 'rw';
  /** mounted while the session ran (else: at its start) */
  live?: boolean;
}

export interface ISessionMounts {
  /** folders can be mounted into it now */
  live_mounts: boolean;
  mounts: ISessionMount[];
}

export interface ISessionRow {
  folder: string;
  name: string;
  /** where it is in this session ('' when it is not mounted) */
  path: string;
  mode: 'ro' | 'rw' | null;
  /** it can be mounted now */
  mountable: boolean;
}

/**
 * One row per folder mounted in the session (by name), then one per active
 * folder I see that is not mounted (mountable when the session can take
 * live mounts and no mounted folder has its name). `home`: where folders
 * mounted at the start are (the spawner's mount root).
 */
export function sessionRows(
  folders: IFolder[],
  state: ISessionMounts,
  live: string,
  home: string
): ISessionRow[] {
  const join = (dir: string, name: string) => `${dir.replace(/\/+$/, '')}/${name}`;
  const mounted = [...state.mounts].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const rows: ISessionRow[] = mounted.map(m => ({
    folder: m.folder,
    name: m.name,
    path: join(m.live ? live : home, m.name),
    mode: m.mode,
    mountable: false
  }));
  const ids = new Set(mounted.map(m => m.folder));
  const names = new Set(mounted.map(m => m.name));
  const others = folders
    .filter(f => f.status === 'active' && !ids.has(f.id))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.id < b.id ? -1 : 1));
  for (const f of others) {
    rows.push({
      folder: f.id,
      name: f.name,
      path: '',
      mode: null,
      mountable: state.live_mounts && live !== '' && !names.has(f.name)
    });
  }
  return rows;
}

export async function getThisSession(s: ServerConnection.ISettings): Promise<IThisSession> {
  const r = await ServerConnection.makeRequest(URLExt.join(s.baseUrl, 'hubgrid/this-session'), {}, s);
  if (!r.ok) {
    return { allocation: '', live_folders: '' };
  }
  return (await r.json()) as IThisSession;
}

export function getSessionMounts(s: ServerConnection.ISettings, allocation: string): Promise<ISessionMounts> {
  return requestAPI<ISessionMounts>(`allocations/${encodeURIComponent(allocation)}/mounts`, s);
}

export function mountNow(s: ServerConnection.ISettings, allocation: string, folder: string): Promise<ISessionMount> {
  return requestAPI<ISessionMount>(`allocations/${encodeURIComponent(allocation)}/mounts`, s, {
    method: 'POST',
    body: JSON.stringify({ folder })
  });
}
