/**
 * Scheduler (hubgrid:admin-queue): each resource group's pending queue in
 * the order the scheduler judges it (GET resource-groups/{g}/queue), each
 * request's reasons and numbers; change its priority, move it (to the
 * front, before or after another), cancel it. Other domains' requests a
 * domain admin may not see are anonymous positions. Live: every group's
 * queue is read again every LIVE_QUEUE ms while the page is shown
 * (../live.ts); a priority being typed and a chosen move are kept.
 */

import { Dialog, showDialog } from '@jupyterlab/apputils';
import { Button } from '@jupyterlab/ui-components';
import * as React from 'react';

import { AdminFrame, ErrorBar, IAdminPageProps, useAdminLoad } from '../frame';
import { useLivePoll } from '../live';
import { OpsApi } from './api';
import { shortId } from './gpumap';
import { keepEdit, keepTarget } from './keep';
import {
  IMoveRequest,
  IQueueRow,
  moveRequest,
  MoveKind,
  moveTargets,
  priorityRequest,
  queueRows,
  queueSummary
} from './queue';
import { IAdminGroup, IQueue } from './types';
import { formatTime } from '../../data/format';

/** How often the page reads again while shown (ms). */
export const LIVE_QUEUE = 5_000;

/** Each group the caller sees with its queue, or why it could not be read. */
interface IQueues {
  groups: IAdminGroup[];
  queues: Record<string, { queue?: IQueue; error?: unknown }>;
}

interface IRowProps {
  row: IQueueRow;
  rows: IQueueRow[];
  onChange: (id: string, change: IMoveRequest) => Promise<void>;
  onCancel: (id: string) => Promise<void>;
}

