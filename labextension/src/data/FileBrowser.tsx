/**
 * One folder's files in the main area: list, go into directories, upload
 * (button or drop; resumable, with progress), download, new directory,
 * rename, delete. What I may do follows my permission on the folder; the
 * service checks every call again.
 */

import { MainAreaWidget } from '@jupyterlab/apputils';
import {
  ReactWidget,
  deleteIcon,
  downloadIcon,
  editIcon,
  fileIcon,
  fileUploadIcon,
  folderIcon,
  newFolderIcon,
  refreshIcon
} from '@jupyterlab/ui-components';
import * as React from 'react';

import { attempt } from './actions';
import * as api from './api';
import { askForm, confirm } from './dialogs';
import { IFolderRow } from './folders';
import { formatBytes, formatTime } from './format';
import { DataModel } from './model';
import { breadcrumbs, joinPath, nameProblem, parentPath } from './paths';
import { IUploadHandle, startUpload } from './transfer';
import { IFileEntry, IFileListing } from './types';
import { busy, uploadsReducer, worthDrawing } from './upload';
import { UploadList } from './UploadList';

interface IRunning {
  file: File;
  path: string;
  handle: IUploadHandle | null;
}

function ToolButton(props: {
  icon: typeof folderIcon;
  label: string;
  onClick: () => void;
  disabled?: boolean;
}): JSX.Element {
  return (
    <button className="jp-ToolbarButtonComponent jp-Button jp-mod-minimal" title={props.label}
      aria-label={props.label} disabled={props.disabled} onClick={props.onClick}>
      <props.icon.react tag="span" />
      <span className="jp-ToolbarButtonComponent-label">{props.label}</span>
    </button>
  );
}

