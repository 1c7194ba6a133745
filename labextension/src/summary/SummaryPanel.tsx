/**
 * The Summary panel of the left sidebar: my limits and use at every level
 * as bars, my sessions, and each resource group's free capacity with its
 * GPU map. Thin: what it shows is composed by model.ts; every name is
 * rendered as text.
 */

import { ServerConnection } from '@jupyterlab/services';
import { ReactWidget, refreshIcon, ToolbarButtonComponent } from '@jupyterlab/ui-components';
import type { Message } from '@lumino/messaging';
import * as React from 'react';

import { SharesLine } from '../sharesline';
import { HubgridApi } from '../sessions/api';
import { onSessionsChanged } from '../sessions/events';
import { IdlePoll } from '../sessions/poller';
import { formatSlot } from './exact';
import { summaryIcon } from './icons';
import { loadSummary, ISummary } from './load';
import { IBar, IGroupView, ILevel, INodeView } from './model';

const LEVEL_TITLES: { [level: string]: string } = {
  user: 'Me',
  keypair: 'Me (keypair)',
  project: 'Project',
  domain: 'Domain'
};

export function Bar(props: { bar: IBar }): JSX.Element {
  const { bar } = props;
  return (
    <div className="jp-hubgrid-bar-row" data-slot={bar.slot}>
      <span className="jp-hubgrid-bar-label">{bar.label}</span>
      <span
        className={`jp-hubgrid-bar${bar.over ? ' jp-mod-over' : ''}${bar.limit === null ? ' jp-mod-unlimited' : ''}`}
        role="meter"
        aria-label={`${bar.label}: ${bar.text}`}
        aria-valuemin={0}
        aria-valuemax={100}
        aria-valuenow={bar.usedPercent}
      >
        <span className="jp-hubgrid-bar-used" style={{ width: `${bar.usedPercent}%` }} />
        <span className="jp-hubgrid-bar-pending" style={{ width: `${bar.pendingPercent}%` }} />
      </span>
      <span className="jp-hubgrid-bar-text" data-field="amount">
        {bar.text}
        {bar.pending !== '0' ? ` (+${formatSlot(bar.slot, bar.pending)} waiting)` : ''}
      </span>
    </div>
  );
}

/** how each role reads */
const ROLE_TEXT: { [role: string]: string } = {
  user: 'user',
  'domain-admin': 'domain admin',
  superadmin: 'superadmin'
};

function LevelView(props: { level: ILevel }): JSX.Element {
  const { level } = props;
  const s = level.sessions;
  return (
    <section className="jp-hubgrid-level" data-level={level.level} data-name={level.name}>
      <h3>
        {LEVEL_TITLES[level.level] ?? level.level} <span className="jp-hubgrid-name">{level.name}</span>
      </h3>
      <p className="jp-hubgrid-note">
        {level.source}
        {level.complete ? '' : ' · use counts your sessions only'}
      </p>
      {level.bars.map(bar => (
        <Bar key={bar.slot} bar={bar} />
      ))}
      <p className="jp-hubgrid-note" data-field="sessions">
        Sessions: {s.running} running{s.limit !== null ? ` of at most ${s.limit}` : ''}
        {s.pending ? `, ${s.pending} waiting` : ''}
      </p>
    </section>
  );
}

function GpuMap(props: { node: INodeView }): JSX.Element | null {
  const { node } = props;
  if (!node.gpus.length) {
    return null;
  }
  return (
    <ul className="jp-hubgrid-gpumap" aria-label={`GPUs of ${node.name}`}>
      {node.gpus.map(g => {
        const who = g.holders
          .map(h => `${h.session} ${h.share}${h.cap ? ` (${h.cap})` : ''}`)
          .join(', ');
        const myCaps = g.holders.filter(h => h.mine && h.cap).map(h => h.cap);
        return (
          <li key={g.index} className="jp-hubgrid-gpu" data-gpu={g.index}
            title={`GPU ${g.index} ${g.model}: ${who || 'free'}`}>
            <span className="jp-hubgrid-gpu-fill" style={{ height: `${g.takenPercent}%` }} />
            <span className="jp-hubgrid-gpu-text">
              <b>GPU {g.index}</b>
              <span className="jp-hubgrid-gpu-model">{g.model}</span>
              <span><span data-field="taken">{g.taken}</span> taken</span>
              {myCaps.map((cap, i) => (
                <span key={i} className="jp-hubgrid-gpu-cap" data-field="cap">{cap}</span>
              ))}
            </span>
          </li>
        );
      })}
    </ul>
  );
}

