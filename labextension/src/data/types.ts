/**
 * What the hubgrid API answers about folders, files and invitations
 * (docs/vfolders.md). Every string here may come from a user: render it as
 * text only.
 */

/** ro: read; rw: also make new names; wd: also delete, move, replace, manage. */
export type Permission = 'ro' | 'rw' | 'wd';

export interface IFolderOwner {
  kind: 'user' | 'project';
  user?: string;
  project?: string;
  domain: string;
}

export interface IFolder {
  id: string;
  name: string;
  host: string;
  owner: IFolderOwner;
  usage_mode: 'general' | 'data' | 'model';
  /** the caller's permission */
  permission: Permission;
  /** what a project's members get (project folders) */
  project_permission: Permission | null;
  status: 'active' | 'trashed';
  auto_mount: boolean;
  usage_bytes: number | null;
  usage_measured_at: string | null;
  created_at: string | null;
  trashed_at: string | null;
}

export type InvitationState = 'pending' | 'accepted' | 'rejected' | 'canceled';

export interface IInvitation {
  id: string;
  folder: string;
  folder_name: string;
  owner: IFolderOwner;
  inviter: string;
  invitee: string;
  permission: Permission;
  state: InvitationState;
  created_at: string | null;
  updated_at: string | null;
}

export interface IShare {
  user: string;
  permission: Permission;
  created_at: string | null;
}

export interface IHost {
  name: string;
  capabilities: string[];
}

export interface IFileEntry {
  name: string;
  type: 'file' | 'dir' | 'symlink' | 'other';
  size: number | null;
  mtime: string;
}

/** `GET vfolders/{id}/files?path=`: a directory (with entries) or one file. */
export interface IFileListing extends IFileEntry {
  path: string;
  entries?: IFileEntry[];
}

export interface IProjectRef {
  name: string;
  domain: string;
  max_vfolder_count?: number | null;
  max_vfolder_size?: number | null;
}

/** The parts of `GET me` the Data menu reads. */
export interface IDataMe {
  name: string;
  domain: string;
  role: string;
  resource_policy: string | null;
  projects: IProjectRef[];
}

/** The storage fields of a resource policy. */
export interface IStoragePolicy {
  name: string;
  max_vfolder_count?: number | null;
  max_vfolder_size?: number | null;
}
