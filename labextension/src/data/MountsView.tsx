/**
 * Which folders mount into my next session of a project, composed from the
 * folders I see by the service's rules (mounts.ts): no endpoint tells the
 * mounts before a session is admitted.
 */

import * as React from 'react';

import { DataModel } from './model';
import { mountCandidates, planMounts } from './mounts';

const KIND_LABELS = { own: 'mine', project: 'project', shared: 'shared with me' };

export function MountsView(props: { model: DataModel }): JSX.Element {
  const { me, folders, received } = props.model.state;
  const [choice, setChoice] = React.useState('');
  if (!me) {
    return <p>Loading…</p>;
  }
  if (me.projects.length === 0) {
    return <p>You are in no project: you cannot start a session yet.</p>;
  }
  const key = (p: { domain: string; name: string }) => `${p.domain}/${p.name}`;
  const project = me.projects.find(p => key(p) === choice) ?? me.projects[0];
  const shared = new Set(
    received.filter(i => i.state === 'accepted').map(i => i.folder)
  );
  const plan = planMounts(mountCandidates(folders, me, project, shared));
  return (
    <div className="jp-hubgrid-data-mounts">
      <label>
        <span>Project </span>
        <select
          className="jp-mod-styled"
          value={key(project)}
          onChange={e => setChoice(e.target.value)}
        >
          {me.projects.map(p => (
            <option key={key(p)} value={key(p)}>
              {p.name}
            </option>
          ))}
        </select>
      </label>
      <p className="jp-hubgrid-data-note">
        Folders whose name starts with a dot mount into every session by
        themselves; pick others in the session launcher. Each appears at
        /home/jovyan/NAME (the spawner's mount root) in container sessions;
        Slurm sessions mount none.
      </p>
      {plan.mounts.length === 0 ? (
        <p className="jp-hubgrid-data-empty">
          No folder mounts by itself: name a folder with a leading dot (.data) to
          mount it into every session.
        </p>
      ) : (
        <table className="jp-hubgrid-data-table" aria-label="next session mounts">
          <thead>
            <tr>
              <th>Folder</th>
              <th>Whose</th>
              <th>Mode</th>
            </tr>
          </thead>
          <tbody>
            {plan.mounts.map(m => (
              <tr key={m.folder} data-folder={m.folder}>
                <td>{m.name}</td>
                <td>{KIND_LABELS[m.kind]}</td>
                <td>{m.mode === 'ro' ? 'read-only' : 'read-write'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {plan.skipped.length > 0 && (
        <ul className="jp-hubgrid-data-skipped">
          {plan.skipped.map(s => (
            <li key={s.folder}>
              {s.name}: not mounted ({s.reason})
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
