/**
 * The folder table of the Data menu, as data: which folders are mine, my
 * projects' or shared with me, what I may do with each, and each owner's
 * use against their storage quota (docs/vfolders.md, "Quotas").
 */

import { formatBytes } from './format';
import {
  IDataMe,
  IFolder,
  IFolderOwner,
  IStoragePolicy,
  Permission
} from './types';

export type FolderKind = 'mine' | 'project' | 'shared';

const KIND_ORDER: FolderKind[] = ['mine', 'project', 'shared'];

export const PERMISSION_LABELS: Record<Permission, string> = {
  ro: 'read only',
  rw: 'read & write (no delete)',
  wd: 'write-delete: read, write, delete, rename & manage the folder'
};

/** The permission column's legend (its header's tooltip): every code and what it allows. */
export const PERMISSION_LEGEND = (Object.keys(PERMISSION_LABELS) as Permission[])
  .map(p => `${p}: ${PERMISSION_LABELS[p]}`)
  .join('\n');

const ADMIN_ROLES = ['domain-admin', 'superadmin'];

/** The quota owner of a folder: `user:NAME` or `project:DOMAIN/NAME`. */
export function ownerKey(owner: IFolderOwner): string {
  return owner.kind === 'user'
    ? `user:${owner.user}`
    : `project:${owner.domain}/${owner.project}`;
}

export function folderKind(folder: IFolder, me: IDataMe): FolderKind {
  const o = folder.owner;
  if (o.kind === 'project') {
    return 'project';
  }
  return o.user === me.name && o.domain === me.domain ? 'mine' : 'shared';
}

export function typeLabel(folder: IFolder, me: IDataMe): string {
  switch (folderKind(folder, me)) {
    case 'mine':
      return 'mine';
    case 'project':
      return `project ${folder.owner.project}`;
    default:
      return `shared by ${folder.owner.user}`;
  }
}

/** One owner's folders against their limits (null: unlimited). */
export interface IStorageUse {
  key: string;
  /** `my folders` or `project NAME` */
  label: string;
  folders: number;
  maxFolders: number | null;
  bytes: number;
  maxBytes: number | null;
  /**
   * False when the counts may miss folders I cannot see (a project's
   * trashed folders are shown only to those holding wd on them).
   */
  complete: boolean;
}

/**
 * My storage use and limits, per owner that binds me: my own folders (my
 * resource policy's max_vfolder_count and max_vfolder_size) and each of my
 * projects (the project's). Trashed folders count until purged, as the
 * service counts them: pass the folders of `GET vfolders?status=all`.
 * `policy`: my resource policy (null when it cannot be read: no limits shown).
 */
export function storageUse(
  folders: IFolder[],
  me: IDataMe,
  policy: IStoragePolicy | null
): Map<string, IStorageUse> {
  const out = new Map<string, IStorageUse>();
  const mine: IStorageUse = {
    key: `user:${me.name}`,
    label: 'my folders',
    folders: 0,
    maxFolders: policy?.max_vfolder_count ?? null,
    bytes: 0,
    maxBytes: policy?.max_vfolder_size ?? null,
    complete: true
  };
  out.set(mine.key, mine);
  const admin = ADMIN_ROLES.includes(me.role);
  for (const p of me.projects) {
    const key = `project:${p.domain}/${p.name}`;
    out.set(key, {
      key,
      label: `project ${p.name}`,
      folders: 0,
      maxFolders: p.max_vfolder_count ?? null,
      bytes: 0,
      maxBytes: p.max_vfolder_size ?? null,
      complete: admin
    });
  }
  for (const f of folders) {
    const use = out.get(ownerKey(f.owner));
    if (use === undefined) {
      continue; // someone else's folder shared with me: not my quota
    }
    use.folders += 1;
    use.bytes += f.usage_bytes ?? 0;
  }
  return out;
}

/**
 * How full: used / limit in [0, 1] (past the limit shows full); null when
 * unlimited. A limit of 0 reads as full, so a slot with limit 0 stays visible.
 */
export function fillFraction(used: number, limit: number | null): number | null {
  if (limit === null) {
    return null;
  }
  if (limit <= 0) {
    return 1;
  }
  return Math.min(1, Math.max(0, used / limit));
}

