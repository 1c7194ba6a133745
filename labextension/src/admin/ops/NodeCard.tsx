/**
 * One node on the Resource groups page: its bars (exact, warning above
 * 80 %), the drain switch (PATCH nodes/{node} {schedulable}) with
 * until_empty, the per-device GPU map and the sessions on it. Every name is
 * rendered as text.
 */

import { Dialog, showDialog } from '@jupyterlab/apputils';
import * as React from 'react';

import { formatTime } from '../../data/format';
import { ErrorBar } from '../frame';
import { nodeBars } from './bars';
import { SharesLine } from '../../sharesline';
import { gpuMap, nodeShares, sessionName, untilEmptyText } from './gpumap';
import { slotsText } from './queue';
import { IAdminNode } from './types';

export interface INodeCardProps {
  node: IAdminNode;
  /** superadmins may drain; domain admins see the switch disabled */
  canDrain: boolean;
  onSchedulable: (node: string, schedulable: boolean) => Promise<void>;
}

export function NodeBars(props: { node: IAdminNode }): JSX.Element {
  return (
    <div className="jp-hubgrid-ops-bars">
      {nodeBars(props.node).map(bar => (
        <div key={bar.slot} className="jp-hubgrid-bar-row" data-slot={bar.slot} data-level={bar.level}>
          <span className="jp-hubgrid-bar-label">{bar.label}</span>
          <div className={`jp-hubgrid-bar jp-hubgrid-ops-bar jp-mod-${bar.level}`}>
            <div className="jp-hubgrid-bar-used" style={{ width: `${bar.percent}%` }} />
          </div>
          <span className="jp-hubgrid-bar-text">{bar.text}</span>
        </div>
      ))}
    </div>
  );
}

export function GpuMap(props: { node: IAdminNode }): JSX.Element | null {
  const cells = gpuMap(props.node);
  if (cells.length === 0) {
    return null;
  }
  return (
    <ul className="jp-hubgrid-ops-gpumap">
      {cells.map(c => (
        <li key={c.index} className={`jp-hubgrid-ops-gpu jp-mod-${c.level}`} data-gpu={c.index}>
          <div className="jp-hubgrid-ops-gpu-head">
            GPU {c.index} · {c.model} · {c.taken} taken, {c.free} free
          </div>
          <div className="jp-hubgrid-bar">
            <div className="jp-hubgrid-bar-used" style={{ width: `${c.percent}%` }} />
          </div>
          <ul className="jp-hubgrid-ops-holders">
            {c.holders.map((h, i) => (
              <li key={i} className="jp-hubgrid-ops-holder" data-allocation={h.allocation}
                data-visible={String(h.visible)} title={h.visible ? `session ${h.allocation}` : undefined}>
                {`${h.who}: ${h.share}${h.cap ? `, ${h.cap}` : ''}`}
              </li>
            ))}
          </ul>
        </li>
      ))}
    </ul>
  );
}

export function NodeSessions(props: { node: IAdminNode }): JSX.Element {
  const sessions = props.node.sessions ?? [];
  const others = props.node.other_sessions ?? 0;
  return (
    <table className="jp-hubgrid-ops-table jp-hubgrid-ops-node-sessions">
      <thead>
        <tr>
          <th>Session</th>
          <th>Owner</th>
          <th>Resources</th>
          <th>GPUs</th>
          <th>Started</th>
          <th>Ends (lifetime limit)</th>
        </tr>
      </thead>
      <tbody>
        {sessions.map(s => (
          <tr key={s.id} data-allocation={s.id}>
            <td title={`session ${s.id}`} data-field="session">{sessionName(s)}</td>
            <td>{`${s.user} (${s.domain}/${s.project})`}</td>
            <td>{slotsText(s.slots)}</td>
            <td>{(s.gpus ?? []).map(g => `#${g.index}: ${g.share}`).join(', ')}</td>
            <td title={s.started_at ?? ''}>{formatTime(s.started_at)}</td>
            <td title={s.ends_at ?? ''}>{s.ends_at ? formatTime(s.ends_at) : 'no limit'}</td>
          </tr>
        ))}
        {sessions.length === 0 && (
          <tr>
            <td colSpan={6}>no sessions{others ? '' : ' on this node'}</td>
          </tr>
        )}
        {others > 0 && (
          <tr className="jp-hubgrid-ops-others">
            <td colSpan={6}>{`and ${others} session(s) of other domains`}</td>
          </tr>
        )}
      </tbody>
    </table>
  );
}

export function NodeCard(props: INodeCardProps): JSX.Element {
  const { node } = props;
  const [error, setError] = React.useState<unknown>(null);
  const [busy, setBusy] = React.useState(false);
  const toggle = async () => {
    if (node.schedulable) {
      const sessions = node.sessions?.length ?? 0;
      const answer = await showDialog({
        title: `Drain ${node.name}?`,
        body:
          'No new session will be placed on it; ' +
          (sessions ? `its ${sessions} session(s) you can see run on until they end.` : 'nothing running is stopped.'),
        buttons: [Dialog.cancelButton(), Dialog.warnButton({ label: 'Drain' })]
      });
      if (!answer.button.accept) {
        return;
      }
    }
    setBusy(true);
    try {
      await props.onSchedulable(node.name, !node.schedulable);
      setError(null);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section className="jp-hubgrid-ops-node" data-node={node.name}
      data-schedulable={String(node.schedulable)}
      data-detail={node.sessions === undefined ? 'pending' : 'loaded'}>
      <h4 className="jp-hubgrid-ops-node-title">
        {node.name}
        <label className="jp-hubgrid-ops-drain">
          <input type="checkbox" checked={node.schedulable} disabled={busy || !props.canDrain}
            onChange={() => void toggle()} />
          {node.schedulable ? 'schedulable' : 'draining: no new sessions'}
        </label>
      </h4>
      {node.until_empty && (
        <div className="jp-hubgrid-ops-until-empty">
          {`Empty at the sessions' limits: ${untilEmptyText(node.until_empty)}`}
        </div>
      )}
      {error ? <ErrorBar error={error} /> : null}
      <NodeBars node={node} />
      <SharesLine line={nodeShares(node)} />
      <GpuMap node={node} />
      <NodeSessions node={node} />
    </section>
  );
}
