/**
 * The Data panel of the left sidebar: my folders, my projects' and those
 * shared with me (and the trash), invitations with a badge for those
 * waiting for me, and which folders mount into my next session. A folder
 * opens in the main area (FileBrowser).
 */

import { ReactWidget, addIcon, refreshIcon } from '@jupyterlab/ui-components';
import * as React from 'react';

import * as actions from './actions';
import { FolderTable, IFolderActions } from './FolderTable';
import { fillFraction, folderTable, foldersText, IFolderRow, storageUse, useText } from './folders';
import { dataIcon } from './icons';
import { badgeText } from './invitations';
import { DataModel } from './model';
import { MountsView } from './MountsView';
import { SessionView } from './SessionView';
import { InvitationsView } from './InvitationsView';
import { shareFolder } from './SharesView';

type Tab = 'folders' | 'trash' | 'invitations' | 'mounts' | 'session';

function StorageSummary(props: { model: DataModel }): JSX.Element | null {
  const { me, folders, policy } = props.model.state;
  if (!me) {
    return null;
  }
  const uses = [...storageUse(folders, me, policy).values()];
  return (
    <ul className="jp-hubgrid-data-quota" aria-label="storage quota">
      {uses.map(u => {
        const fill = fillFraction(u.bytes, u.maxBytes);
        return (
          <li key={u.key} data-owner={u.key}>
            <span className="jp-hubgrid-data-who">{u.label}</span>{' '}
            <span>
              {useText(u.bytes, u.maxBytes)} · {foldersText(u.folders, u.maxFolders)}
              {u.complete ? '' : ' (of those you can see)'}
            </span>
            {fill !== null && (
              <span className="jp-hubgrid-data-bar" role="meter" aria-valuenow={Math.round(fill * 100)}
                aria-valuemin={0} aria-valuemax={100} aria-label={`${u.label} storage`}>
                <span style={{ width: `${(fill * 100).toFixed(1)}%` }} />
              </span>
            )}
          </li>
        );
      })}
    </ul>
  );
}

function DataView(props: { model: DataModel; actions: IFolderActions }): JSX.Element {
  const { model } = props;
  const [tab, setTab] = React.useState<Tab>('folders');
  const { me, folders, policy, error, loaded } = model.state;
  const waiting = model.waiting;
  const tabs: { id: Tab; label: string }[] = [
    { id: 'folders', label: 'Folders' },
    { id: 'trash', label: 'Trash' },
    { id: 'invitations', label: 'Invitations' },
    { id: 'mounts', label: 'Next session' },
    { id: 'session', label: 'This session' }
  ];
  let body: JSX.Element;
  if (!loaded || !me) {
    body = error ? <p className="jp-hubgrid-error" role="alert">{error}</p> : <p>Loading…</p>;
  } else if (tab === 'invitations') {
    body = <InvitationsView model={model} />;
  } else if (tab === 'mounts') {
    body = <MountsView model={model} />;
  } else if (tab === 'session') {
    body = <SessionView model={model} />;
  } else {
    const rows = folderTable(folders, me, policy, tab === 'trash' ? 'trashed' : 'active');
    body = (
      <>
        {tab === 'folders' && <StorageSummary model={model} />}
        {tab === 'trash' && (
          <p className="jp-hubgrid-data-note">
            Trashed folders still count against your quota until deleted.
          </p>
        )}
        <FolderTable rows={rows} trash={tab === 'trash'} actions={props.actions} />
      </>
    );
  }
  return (
    <>
      <div className="jp-hubgrid-data-header">
        <h2>Data</h2>
        <button className="jp-ToolbarButtonComponent jp-mod-minimal jp-Button" title="New folder"
          aria-label="New folder" onClick={() => actions.newFolder(model)}>
          <addIcon.react tag="span" />
        </button>
        <button className="jp-ToolbarButtonComponent jp-mod-minimal jp-Button" title="Refresh"
          aria-label="Refresh" onClick={() => model.refresh()}>
          <refreshIcon.react tag="span" />
        </button>
      </div>
      {loaded && error && <p className="jp-hubgrid-error" role="alert">{error}</p>}
      <div className="jp-hubgrid-data-tabs" role="tablist">
        {tabs.map(t => (
          <button key={t.id} role="tab" aria-selected={tab === t.id}
            className={tab === t.id ? 'jp-mod-active' : ''} onClick={() => setTab(t.id)}>
            {t.label}
            {t.id === 'invitations' && waiting > 0 && (
              <span className="jp-hubgrid-badge" aria-label={`${waiting} waiting`}>
                {badgeText(waiting)}
              </span>
            )}
          </button>
        ))}
      </div>
      <div className="jp-hubgrid-data-body" role="tabpanel">{body}</div>
    </>
  );
}

export class DataPanel extends ReactWidget {
  constructor(
    private readonly _model: DataModel,
    openFolder: (row: IFolderRow) => void
  ) {
    super();
    this.id = 'jp-hubgrid-data';
    this.addClass('jp-hubgrid-data-panel');
    this.title.icon = dataIcon;
    this.title.caption = 'hubgrid: Data';
    const model = _model;
    this._actions = {
      open: openFolder,
      rename: row => actions.renameFolder(model, row),
      trash: row => actions.trashFolder(model, row),
      restore: row => actions.restoreFolder(model, row),
      purge: row => actions.purgeFolder(model, row),
      share: row => shareFolder(model, row)
    };
    this._unsubscribe = _model.subscribe(() => {
      this.update();
      this._badge();
    });
  }

  dispose(): void {
    this._unsubscribe();
    super.dispose();
  }

  protected render(): JSX.Element {
    return <DataView model={this._model} actions={this._actions} />;
  }

  /** The sidebar tab shows how many invitations wait for me. */
  private _badge(): void {
    const text = badgeText(this._model.waiting);
    // Lumino writes each key as data-<key> on the sidebar tab; the shell keeps
    // the widget's id there too (data-id): only the badge's key changes
    if ((this.title.dataset['hubgrid-badge'] ?? '') !== text) {
      const dataset = { ...this.title.dataset };
      delete dataset['hubgrid-badge'];
      this.title.dataset = text ? { ...dataset, 'hubgrid-badge': text } : dataset;
      this.title.caption = text
        ? `hubgrid: Data (${this._model.waiting} invitation(s) waiting)`
        : 'hubgrid: Data';
    }
  }

  private _actions: IFolderActions;
  private _unsubscribe: () => void;
}
