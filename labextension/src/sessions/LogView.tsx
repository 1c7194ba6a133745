/**
 * A session's log in the main area: follows the output live while the
 * session runs (a poll that pauses while the tab is hidden), searchable
 * (plain text, matches marked), downloadable; the end says how it ended.
 * Every line is rendered as text.
 */

import { MainAreaWidget } from '@jupyterlab/apputils';
import { downloadIcon, refreshIcon, ToolbarButtonComponent } from '@jupyterlab/ui-components';
import * as React from 'react';

import { IAllocation } from '../summary/types';
import { HubgridApi } from './api';
import { sessionsIcon } from './icons';
import { ILogBuffer, logFileName, pieces, plainLog, searchLog, withPart } from './log';
import { sessionRow } from './model';
import { SessionPollView } from './pollview';

/** at most this much of the log's end is read first (the whole log is downloadable) */
const TAIL = 1 << 20;
/** the view keeps at most this many characters of the newest output it followed */
const KEEP = 4 << 20;

class LogContent extends SessionPollView {
  constructor(api: HubgridApi, session: IAllocation) {
    super(api, session, { kind: 'log', interval: 2000, max: 30000 });
    this.addClass('jp-hubgrid-log');
    this.begin();
  }

  protected paused(): boolean {
    return !this.follow;
  }

  /** Read it all again (its last TAIL bytes), whatever the poll does. */
  private reload(): void {
    this.buffer = null;
    this.load().catch(() => undefined); // the error is shown
  }

  /** The session's state, then what its log has after what is shown (its last words too, once it ended). */
  protected async read(): Promise<boolean> {
    const before = this.buffer;
    const asked = before ? before.end : null;
    const session = await this.api.allocation(this.session.id);
    const part = await this.api.logPart(this.session.id, asked === null ? { tail: TAIL } : { offset: asked });
    if (this.buffer !== before) {
      return false; // another read went on meanwhile: its text holds this one's
    }
    this.session = session;
    this.buffer = withPart(before, part, asked, KEEP);
    if (this.buffer.raw !== before?.raw) {
      this.text = plainLog(this.buffer.raw); // nothing new: the text shown stands
    }
    return true;
  }

  protected onUpdateRequest(msg: any): void {
    super.onUpdateRequest(msg);
    if (this.follow) {
      requestAnimationFrame(() => {
        const pre = this.node.querySelector('.jp-hubgrid-log-lines');
        if (pre) {
          pre.scrollTop = pre.scrollHeight;
        }
      });
    }
  }

  private async download(): Promise<void> {
    let text = this.text;
    try {
      text = await this.api.log(this.session.id);
    } catch {
      // keep what is shown
    }
    const url = URL.createObjectURL(new Blob([text], { type: 'text/plain;charset=utf-8' }));
    const a = document.createElement('a');
    a.href = url;
    a.download = logFileName(sessionRow(this.session, Date.now()).name, this.session.id);
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  }

  protected render(): JSX.Element {
    const row = sessionRow(this.session, Date.now());
    const view = searchLog(this.text, this.query, this.buffer?.cutLines ?? 0);
    return (
      <div className="jp-hubgrid-log-view">
        <div className="jp-hubgrid-log-bar">
          <label>
            <input type="checkbox" checked={this.follow} aria-label="Follow"
              onChange={e => {
                this.follow = e.target.checked;
                this.update();
                void this.poll.refresh();
              }} />
            Follow
          </label>
          <input type="search" placeholder="Search the log" value={this.query} aria-label="Search the log"
            onChange={e => {
              this.query = e.target.value;
              this.update();
            }} />
          <span className="jp-hubgrid-note" data-field="matches">
            {this.query ? `${view.matchCount} matches in ${view.shown} of ${view.total} lines` : `${view.total} lines`}
          </span>
          <ToolbarButtonComponent icon={refreshIcon} tooltip="Read again" onClick={() => this.reload()} />
          <ToolbarButtonComponent icon={downloadIcon} tooltip="Download the log" label="Download"
            onClick={() => void this.download()} />
        </div>
        {this.error && <p className="jp-hubgrid-error" role="alert">{this.error}</p>}
        <pre className="jp-hubgrid-log-lines" aria-label={`log of ${row.name}`}>
          {view.lines.map(line => (
            <div key={line.n} className="jp-hubgrid-log-line">
              <span className="jp-hubgrid-log-n">{line.n}</span>
              {pieces(line).map((p, i) => (p.match ? <mark key={i}>{p.text}</mark> : <span key={i}>{p.text}</span>))}
            </div>
          ))}
        </pre>
        <p className="jp-hubgrid-log-status" data-field="status">
          {row.name}: {row.stateLabel}
          {row.ended ? ` (${row.ended})` : ''}
          {row.active && this.follow ? ' · following' : ''}
        </p>
      </div>
    );
  }

  private buffer: ILogBuffer | null = null;
  private text = '';
  private query = '';
  private follow = true;
}

/** A main-area widget with the log of `session`. */
export function logWidget(api: HubgridApi, session: IAllocation): MainAreaWidget<LogContent> {
  const content = new LogContent(api, session);
  const widget = new MainAreaWidget({ content });
  const row = sessionRow(session, Date.now());
  widget.id = `jp-hubgrid-log-${session.id}`;
  widget.title.label = `Log: ${row.name}`;
  widget.title.icon = sessionsIcon;
  widget.title.closable = true;
  return widget;
}
