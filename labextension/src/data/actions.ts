/**
 * What the Data menu's buttons do: ask (dialogs), call the service, show
 * its refusal as it words it, then refresh the model.
 */

import { Notification, showErrorMessage } from '@jupyterlab/apputils';

import * as api from './api';
import { askForm, confirm, IField } from './dialogs';
import { IFolderRow, PERMISSION_LABELS } from './folders';
import { DataModel } from './model';
import { nameProblem } from './paths';
import { IInvitation } from './types';

/** Run `call`; on failure show the service's message under `title`. */
export async function attempt<T>(
  title: string,
  call: () => Promise<T>
): Promise<T | undefined> {
  try {
    return await call();
  } catch (reason) {
    await showErrorMessage(title, reason as Error);
    return undefined;
  }
}

const ADMIN_ROLES = ['domain-admin', 'superadmin'];

export async function newFolder(model: DataModel): Promise<void> {
  const { me, hosts } = model.state;
  if (!me) {
    return;
  }
  const fields: IField[] = [
    {
      name: 'name',
      label: 'Name',
      placeholder: 'a leading . mounts it into every session'
    },
    {
      name: 'host',
      label: 'Storage host',
      options: hosts.length
        ? hosts.map(h => ({ value: h.name, label: h.name }))
        : [{ value: '', label: 'default' }]
    },
    {
      name: 'usage_mode',
      label: 'Type',
      options: ['general', 'data', 'model'].map(v => ({ value: v, label: v }))
    }
  ];
  if (ADMIN_ROLES.includes(me.role) && me.projects.length > 0) {
    // domain admins make project folders
    const owners = [{ value: '', label: 'me' }].concat(
      me.projects.map(p => ({
        value: `${p.domain}/${p.name}`,
        label: `project ${p.name}`
      }))
    );
    fields.push(
      { name: 'owner', label: 'Owner', options: owners },
      {
        name: 'permission',
        label: "Members' permission (project folders)",
        options: (['rw', 'ro', 'wd'] as const).map(v => ({ value: v, label: `${v}: ${PERMISSION_LABELS[v]}` }))
      }
    );
  }
  const values = await askForm('New folder', fields, 'Create');
  if (!values) {
    return;
  }
  const problem = nameProblem(values.name);
  if (problem) {
    await showErrorMessage('New folder', problem);
    return;
  }
  const body: api.INewFolder = {
    name: values.name,
    usage_mode: values.usage_mode as api.INewFolder['usage_mode']
  };
  if (values.host) {
    body.host = values.host;
  }
  if (values.owner) {
    body.project = values.owner;
    body.permission = values.permission as api.INewFolder['permission'];
  }
  if (await attempt('Folder not created', () => api.createFolder(model.settings, body))) {
    await model.refresh();
  }
}

export async function renameFolder(model: DataModel, row: IFolderRow): Promise<void> {
  const values = await askForm(
    'Rename folder',
    [{ name: 'name', label: 'New name', value: row.name }],
    'Rename',
    'Sessions already running keep it under its old name until they end.'
  );
  if (!values || values.name === row.name) {
    return;
  }
  const problem = nameProblem(values.name);
  if (problem) {
    await showErrorMessage('Rename folder', problem);
    return;
  }
  if (await attempt('Folder not renamed', () => api.renameFolder(model.settings, row.id, values.name))) {
    await model.refresh();
  }
}

export async function trashFolder(model: DataModel, row: IFolderRow): Promise<void> {
  const ok = await confirm(
    'Move to the trash',
    `Move ${row.name} to the trash? Its files stay until it is deleted; ` +
      'new sessions no longer mount it.',
    'Move to trash'
  );
  if (ok) {
    await attempt('Folder not trashed', () => api.trashFolder(model.settings, row.id));
    await model.refresh();
  }
}

export async function restoreFolder(model: DataModel, row: IFolderRow): Promise<void> {
  await attempt('Folder not restored', () => api.restoreFolder(model.settings, row.id));
  await model.refresh();
}

export async function purgeFolder(model: DataModel, row: IFolderRow): Promise<void> {
  const ok = await confirm(
    'Delete for good',
    `Delete ${row.name} and all its files (${row.usageText})? This cannot be undone.`,
    'Delete',
    true
  );
  if (ok) {
    await attempt('Folder not deleted', () => api.purgeFolder(model.settings, row.id));
    await model.refresh();
  }
}

export async function inviteTo(model: DataModel, row: IFolderRow): Promise<void> {
  const values = await askForm(
    `Share ${row.name}`,
    [
      { name: 'user', label: 'User (of your domain)' },
      {
        name: 'permission',
        label: 'Permission',
        options: [
          { value: 'ro', label: 'ro: read only' },
          { value: 'rw', label: 'rw: read & write (no delete)' }
        ]
      }
    ],
    'Invite'
  );
  if (!values || !values.user.trim()) {
    return;
  }
  const sent = await attempt('Invitation not sent', () =>
    api.invite(model.settings, row.id, values.user.trim(), values.permission as 'ro' | 'rw')
  );
  if (sent) {
    Notification.success(`Invited ${sent.invitee} to ${sent.folder_name} (${sent.permission})`, {
      autoClose: 4000
    });
    await model.refresh();
  }
}

export async function answer(
  model: DataModel,
  invitation: IInvitation,
  accept: boolean
): Promise<void> {
  await attempt(accept ? 'Invitation not accepted' : 'Invitation not declined', () =>
    accept
      ? api.acceptInvitation(model.settings, invitation.id)
      : api.declineInvitation(model.settings, invitation.id)
  );
  await model.refresh();
}

export async function revokeInvitation(model: DataModel, invitation: IInvitation): Promise<void> {
  await attempt('Invitation not revoked', () =>
    api.cancelInvitation(model.settings, invitation.id)
  );
  await model.refresh();
}

export async function revokeShare(
  model: DataModel,
  folderId: string,
  folderName: string,
  user: string,
  leaving: boolean
): Promise<boolean> {
  const ok = await confirm(
    leaving ? 'Leave a shared folder' : 'Revoke a share',
    leaving
      ? `Stop using ${folderName}? Its owner must invite you again to give it back.`
      : `Revoke ${user}'s access to ${folderName}? Running sessions keep it until they end.`,
    leaving ? 'Leave' : 'Revoke',
    true
  );
  if (!ok) {
    return false;
  }
  const done = await attempt('Share not revoked', async () => {
    await api.revokeShare(model.settings, folderId, user);
    return true;
  });
  await model.refresh();
  return done === true;
}
