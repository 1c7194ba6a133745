/**
 * A session's own face in the main area: what it is (state, sizes, where),
 * its scheduling history (asked, queued and why, admitted where, warned,
 * kept, stopped or reclaimed, with times) and its live CPU, memory and GPU
 * use from the reclaim pass's readings. Read again every few seconds while
 * the session is running or waiting and the tab is shown. Every name,
 * reason and text is rendered as text.
 */

import { MainAreaWidget } from '@jupyterlab/apputils';
import { refreshIcon, ToolbarButtonComponent } from '@jupyterlab/ui-components';
import * as React from 'react';

import { SharesLine } from '../sharesline';
import { IAllocation } from '../summary/types';
import { HubgridApi } from './api';
import { gpuDetail, historyRows, IHistory, IUsage, usageView } from './detail';
import { sessionsIcon } from './icons';
import { sessionRow } from './model';
import { SessionPollView } from './pollview';

class DetailContent extends SessionPollView {
  constructor(api: HubgridApi, session: IAllocation) {
    super(api, session, { kind: 'detail', interval: 5000, max: 60000 });
    this.addClass('jp-hubgrid-detail');
    this.begin();
  }

  protected paused(): boolean {
    return !this.isVisible;
  }

  protected async read(): Promise<void> {
    const [session, history, usage] = await Promise.all([
      this.api.allocation(this.session.id),
      this.api.history(this.session.id),
      this.api.usage(this.session.id)
    ]);
    this.session = session;
    this.history = history;
    this.usage = usage;
  }

  protected render(): JSX.Element {
    const row = sessionRow(this.session, Date.now());
    const use = this.usage ? usageView(this.usage) : null;
    const gpu = gpuDetail(this.session);
    return (
      <div className="jp-hubgrid-detail-view" data-session={row.id}>
        <div className="jp-hubgrid-header">
          <h2 data-field="name">{row.name}</h2>
          <span className={`jp-hubgrid-state jp-mod-${row.state}`} data-field="state">{row.stateLabel}</span>
          <ToolbarButtonComponent icon={refreshIcon} tooltip="Read again"
            onClick={() => void this.load().catch(() => undefined)} />
        </div>
        {this.error && <p className="jp-hubgrid-error" role="alert">{this.error}</p>}
        <p className="jp-hubgrid-session-line" data-field="what">
          {row.type} · {row.project} · {row.group} · CPU {row.cpu} · Mem {row.mem} · GPU {row.gpu}
          {row.placement ? ` · on ${row.placement}` : ''}
          <span className="jp-hubgrid-note" title={row.id}> · id {row.shortId}</span>
        </p>
        {gpu.devices.length > 0 && (
          <p className="jp-hubgrid-session-line" data-field="gpus">{gpu.devices.join(' · ')}</p>
        )}
        <SharesLine line={gpu.shares} />
        <h3>Use now</h3>
        {use && (
          <table className="jp-hubgrid-table jp-hubgrid-usage" aria-label="use now">
            <tbody>
              <tr data-field="cpu"><th>CPU</th><td>{use.cpu}</td></tr>
              <tr data-field="mem"><th>Memory</th><td>{use.mem}</td></tr>
              <tr data-field="gpu"><th>GPU</th><td>{use.gpu}</td></tr>
              <tr data-field="read-at"><th>Read at</th><td>{use.at || '–'}</td></tr>
            </tbody>
          </table>
        )}
        {use?.note && <p className="jp-hubgrid-note" data-field="usage-note">{use.note}</p>}
        <h3>History</h3>
        <ol className="jp-hubgrid-history" aria-label="history">
          {(this.history ? historyRows(this.history) : []).map((h, i) => (
            <li key={i} data-event={h.event}>
              <span className="jp-hubgrid-history-time">{h.time}</span>{' '}
              <b className="jp-hubgrid-history-label">{h.label}</b>{' '}
              <span data-field="text">{h.text}</span>
              {h.lines.map((line, j) => (
                <div key={j} className="jp-hubgrid-reason jp-mod-wait" data-field="reason">{line}</div>
              ))}
            </li>
          ))}
        </ol>
      </div>
    );
  }

  private history: IHistory | null = null;
  private usage: IUsage | null = null;
}

/** A main-area widget with the detail view of `session`. */
export function detailWidget(api: HubgridApi, session: IAllocation): MainAreaWidget<DetailContent> {
  const content = new DetailContent(api, session);
  const widget = new MainAreaWidget({ content });
  widget.id = `jp-hubgrid-detail-${session.id}`;
  widget.title.label = `Session: ${sessionRow(session, Date.now()).name}`;
  widget.title.caption = `session ${session.id}`;
  widget.title.icon = sessionsIcon;
  widget.title.closable = true;
  return widget;
}