/** `1 folder`, `3 folders`, `1 of 5 folders`, `1 of 1 folder`: the noun agrees with the last number. */
export function foldersText(count: number, limit: number | null): string {
  const last = limit === null ? count : limit;
  return `${limit === null ? count : `${count} of ${limit}`} folder${last === 1 ? '' : 's'}`;
}

/** `40 MiB of 1 GiB` or `40 MiB (no limit)`. */
export function useText(used: number, limit: number | null): string {
  return limit === null
    ? `${formatBytes(used)} (no limit)`
    : `${formatBytes(used)} of ${formatBytes(limit)}`;
}

export interface IFolderRow {
  id: string;
  name: string;
  host: string;
  kind: FolderKind;
  typeLabel: string;
  permission: Permission;
  permissionLabel: string;
  status: 'active' | 'trashed';
  autoMount: boolean;
  usageMode: string;
  usageBytes: number | null;
  usageText: string;
  /** the owner's use against their quota; null for folders shared with me */
  quota: IStorageUse | null;
  /** the bar: the owner's total bytes against their size limit */
  fill: number | null;
  /** rename, trash, restore, purge, invite, see shares */
  canManage: boolean;
  /** upload, new folder */
  canWrite: boolean;
  /** a user folder I hold wd on: it can be shared by invitation */
  canInvite: boolean;
}

export function folderRow(
  folder: IFolder,
  me: IDataMe,
  use: Map<string, IStorageUse>
): IFolderRow {
  const quota = use.get(ownerKey(folder.owner)) ?? null;
  const canManage = folder.permission === 'wd';
  return {
    id: folder.id,
    name: folder.name,
    host: folder.host,
    kind: folderKind(folder, me),
    typeLabel: typeLabel(folder, me),
    permission: folder.permission,
    permissionLabel: PERMISSION_LABELS[folder.permission] ?? folder.permission,
    status: folder.status,
    autoMount: folder.auto_mount,
    usageMode: folder.usage_mode,
    usageBytes: folder.usage_bytes,
    usageText: formatBytes(folder.usage_bytes),
    quota,
    fill: quota ? fillFraction(quota.bytes, quota.maxBytes) : null,
    canManage,
    canWrite: folder.permission === 'rw' || canManage,
    canInvite: canManage && folder.owner.kind === 'user'
  };
}

export type SortKey = 'name' | 'type' | 'host' | 'permission' | 'usage';

const PERMISSION_ORDER: Permission[] = ['ro', 'rw', 'wd'];

function compare(a: IFolderRow, b: IFolderRow, key: SortKey): number {
  switch (key) {
    case 'type':
      return (
        KIND_ORDER.indexOf(a.kind) - KIND_ORDER.indexOf(b.kind) ||
        a.typeLabel.localeCompare(b.typeLabel)
      );
    case 'host':
      return a.host.localeCompare(b.host);
    case 'permission':
      return (
        PERMISSION_ORDER.indexOf(a.permission) -
        PERMISSION_ORDER.indexOf(b.permission)
      );
    case 'usage':
      return (a.usageBytes ?? -1) - (b.usageBytes ?? -1);
    default:
      return 0;
  }
}

/** Rows sorted by `key` (ties: by name, then id, so the order is stable). */
export function sortRows(
  rows: IFolderRow[],
  key: SortKey = 'type',
  ascending = true
): IFolderRow[] {
  const sign = ascending ? 1 : -1;
  return [...rows].sort(
    (a, b) =>
      sign * compare(a, b, key) ||
      sign * a.name.localeCompare(b.name) ||
      a.id.localeCompare(b.id)
  );
}

/**
 * The table: the folders of one status (`active` or the trash), with my
 * quota use, sorted. Trashed folders appear only where I hold wd (the
 * service shows no others).
 */
export function folderTable(
  folders: IFolder[],
  me: IDataMe,
  policy: IStoragePolicy | null,
  status: 'active' | 'trashed',
  key: SortKey = 'type',
  ascending = true
): IFolderRow[] {
  const use = storageUse(folders, me, policy);
  const rows = folders
    .filter(f => f.status === status)
    .map(f => folderRow(f, me, use));
  return sortRows(rows, key, ascending);
}
