/**
 * The "Usage statistics" page (a main-area widget): a period picker,
 * whose usage (mine; my domain's or everyone's for admins), a grouping,
 * a daily plot per slot, a table of exact figures and a CSV download.
 * Thin: the request, plots and table come from query.ts, plot.ts and
 * table.ts; every name is rendered as text.
 */

import { MainAreaWidget } from '@jupyterlab/apputils';
import { ServerConnection } from '@jupyterlab/services';
import { ReactWidget } from '@jupyterlab/ui-components';
import * as React from 'react';

import { saveBlob } from '../download';
import { StatisticsApi } from './api';
import { statisticsIcon } from './icons';
import { Controls } from './Controls';
import { addDays, asOfText, describePeriod, IPeriod, PeriodChoice, resolvePeriod, utcDay } from './period';
import { plotData, PLOTS } from './plot';
import { ICaller, IUsageQuery, Scope } from './query';
import { tableModel } from './table';
import { Grouping, IUsageReport } from './types';
import { UsageChart } from './UsageChart';
import { UsageTable } from './UsageTable';

/** The page's content: reads `GET me` once, then the report for each choice. */
export class StatisticsView extends ReactWidget {
  constructor(settings: ServerConnection.ISettings) {
    super();
    this.api = new StatisticsApi(settings);
    this.addClass('jp-hubgrid-stats');
    const today = utcDay(new Date());
    this.draft = { from: addDays(today, -6), to: today };
    void this.start();
  }

  /** Read again (after a session change, or on demand). */
  refresh(): void {
    void this.load();
  }

  private async start(): Promise<void> {
    try {
      this.me = await this.api.me();
    } catch (e) {
      this.error = `Cannot read who you are: ${(e as Error).message}`;
      this.update();
      return;
    }
    await this.load();
  }

  private query(): IUsageQuery | null {
    const resolved = resolvePeriod(this.choice, new Date());
    if ('error' in resolved) {
      this.error = resolved.error;
      return null;
    }
    return { period: resolved.period, scope: this.scope, by: this.by };
  }

  private async load(): Promise<void> {
    if (!this.me) {
      return;
    }
    const q = this.query();
    if (!q) {
      this.update();
      return;
    }
    const ticket = ++this.ticket;
    this.busy = true;
    this.update();
    try {
      const report = await this.api.report(this.me, q);
      if (ticket !== this.ticket) {
        return; // a newer choice is on its way
      }
      this.report = report;
      this.period = q.period;
      this.error = '';
    } catch (e) {
      if (ticket === this.ticket) {
        this.error = (e as Error).message;
      }
    } finally {
      if (ticket === this.ticket) {
        this.busy = false;
        this.update();
      }
    }
  }

  private async downloadCsv(): Promise<void> {
    const q = this.query();
    if (!this.me || !q) {
      this.update();
      return;
    }
    try {
      const { blob, name } = await this.api.csv(this.me, q);
      saveBlob(blob, name);
    } catch (e) {
      this.error = (e as Error).message;
      this.update();
    }
  }

  protected render(): JSX.Element {
    const me = this.me;
    const report = this.report;
    return (
      <div className="jp-hubgrid-stats-page">
        <h2>Usage statistics</h2>
        {me && (
          <Controls
            me={me}
            choice={this.choice}
            draft={this.draft}
            scope={this.scope}
            by={this.by}
            busy={this.busy}
            onPreset={value => {
              this.choice = value === 'range'
                ? { kind: 'range', ...this.draft }
                : { kind: 'last', days: Number(value) };
              void this.load();
            }}
            onDraft={draft => { this.draft = draft; this.update(); }}
            onApplyRange={() => { this.choice = { kind: 'range', ...this.draft }; void this.load(); }}
            onScope={scope => { this.scope = scope; void this.load(); }}
            onBy={by => { this.by = by; this.sort = null; void this.load(); }}
            onRefresh={() => void this.load()}
            onCsv={() => void this.downloadCsv()}
          />
        )}
        {this.error && <p className="jp-hubgrid-error" role="alert">{this.error}</p>}
        {!report && !this.error && <p>Loading…</p>}
        {report && this.period && (
          <>
            <p className="jp-hubgrid-note" data-field="period">
              {describePeriod(this.period)}, as of {asOfText(report.as_of)}
              {' · '}
              {report.total.sessions} session{report.total.sessions === 1 ? '' : 's'}, {report.total.running} running
              {this.busy ? ' · reading…' : ''}
            </p>
            <div className="jp-hubgrid-stats-plots">
              {PLOTS.map(spec => (
                <UsageChart key={spec.figure} spec={spec} plot={plotData(report, spec.figure)} />
              ))}
            </div>
            <UsageTable
              table={tableModel(report)}
              sort={this.sort}
              onSort={column => {
                this.sort = this.sort?.column === column
                  ? { column, descending: !this.sort.descending }
                  : { column, descending: true };
                this.update();
              }}
            />
          </>
        )}
      </div>
    );
  }

  private readonly api: StatisticsApi;
  private me: ICaller | null = null;
  private choice: PeriodChoice = { kind: 'last', days: 30 };
  private draft: { from: string; to: string };
  private scope: Scope = 'mine';
  private by: Grouping = 'user';
  private sort: { column: number; descending: boolean } | null = null;
  private report: IUsageReport | null = null;
  private period: IPeriod | null = null;
  private error = '';
  private busy = false;
  private ticket = 0;
}

/** The page as a main-area widget. */
export function statisticsWidget(settings: ServerConnection.ISettings): MainAreaWidget<StatisticsView> {
  const content = new StatisticsView(settings);
  const widget = new MainAreaWidget({ content });
  widget.id = 'jp-hubgrid-statistics';
  widget.title.label = 'Usage statistics';
  widget.title.icon = statisticsIcon;
  widget.title.closable = true;
  return widget;
}
