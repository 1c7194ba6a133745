/**
 * The Data panel's "This session": which folders are mounted in the session
 * this Lab runs in, where, and "Mount in this session" for the others
 * (session.ts). The list is read again every few seconds while the tab is
 * open: a folder asked for appears once its spawner mounted it, and one
 * whose share was revoked goes.
 */

import * as React from 'react';

import { DataModel } from './model';
import {
  getSessionMounts,
  getThisSession,
  ISessionMounts,
  IThisSession,
  mountNow,
  sessionRows
} from './session';

const REFRESH_MS = 3000;

/** Where folders mounted at the start are: the live directory's parent (the
 * spawner's mount root), else the spawner's default. */
function mountRoot(live: string): string {
  const parent = live.replace(/\/+$/, '').replace(/\/[^/]*$/, '');
  return parent || '/home/jovyan';
}

/** A path under the home as the shell writes it (the panel is narrow). */
function shortPath(path: string): string {
  return path.startsWith('/home/jovyan/') ? `~/${path.slice('/home/jovyan/'.length)}` : path;
}

export function SessionView(props: { model: DataModel }): JSX.Element {
  const { model } = props;
  const [session, setSession] = React.useState<IThisSession | null>(null);
  const [state, setState] = React.useState<ISessionMounts | null>(null);
  const [message, setMessage] = React.useState('');
  const [error, setError] = React.useState('');

  const load = React.useCallback(async (s: IThisSession) => {
    if (!s.allocation) {
      return;
    }
    try {
      setState(await getSessionMounts(model.settings, s.allocation));
      setError('');
    } catch (e) {
      setError((e as Error).message);
    }
  }, [model]);

  React.useEffect(() => {
    let s: IThisSession | null = null;
    void getThisSession(model.settings).then(found => {
      s = found;
      setSession(found);
      void load(found);
    });
    const timer = window.setInterval(() => s && void load(s), REFRESH_MS);
    return () => window.clearInterval(timer);
  }, [model, load]);

  if (session === null) {
    return <p>Loading…</p>;
  }
  if (!session.allocation) {
    return <p>This Lab does not run in a hubgrid session: there is nothing to mount into.</p>;
  }
  if (state === null) {
    return error ? <p className="jp-hubgrid-error" role="alert">{error}</p> : <p>Loading…</p>;
  }
  const rows = sessionRows(model.state.folders, state, session.live_folders, mountRoot(session.live_folders));
  const mount = async (folder: string, name: string) => {
    setMessage('');
    setError('');
    try {
      const m = await mountNow(model.settings, session.allocation, folder);
      setMessage(`Mounting ${m.name} (${m.mode === 'ro' ? 'read-only' : 'read-write'}): ` +
                 `it appears at ${session.live_folders}/${m.name} within seconds.`);
      await load(session);
    } catch (e) {
      setError(`${name}: ${(e as Error).message}`);
    }
  };
  return (
    <div className="jp-hubgrid-data-session">
      <p className="jp-hubgrid-data-note">
        {state.live_mounts && session.live_folders
          ? `Folders mounted now appear in ${session.live_folders}, without a restart; ` +
            'a revoked share or a trashed folder goes from there by itself.'
          : 'This session cannot have folders mounted while it runs (Slurm sessions, ' +
            'engines on other machines): stop it and start it again with the folder ' +
            'in "Folders to mount".'}
      </p>
      {message && <p className="jp-hubgrid-data-message" role="status">{message}</p>}
      {error && <p className="jp-hubgrid-error" role="alert">{error}</p>}
      <table className="jp-hubgrid-data-table" aria-label="this session's folders">
        <thead>
          <tr>
            <th>Folder</th>
            <th>In this session</th>
            <th>Mode</th>
          </tr>
        </thead>
        <tbody>
          {rows.map(r => (
            <tr key={r.folder} data-folder={r.folder}>
              <td>{r.name}</td>
              <td title={r.path}>
                {shortPath(r.path) ||
                  (r.mountable ? (
                    <button className="jp-mod-styled" aria-label={`Mount ${r.name} in this session`}
                      onClick={() => void mount(r.folder, r.name)}>
                      Mount in this session
                    </button>
                  ) : (
                    'not mounted'
                  ))}
              </td>
              <td>{r.mode === null ? '' : r.mode === 'ro' ? 'read-only' : 'read-write'}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
