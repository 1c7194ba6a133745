/**
 * Sessions (all) (hubgrid:admin-sessions): every session the caller may see
 * (a domain admin: their domain's; a superadmin: all), GET allocations with
 * the state/user filters (ended ones: the ENDED_LIMIT that began or ended
 * last, and how many were left out), the rest filtered here; owner, project, node,
 * resources; stop one (POST allocations/{id}/stop: the service stops a hub
 * server's session through the hub, as the Sessions panel stops its
 * owner's, and releases an API session) and read its log. Live: read again
 * every LIVE_SESSIONS ms while the page is shown (../live.ts); the filters
 * stay as typed.
 */

import { Dialog, MainAreaWidget, showDialog } from '@jupyterlab/apputils';
import { Button } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';
import * as React from 'react';

import { AdminFrame, ErrorBar, IAdminPageProps, useAdminLoad } from '../frame';
import { useLivePoll } from '../live';
import { OpsApi } from './api';
import { filterSessions, ISessionFilters, NO_FILTERS, sessionRow, sessionsQuery } from './sessions';
import { formatTime } from '../../data/format';
import { stateLabel } from '../../words';

/** How often the page reads again while shown (ms). */
export const LIVE_SESSIONS = 5_000;

function FilterInput(props: {
  name: keyof ISessionFilters;
  filters: ISessionFilters;
  set: (f: ISessionFilters) => void;
}): JSX.Element {
  return (
    <label className="jp-hubgrid-ops-filter">
      {props.name}{' '}
      <input className="jp-mod-styled" name={props.name} size={10} value={props.filters[props.name]}
        onChange={e => props.set({ ...props.filters, [props.name]: e.target.value })} />
    </label>
  );
}

export function SessionsPage(props: IAdminPageProps & { openLog: (id: string, text: string) => void }): JSX.Element {
  const api = React.useMemo(() => new OpsApi(props.settings), [props.settings]);
  const [filters, setFilters] = React.useState<ISessionFilters>(NO_FILTERS);
  const query = sessionsQuery(filters);
  const { data, error, busy, reload, refresh } = useAdminLoad(() => api.allocations(query), [api, query]);
  const frame = React.useRef<HTMLDivElement>(null);
  useLivePoll('hubgrid:admin-sessions', frame, refresh, LIVE_SESSIONS);
  const [actionError, setActionError] = React.useState<unknown>(null);
  const rows = filterSessions(data?.items ?? [], filters).map(sessionRow);
  const left = data ? data.total - data.items.length : 0;
  const stop = async (id: string, name: string, owner: string) => {
    const answer = await showDialog({
      title: `Stop ${owner}'s session ${name}?`,
      body: 'A server is stopped through the hub, then its resources are released; a pending request is cancelled.',
      buttons: [Dialog.cancelButton(), Dialog.warnButton({ label: 'Stop' })]
    });
    if (!answer.button.accept) {
      return;
    }
    try {
      await api.stop(id);
      setActionError(null);
    } catch (e) {
      setActionError(e);
    }
    await reload();
  };
  const log = async (id: string) => {
    try {
      props.openLog(id, await api.log(id));
      setActionError(null);
    } catch (e) {
      setActionError(e);
    }
  };
  return (
    <AdminFrame page="sessions" title="Sessions (all)" onRefresh={() => void reload()} busy={busy} error={error}
      frameRef={frame}>
      <div className="jp-hubgrid-ops-filters">
        <label className="jp-hubgrid-ops-filter">
          state{' '}
          <select name="state" value={filters.state} onChange={e => setFilters({ ...filters, state: e.target.value })}>
            {['allocated', 'pending', 'released', 'cancelled', 'all'].map(s => (
              <option key={s} value={s}>{s === 'all' ? 'all' : stateLabel(s)}</option>
            ))}
          </select>
        </label>
        {(['user', 'domain', 'project', 'group', 'node'] as Array<keyof ISessionFilters>).map(n => (
          <FilterInput key={n} name={n} filters={filters} set={setFilters} />
        ))}
      </div>
      {actionError ? <ErrorBar error={actionError} /> : null}
      <table className="jp-hubgrid-ops-table jp-hubgrid-ops-sessions">
        <thead>
          <tr>
            <th>Session</th>
            <th>Owner</th>
            <th>Project</th>
            <th>Group / node</th>
            <th>State</th>
            <th>Resources</th>
            <th>GPUs</th>
            <th>Started</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {rows.map(r => (
            <tr key={r.id} data-allocation={r.id} data-origin={r.origin}>
              <td>{r.name}</td>
              <td>{r.owner}</td>
              <td>{r.project}</td>
              <td>{`${r.group} / ${r.node || '—'}`}</td>
              <td data-state={r.state}>{stateLabel(r.state)}</td>
              <td>{r.resources}</td>
              <td>{r.gpus}</td>
              <td title={r.started}>{formatTime(r.started)}</td>
              <td>
                <Button small minimal onClick={() => void log(r.id)}>Log</Button>
                {(r.state === 'allocated' || r.state === 'pending') && (
                  <Button small minimal onClick={() => void stop(r.id, r.name, r.owner)}>
                    {r.state === 'pending' ? 'Cancel' : 'Stop'}
                  </Button>
                )}
              </td>
            </tr>
          ))}
          {data && rows.length === 0 && (
            <tr>
              <td colSpan={9}>no sessions match</td>
            </tr>
          )}
        </tbody>
      </table>
      {left > 0 && (
        <p className="jp-hubgrid-note" data-field="more">
          {`The ${data!.items.length} sessions that began or ended last are listed; ${left} older ones are not (filter by user to find them).`}
        </p>
      )}
    </AdminFrame>
  );
}

/** A read-only text view of a session's log (as text, never HTML). */
export function logWidget(id: string, text: string): MainAreaWidget {
  const pre = document.createElement('pre');
  pre.className = 'jp-hubgrid-ops-log';
  pre.textContent = text || '(the log is empty)';
  const content = new Widget();
  content.node.appendChild(pre);
  content.addClass('jp-hubgrid-ops-log-view');
  const widget = new MainAreaWidget({ content });
  widget.id = `jp-hubgrid-admin-log-${id}`;
  widget.title.label = `Log ${id.slice(0, 8)}`;
  widget.title.closable = true;
  return widget;
}