export function FolderFiles(props: { model: DataModel; folder: IFolderRow }): JSX.Element {
  const { model, folder } = props;
  const settings = model.settings;
  const [dir, setDir] = React.useState('');
  const [listing, setListing] = React.useState<IFileListing | null>(null);
  const [error, setError] = React.useState('');
  const [uploads, dispatch] = React.useReducer(uploadsReducer, []);
  const running = React.useRef(new Map<string, IRunning>());
  const input = React.useRef<HTMLInputElement>(null);
  const [dragging, setDragging] = React.useState(false);

  // the directory the listing on screen is of: links are built from it, so a
  // second click before the next listing arrives cannot add a name twice
  const [listedDir, setListedDir] = React.useState('');
  const dirRef = React.useRef(dir);
  dirRef.current = dir;
  const load = React.useCallback(async (path: string) => {
    try {
      const got = await api.listFiles(settings, folder.id, path);
      if (path !== dirRef.current) {
        return; // the listing of a directory no longer shown
      }
      setListing(got);
      setListedDir(path);
      setError('');
    } catch (e) {
      if (path === dirRef.current) {
        setError((e as Error).message);
      }
    }
  }, [settings, folder.id]);
  React.useEffect(() => {
    void load(dir);
  }, [dir, load]);

  const active = busy(uploads);
  React.useEffect(() => {
    if (!active) {
      return;
    }
    const warn = (e: BeforeUnloadEvent) => {
      e.preventDefault();
      e.returnValue = '';
    };
    window.addEventListener('beforeunload', warn);
    return () => window.removeEventListener('beforeunload', warn);
  }, [active]);

  const send = async (id: string, file: File, path: string, overwrite: boolean) => {
    running.current.set(id, { file, path, handle: null });
    dispatch({ type: 'start', id, resumed: false });
    let drawn: number | null = null;
    try {
      const handle = await startUpload(settings, folder.id, path, file, overwrite, {
        onResumed: offset => offset > 0 && dispatch({ type: 'start', id, resumed: true }),
        onProgress: (sent, total) => {
          const now = Date.now();
          if (worthDrawing(drawn, now, sent, total)) {
            drawn = now;
            dispatch({ type: 'progress', id, sent, at: now });
          }
        },
        onDone: () => {
          dispatch({ type: 'done', id, at: Date.now() });
          running.current.delete(id);
          if (parentPath(path) === dirRef.current) {
            void load(dirRef.current);
          }
          void model.refresh();
        },
        onError: (message, conflict) => dispatch({ type: 'fail', id, error: message, conflict })
      });
      const entry = running.current.get(id);
      if (entry) {
        entry.handle = handle;
      }
    } catch (e) {
      dispatch({ type: 'fail', id, error: (e as Error).message });
    }
  };

  const uploadFiles = (files: FileList | File[]) => {
    for (const file of Array.from(files)) {
      const path = joinPath(dir, file.name);
      const id = `${path}#${Date.now()}#${Math.random().toString(36).slice(2)}`;
      dispatch({ type: 'add', id, folder: folder.id, path, size: file.size });
      void send(id, file, path, false);
    }
  };

  const controls = {
    pause: (id: string) => {
      void running.current.get(id)?.handle?.pause();
      dispatch({ type: 'pause', id });
    },
    resume: (id: string) => {
      const r = running.current.get(id);
      if (r?.handle) {
        dispatch({ type: 'start', id, resumed: true });
        r.handle.resume();
      }
    },
    cancel: (id: string) => {
      const r = running.current.get(id);
      running.current.delete(id);
      void r?.handle?.cancel().catch(() => undefined);
      dispatch({ type: 'cancel', id });
    },
    replace: (id: string) => {
      const r = running.current.get(id);
      if (r) {
        void send(id, r.file, r.path, true);
      }
    },
    clear: () => dispatch({ type: 'clear' })
  };

  const newDirectory = async () => {
    const v = await askForm('New directory', [{ name: 'name', label: 'Name' }], 'Create');
    if (!v) {
      return;
    }
    const problem = nameProblem(v.name);
    if (problem) {
      setError(problem);
      return;
    }
    if ((await attempt('Directory not created', () => api.makeDirectory(settings, folder.id, joinPath(dir, v.name)))) !== undefined) {
      await load(dir);
    }
  };

  const rename = async (entry: IFileEntry) => {
    const src = joinPath(listedDir, entry.name);
    const v = await askForm('Rename', [{ name: 'name', label: 'New name', value: entry.name }], 'Rename');
    if (!v || v.name === entry.name) {
      return;
    }
    const problem = nameProblem(v.name);
    if (problem) {
      setError(problem);
      return;
    }
    await attempt('Not renamed', () => api.moveEntry(settings, folder.id, src, joinPath(listedDir, v.name)));
    await load(dir);
  };

  const remove = async (entry: IFileEntry) => {
    const isDir = entry.type === 'dir';
    const ok = await confirm('Delete', isDir
      ? `Delete the directory ${entry.name} and everything in it?`
      : `Delete ${entry.name}?`, 'Delete', true);
    if (!ok) {
      return;
    }
    await attempt('Not deleted', () => api.deleteEntry(settings, folder.id, joinPath(listedDir, entry.name), isDir));
    await load(dir);
    void model.refresh();
  };

  const entries = [...(listing?.entries ?? [])].sort(
    (a, b) => Number(b.type === 'dir') - Number(a.type === 'dir') || a.name.localeCompare(b.name)
  );
  return (
    <div
      className={`jp-hubgrid-files${dragging ? ' jp-mod-dropTarget' : ''}`}
      onDragOver={e => {
        if (folder.canWrite && e.dataTransfer.types.includes('Files')) {
          e.preventDefault();
          setDragging(true);
        }
      }}
      onDragLeave={() => setDragging(false)}
      onDrop={e => {
        setDragging(false);
        if (folder.canWrite && e.dataTransfer.files.length > 0) {
          e.preventDefault();
          uploadFiles(e.dataTransfer.files);
        }
      }}
    >
      <div className="jp-Toolbar jp-hubgrid-files-toolbar" role="toolbar">
        <ToolButton icon={fileUploadIcon} label="Upload" disabled={!folder.canWrite}
          onClick={() => input.current?.click()} />
        <ToolButton icon={newFolderIcon} label="New directory" disabled={!folder.canWrite}
          onClick={newDirectory} />
        <ToolButton icon={refreshIcon} label="Refresh" onClick={() => load(dir)} />
        <span className="jp-hubgrid-data-sub">
          {folder.typeLabel} · {folder.permission} ({folder.permissionLabel})
        </span>
        <input ref={input} type="file" multiple hidden aria-label="files to upload"
          onChange={e => {
            if (e.target.files) {
              uploadFiles(e.target.files);
            }
            e.target.value = '';
          }} />
      </div>
      <nav className="jp-hubgrid-crumbs" aria-label="path">
        {breadcrumbs(folder.name, dir).map((c, i, all) => (
          <React.Fragment key={c.path}>
            {i > 0 && <span> / </span>}
            {i === all.length - 1 ? (
              <span>{c.name}</span>
            ) : (
              <a href="#" onClick={e => { e.preventDefault(); setDir(c.path); }}>{c.name}</a>
            )}
          </React.Fragment>
        ))}
      </nav>
      {error && <p className="jp-hubgrid-error" role="alert">{error}</p>}
      <table className="jp-hubgrid-data-table jp-hubgrid-files-table" aria-label="files">
        <thead>
          <tr><th>Name</th><th>Size</th><th>Modified</th><th aria-label="actions" /></tr>
        </thead>
        <tbody>
          {entries.map(entry => (
            <tr key={entry.name} data-entry={entry.name} data-type={entry.type}>
              <td>
                {entry.type === 'dir' ? (
                  <a href="#" onClick={e => { e.preventDefault(); setDir(joinPath(listedDir, entry.name)); }}>
                    <folderIcon.react tag="span" className="jp-hubgrid-files-icon" />
                    {entry.name}
                  </a>
                ) : (
                  <span>
                    <fileIcon.react tag="span" className="jp-hubgrid-files-icon" />
                    {entry.name}
                    {entry.type !== 'file' ? ` (${entry.type})` : ''}
                  </span>
                )}
              </td>
              <td>{entry.type === 'file' ? formatBytes(entry.size) : ''}</td>
              <td>{formatTime(entry.mtime)}</td>
              <td className="jp-hubgrid-data-actions">
                {entry.type === 'file' && (
                  <button className="jp-ToolbarButtonComponent jp-mod-minimal jp-Button"
                    data-download={entry.name} title={`Download ${entry.name}`} aria-label={`Download ${entry.name}`}
                    onClick={() => void attempt('Not downloaded',
                      () => api.downloadFile(settings, folder.id, joinPath(listedDir, entry.name), entry.name))}>
                    <downloadIcon.react tag="span" />
                  </button>
                )}
                {folder.canManage && (
                  <>
                    <button className="jp-ToolbarButtonComponent jp-mod-minimal jp-Button"
                      title={`Rename ${entry.name}`} aria-label={`Rename ${entry.name}`}
                      onClick={() => rename(entry)}>
                      <editIcon.react tag="span" />
                    </button>
                    <button className="jp-ToolbarButtonComponent jp-mod-minimal jp-Button"
                      title={`Delete ${entry.name}`} aria-label={`Delete ${entry.name}`}
                      onClick={() => remove(entry)}>
                      <deleteIcon.react tag="span" />
                    </button>
                  </>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {listing && entries.length === 0 && (
        <p className="jp-hubgrid-data-empty">
          {folder.canWrite ? 'Empty: upload files or drop them here.' : 'Empty.'}
        </p>
      )}
      <UploadList uploads={uploads} controls={controls} canReplace={folder.canManage} />
    </div>
  );
}

/** The main-area widget of one folder. */
export function folderWidget(model: DataModel, folder: IFolderRow): MainAreaWidget<ReactWidget> {
  const content = ReactWidget.create(<FolderFiles model={model} folder={folder} />);
  content.addClass('jp-hubgrid-files-panel');
  const widget = new MainAreaWidget({ content });
  widget.id = `jp-hubgrid-folder-${folder.id}`;
  widget.title.label = folder.name;
  widget.title.caption = `hubgrid folder ${folder.name} (${folder.typeLabel})`;
  widget.title.icon = folderIcon;
  widget.title.closable = true;
  return widget;
}