function GroupView(props: { group: IGroupView }): JSX.Element {
  const { group } = props;
  return (
    <section className="jp-hubgrid-group" data-group={group.name}>
      <h3>
        <span className="jp-hubgrid-name">{group.name}</span>
      </h3>
      {group.description && <p className="jp-hubgrid-note">{group.description}</p>}
      {group.slots.map(s => (
        <div key={s.slot} className="jp-hubgrid-bar-row" data-slot={s.slot}>
          <span className="jp-hubgrid-bar-label">{s.slot === 'cpu' ? 'CPU' : 'Memory'}</span>
          <span className="jp-hubgrid-bar" role="meter" aria-label={`${s.slot}: ${s.text}`}
            aria-valuemin={0} aria-valuemax={100} aria-valuenow={s.usedPercent}>
            <span className="jp-hubgrid-bar-used" style={{ width: `${s.usedPercent}%` }} />
          </span>
          <span className="jp-hubgrid-bar-text">{s.text}</span>
        </div>
      ))}
      {group.gpuCount > 0 && (
        <p className="jp-hubgrid-note" data-field="gpus">
          {group.gpuCount} GPU{group.gpuCount === 1 ? '' : 's'}: {group.gpusIdle} idle,{' '}
          {group.gpuSharesFree} of {group.gpuCount} free in shares
        </p>
      )}
      {group.nodes.map(node => (
        <div key={node.name} className="jp-hubgrid-node" data-node={node.name}>
          <span className="jp-hubgrid-name">{node.name}</span>
          {node.schedulable ? '' : ' (not taking sessions)'}
          <SharesLine line={node.shares} />
          <GpuMap node={node} />
        </div>
      ))}
      {!group.complete && (
        <p className="jp-hubgrid-note">Taken shows your sessions only; others' use is not shown to you.</p>
      )}
    </section>
  );
}

export function SummaryView(props: { summary: ISummary | null; error: string }): JSX.Element {
  const { summary, error } = props;
  if (!summary) {
    return error ? <p className="jp-hubgrid-error" role="alert">{error}</p> : <p>Loading…</p>;
  }
  return (
    <div className="jp-hubgrid-summary">
      {error && <p className="jp-hubgrid-error" role="alert">{error}</p>}
      <p className="jp-hubgrid-identity" data-field="me">
        <b>{summary.me.name}</b> · domain {summary.me.domain} · {ROLE_TEXT[summary.me.role] ?? summary.me.role}
      </p>
      <p className="jp-hubgrid-sessions-count" data-field="my-sessions">
        My sessions: <b>{summary.sessions.running}</b> running, <b>{summary.sessions.pending}</b> waiting
      </p>
      <h2>Limits and use</h2>
      {summary.levels.map(level => (
        <LevelView key={`${level.level}:${level.name}`} level={level} />
      ))}
      <h2>Resource groups</h2>
      {summary.groups.length === 0 && <p className="jp-hubgrid-note">No resource group is open to you.</p>}
      {summary.groups.map(group => (
        <GroupView key={group.name} group={group} />
      ))}
    </div>
  );
}

/** The Summary panel: reads on show, after each session change, and on a backing-off poll. */
export class SummaryPanel extends ReactWidget {
  constructor(settings: ServerConnection.ISettings) {
    super();
    this.api = new HubgridApi(settings);
    this.id = 'jp-hubgrid-summary';
    this.addClass('jp-hubgrid-panel');
    this.title.icon = summaryIcon;
    this.title.caption = 'hubgrid: Summary';
    this.poll = new IdlePoll({
      name: 'hubgrid:summary',
      tick: () => this.load(),
      hidden: () => !this.isVisible,
      base: 5000,
      max: 60000
    });
    this.unsubscribe = onSessionsChanged(() => void this.poll.refresh());
  }

  dispose(): void {
    this.poll.dispose();
    this.unsubscribe();
    super.dispose();
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    void this.poll.refresh();
  }

  private async load(): Promise<{ quiet: boolean; busy: boolean }> {
    try {
      const summary = await loadSummary(this.api);
      const text = JSON.stringify(summary);
      const quiet = text === this.last;
      this.last = text;
      this.summary = summary;
      this.error = '';
      this.update();
      return { quiet, busy: summary.sessions.pending > 0 };
    } catch (e) {
      this.error = (e as Error).message;
      this.update();
      throw e; // the poll backs off
    }
  }

  protected render(): JSX.Element {
    return (
      <>
        <div className="jp-hubgrid-header">
          <h2>Summary</h2>
          <ToolbarButtonComponent icon={refreshIcon} tooltip="Read again" onClick={() => void this.poll.refresh()} />
        </div>
        <SummaryView summary={this.summary} error={this.error} />
      </>
    );
  }

  private readonly api: HubgridApi;
  private readonly poll: IdlePoll;
  private readonly unsubscribe: () => void;
  private summary: ISummary | null = null;
  private error = '';
  private last = '';
}
