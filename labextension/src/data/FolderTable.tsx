/** The folder table of the Data panel (its rows come from folders.ts). */

import {
  deleteIcon,
  editIcon,
  folderIcon,
  shareIcon,
  undoIcon
} from '@jupyterlab/ui-components';
import * as React from 'react';

import { IFolderRow, PERMISSION_LEGEND, SortKey, sortRows, useText } from './folders';

export interface IFolderActions {
  open(row: IFolderRow): void;
  rename(row: IFolderRow): void;
  trash(row: IFolderRow): void;
  restore(row: IFolderRow): void;
  purge(row: IFolderRow): void;
  share(row: IFolderRow): void;
}

const COLUMNS: { key: SortKey; label: string; title?: string }[] = [
  { key: 'name', label: 'Name' },
  { key: 'permission', label: 'Perm.', title: `Your permission on the folder:\n${PERMISSION_LEGEND}` },
  { key: 'usage', label: 'Use' }
];

function UsageCell(props: { row: IFolderRow }): JSX.Element {
  const { row } = props;
  const q = row.quota;
  const title = q
    ? `${row.usageText} in this folder; ${q.label}: ${useText(q.bytes, q.maxBytes)}` +
      (q.complete ? '' : ' (trashed folders you cannot see are not counted)')
    : `${row.usageText} (the owner's quota)`;
  return (
    <td className="jp-hubgrid-data-usage" title={title}>
      <span>{row.usageText}</span>
      {row.fill !== null && (
        <span
          className="jp-hubgrid-data-bar"
          role="meter"
          aria-valuemin={0}
          aria-valuemax={100}
          aria-valuenow={Math.round(row.fill * 100)}
          aria-label={`${q?.label}: ${useText(q!.bytes, q!.maxBytes)}`}
        >
          <span style={{ width: `${(row.fill * 100).toFixed(1)}%` }} />
        </span>
      )}
    </td>
  );
}

function Action(props: {
  icon: typeof folderIcon;
  title: string;
  onClick: () => void;
}): JSX.Element {
  return (
    <button
      className="jp-ToolbarButtonComponent jp-mod-minimal jp-Button jp-hubgrid-data-action"
      title={props.title}
      aria-label={props.title}
      onClick={e => {
        e.stopPropagation();
        props.onClick();
      }}
    >
      <props.icon.react tag="span" elementSize="normal" />
    </button>
  );
}

export function FolderTable(props: {
  rows: IFolderRow[];
  trash: boolean;
  actions: IFolderActions;
}): JSX.Element {
  const [sort, setSort] = React.useState<{ key: SortKey; asc: boolean }>({
    key: 'type',
    asc: true
  });
  const rows = sortRows(props.rows, sort.key, sort.asc);
  const { actions } = props;
  if (rows.length === 0) {
    return (
      <p className="jp-hubgrid-data-empty">
        {props.trash ? 'The trash is empty.' : 'No folders yet.'}
      </p>
    );
  }
  return (
    <table className="jp-hubgrid-data-table" aria-label={props.trash ? 'trashed folders' : 'folders'}>
      <thead>
        <tr>
          {COLUMNS.map(c => (
            <th
              key={c.key}
              title={c.title}
              aria-sort={sort.key === c.key ? (sort.asc ? 'ascending' : 'descending') : 'none'}
              onClick={() =>
                setSort({ key: c.key, asc: sort.key === c.key ? !sort.asc : true })
              }
            >
              {c.label}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.map(row => (
          <tr
            key={row.id}
            data-folder={row.id}
            className={props.trash ? '' : 'jp-hubgrid-data-openable'}
            onDoubleClick={() => !props.trash && actions.open(row)}
          >
            <td className="jp-hubgrid-data-name">
              {props.trash ? (
                <span>{row.name}</span>
              ) : (
                <a
                  href="#"
                  onClick={e => {
                    e.preventDefault();
                    actions.open(row);
                  }}
                >
                  {row.name}
                </a>
              )}
              <span className="jp-hubgrid-data-sub">
                {row.typeLabel} · {row.host}
                {row.autoMount ? ' · auto-mount' : ''}
                {row.usageMode !== 'general' ? ` · ${row.usageMode}` : ''}
              </span>
            <div className="jp-hubgrid-data-actions">
              {props.trash ? (
                <>
                  <Action icon={undoIcon} title={`Restore ${row.name}`} onClick={() => actions.restore(row)} />
                  <Action icon={deleteIcon} title={`Delete ${row.name} for good`} onClick={() => actions.purge(row)} />
                </>
              ) : (
                <>
                  {(row.canInvite || row.kind === 'shared') && (
                    <Action
                      icon={shareIcon}
                      title={row.kind === 'shared' ? `Leave ${row.name}` : `Share ${row.name}`}
                      onClick={() => actions.share(row)}
                    />
                  )}
                  {row.canManage && (
                    <>
                      <Action icon={editIcon} title={`Rename ${row.name}`} onClick={() => actions.rename(row)} />
                      <Action icon={deleteIcon} title={`Move ${row.name} to the trash`} onClick={() => actions.trash(row)} />
                    </>
                  )}
                </>
              )}
            </div>
            </td>
            <td title={row.permissionLabel}>{row.permission}</td>
            <UsageCell row={row} />
          </tr>
        ))}
      </tbody>
    </table>
  );
}