function QueueRow(props: IRowProps): JSX.Element {
  const { row } = props;
  const [priority, setPriority] = React.useState(row.priority);
  const [kind, setKind] = React.useState<MoveKind>('front');
  const [target, setTarget] = React.useState('');
  const [error, setError] = React.useState<unknown>(null);
  // a new read keeps a priority being typed, and the chosen target while it waits
  const filled = React.useRef(row.priority);
  React.useEffect(() => {
    setPriority(current => keepEdit(current, filled.current, row.priority));
    filled.current = row.priority;
  }, [row.priority]);
  const targetIds = row.visible ? moveTargets(props.rows, row.id).map(t => t.id).join(' ') : '';
  React.useEffect(() => {
    setTarget(current => keepTarget(current, moveTargets(props.rows, row.id)));
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [targetIds]);
  const run = async (f: () => Promise<void>) => {
    try {
      await f();
      setError(null);
    } catch (e) {
      setError(e);
    }
  };
  if (!row.visible) {
    return (
      <tr className="jp-hubgrid-ops-hidden" data-position={row.position} data-visible="false">
        <td>{row.position + 1}</td>
        <td colSpan={6}>{row.who}</td>
      </tr>
    );
  }
  const targets = moveTargets(props.rows, row.id);
  return (
    <tr data-position={row.position} data-request={row.id} data-visible="true">
      <td>{row.position + 1}</td>
      <td>
        <span title={`session ${row.id}`} data-field="session">{row.who}</span>
        <div className="jp-hubgrid-ops-sub" title={row.created}>{formatTime(row.created)}</div>
      </td>
      <td>{row.slots}</td>
      <td>
        <input className="jp-mod-styled" aria-label="priority" size={3} value={priority}
          onChange={e => setPriority(e.target.value)} />
        <Button small onClick={() => void run(() => props.onChange(row.id, priorityRequest(priority)))}>
          Set
        </Button>
      </td>
      <td>
        {row.waits}
        <ul className="jp-hubgrid-ops-reasons">
          {row.reasons.map((r, i) => (
            <li key={i}>{r}</li>
          ))}
        </ul>
      </td>
      <td className="jp-hubgrid-ops-move">
        <select aria-label="move" value={kind} onChange={e => setKind(e.target.value as MoveKind)}>
          <option value="front">to the front</option>
          <option value="before">before</option>
          <option value="after">after</option>
        </select>
        {kind !== 'front' && (
          <select aria-label="move target" value={target} onChange={e => setTarget(e.target.value)}>
            <option value="">choose…</option>
            {targets.map(t => (
              <option key={t.id} value={t.id}>{`#${t.position + 1} ${t.who} ${shortId(t.id)}`}</option>
            ))}
          </select>
        )}
        <Button small onClick={() => void run(() => props.onChange(row.id, moveRequest(kind, row.id, target)))}>
          Move
        </Button>
        {error ? <ErrorBar error={error} /> : null}
      </td>
      <td>
        <Button small minimal onClick={() => void run(() => props.onCancel(row.id))}>Cancel</Button>
      </td>
    </tr>
  );
}

function GroupQueue(props: {
  api: OpsApi;
  group: IAdminGroup;
  data?: IQueue;
  error?: unknown;
  reload: () => Promise<void>;
}): JSX.Element {
  const { api, group, data, error, reload } = props;
  const rows = data ? queueRows(data) : [];
  const change = async (id: string, body: IMoveRequest) => {
    await api.changeQueued(group.name, id, body);
    await reload();
  };
  const cancel = async (id: string) => {
    const answer = await showDialog({
      title: 'Cancel this request?',
      body: `The pending request ${shortId(id)} in ${group.name} is cancelled; its owner sees it cancelled.`,
      buttons: [Dialog.cancelButton({ label: 'Keep it' }), Dialog.warnButton({ label: 'Cancel request' })]
    });
    if (answer.button.accept) {
      await api.cancelQueued(group.name, id);
      await reload();
    }
  };
  return (
    <section className="jp-hubgrid-ops-queue" data-group={group.name}>
      <h3>{group.name}</h3>
      {data && <div className="jp-hubgrid-ops-sub">{queueSummary(data)}</div>}
      {error ? <ErrorBar error={error} /> : null}
      {rows.length > 0 && (
        <table className="jp-hubgrid-ops-table">
          <thead>
            <tr>
              <th>#</th>
              <th>Request</th>
              <th>Resources</th>
              <th>Priority</th>
              <th>Waits for</th>
              <th>Move</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {rows.map(r => (
              <QueueRow key={r.visible ? r.id : `hidden-${r.position}`} row={r} rows={rows}
                onChange={change} onCancel={cancel} />
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

/** Every group and its queue; fails only when nothing could be read (a poll backs off). */
async function readQueues(api: OpsApi): Promise<IQueues> {
  const groups = await api.groups();
  const answers = await Promise.all(
    groups.map(g => api.queue(g.name).then(
      queue => ({ queue }),
      (error: unknown) => ({ error })
    ))
  );
  const queues: IQueues['queues'] = {};
  answers.forEach((a, i) => {
    queues[groups[i].name] = a;
  });
  if (answers.length && answers.every(a => 'error' in a)) {
    throw (answers[0] as { error: unknown }).error;
  }
  return { groups, queues };
}

export function QueuePage(props: IAdminPageProps): JSX.Element {
  const api = React.useMemo(() => new OpsApi(props.settings), [props.settings]);
  const frame = React.useRef<HTMLDivElement>(null);
  const { data, error, busy, reload, refresh } = useAdminLoad(() => readQueues(api), [api]);
  useLivePoll('hubgrid:admin-queue', frame, refresh, LIVE_QUEUE);
  return (
    <AdminFrame page="queue" title="Scheduler" busy={busy} error={error} frameRef={frame}
      onRefresh={() => void reload()}>
      {(data?.groups ?? []).map(g => (
        <GroupQueue key={g.name} api={api} group={g} data={data?.queues[g.name]?.queue}
          error={data?.queues[g.name]?.error} reload={reload} />
      ))}
    </AdminFrame>
  );
}
