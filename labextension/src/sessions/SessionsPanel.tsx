/**
 * The Sessions panel of the left sidebar: every session of mine, across
 * projects and named servers, live; pending ones with the scheduler's
 * reasons, ended ones with their exit code or why they ended; start
 * (launcher dialog), stop, open, log, details (history and use); a tab
 * each for interactive and batch sessions; several stopped at once
 * (select, then one question). Every name, reason and command is rendered
 * as text.
 */

import { Dialog, Notification, showDialog, showErrorMessage } from '@jupyterlab/apputils';
import { ServerConnection } from '@jupyterlab/services';
import {
  addIcon,
  closeIcon,
  launchIcon,
  ReactWidget,
  refreshIcon,
  stopIcon,
  listIcon,
  textEditorIcon,
  ToolbarButtonComponent
} from '@jupyterlab/ui-components';
import type { Message } from '@lumino/messaging';
import * as React from 'react';

import { IAllocation } from '../summary/types';
import { sessionsIcon } from './icons';
import { askForSession } from './Launcher';
import { defaultForm, sessionImages, suggestName, userOptions } from './launch';
import { ISessionRow, safeAppUrl, serverUrl, sessionRow, visibleSessions } from './model';
import { activeCounts, endedOfTab, ofType, stopEach, stopQuestion, stopTargets, toggle } from './selection';
import { SESSION_TYPES } from '../words';
import { IReclaimable, IReclaimRow, reclaimRow } from './reclaim';
import { ReclaimLine } from './ReclaimLine';
import { SessionsStore } from './store';

export interface ISessionActions {
  open(url: string): void;
  log(session: IAllocation): void;
  /** its detail view: history and use */
  details(session: IAllocation): void;
}

function useTick(ms: number): void {
  const [, setTick] = React.useState(0);
  React.useEffect(() => {
    const timer = setInterval(() => document.hidden || setTick(t => t + 1), ms);
    return () => clearInterval(timer);
  }, [ms]);
}

function SessionCard(props: {
  session: IAllocation;
  row: ISessionRow;
  openUrl: string | null;
  reclaim: IReclaimRow | null;
  onStop: () => void;
  onKeep: () => void;
  actions: ISessionActions;
  /** a check box to select it (active sessions only) */
  selected?: boolean;
  onSelect?: () => void;
}): JSX.Element {
  const { row, session } = props;
  const extraApps = row.apps.filter(app => safeAppUrl(app.url) && app.url !== props.openUrl);
  return (
    <li className="jp-hubgrid-session" data-session={row.id} data-name={row.name} data-state={row.state}
      data-reclaim-deadline={props.reclaim?.deadline || undefined}>
      <div className="jp-hubgrid-session-head">
        {props.onSelect && (
          <input type="checkbox" className="jp-hubgrid-select" checked={!!props.selected}
            aria-label={`select ${row.name}`} onChange={props.onSelect} />
        )}
        <span className="jp-hubgrid-name" data-field="name" title={`session ${row.id}`}>{row.name}</span>
        <span className={`jp-hubgrid-state jp-mod-${row.state}`} data-field="state">{row.stateLabel}</span>
        <span className="jp-hubgrid-elapsed" data-field="elapsed" title="elapsed">{row.elapsed}</span>
      </div>
      <div className="jp-hubgrid-session-line">
        <span data-field="project">{row.project}</span> · <span data-field="group">{row.group}</span> ·{' '}
        {row.type}
        {row.image ? <> · <span data-field="image">{row.image}</span></> : null}
      </div>
      <div className="jp-hubgrid-session-line" data-field="sizes">
        CPU {row.cpu} · Mem {row.mem} · GPU {row.gpu}
      </div>
      {props.reclaim && <ReclaimLine reclaim={props.reclaim} onKeep={props.onKeep} />}
      {row.placement && <div className="jp-hubgrid-session-line">on {row.placement}</div>}
      {row.command && (
        <div className="jp-hubgrid-session-line">
          runs <code>{row.command}</code>
        </div>
      )}
      {row.reasons.map((r, i) => (
        <div key={i} className={`jp-hubgrid-reason jp-mod-${r.kind}`} data-field="reason">
          {r.kind === 'refuse' ? 'refused: ' : 'waits: '}
          {r.text}
        </div>
      ))}
      {row.ended && (
        <div className="jp-hubgrid-ended" data-field="ended">
          {row.ended}
        </div>
      )}
      <div className="jp-hubgrid-session-actions">
        {props.openUrl && (
          <ToolbarButtonComponent icon={launchIcon} label="Open" tooltip="Open this session in a new tab"
            onClick={() => props.actions.open(props.openUrl!)} />
        )}
        {extraApps.map(app => (
          <ToolbarButtonComponent key={app.name} icon={launchIcon} label={app.name} tooltip={`Open ${app.name}`}
            onClick={() => props.actions.open(safeAppUrl(app.url)!)} />
        ))}
        <ToolbarButtonComponent icon={textEditorIcon} label="Log" tooltip="Show its log"
          onClick={() => props.actions.log(session)} />
        <ToolbarButtonComponent icon={listIcon} label="Details" tooltip="Its history and use now"
          onClick={() => props.actions.details(session)} />
        {row.active && (
          <ToolbarButtonComponent icon={stopIcon} label={row.state === 'pending' ? 'Cancel' : 'Stop'}
            tooltip={row.state === 'pending' ? 'Take it out of the queue' : 'Stop this session'}
            onClick={props.onStop} />
        )}
      </div>
    </li>
  );
}

function SessionsView(props: { store: SessionsStore; actions: ISessionActions; onNew: () => void }): JSX.Element {
  const { store, actions } = props;
  const [, setVersion] = React.useState(0);
  React.useEffect(() => store.subscribe(() => setVersion(v => v + 1)), [store]);
  const [tab, setTab] = React.useState(SESSION_TYPES[0].type);
  const [selected, setSelected] = React.useState<ReadonlySet<string>>(new Set());
  useTick(1000);

  if (!store.loaded) {
    return store.error ? <p className="jp-hubgrid-error" role="alert">{store.error}</p> : <p>Loading…</p>;
  }
  const me = store.me!;
  const now = Date.now();
  const counts = activeCounts(store.allocations.filter(a => a.user === me.name));
  const { active, ended } = visibleSessions(ofType(store.allocations, tab), me.name, store.endedWanted);
  const endedTab = endedOfTab(store.allocations.filter(a => a.user === me.name), tab, ended, store.endedTotal);
  const targets = stopTargets(active, selected);

  const openUrl = (a: IAllocation): string | null => {
    if (a.state !== 'allocated') {
      return null;
    }
    const server = store.servers[a.server_name ?? ''];
    if (a.origin === 'hub' && server) {
      return server.ready ? safeAppUrl(server.url) : null;
    }
    if (a.origin === 'hub' && !Object.keys(store.servers).length) {
      return serverUrl(a.user, a.server_name ?? ''); // the hub's view is not available here
    }
    return safeAppUrl(a.apps?.[0]?.url);
  };

  const stop = async (a: IAllocation) => {
    const row = sessionRow(a, Date.now());
    const verb = a.state === 'pending' ? 'Cancel' : 'Stop';
    const answer = await showDialog({
      title: `${verb} session ${row.name}?`,
      body: a.state === 'pending' ? 'It leaves the queue.' : 'Its processes end; files in its folders stay.',
      buttons: [Dialog.cancelButton({ label: 'Keep it' }), Dialog.warnButton({ label: verb })]
    });
    if (!answer.button.accept) {
      return;
    }
    try {
      await store.stop(a);
    } catch (e) {
      await showErrorMessage(`Session ${row.name} was not stopped`, (e as Error).message);
    }
  };

  const keep = async (a: IAllocation) => {
    try {
      await store.keep(a);
    } catch (e) {
      await showErrorMessage(`Session ${sessionRow(a, Date.now()).name} was not kept`, (e as Error).message);
    }
  };

  const stopSelected = async () => {
    const question = stopQuestion(targets, Date.now());
    const answer = await showDialog({
      title: question.title,
      body: question.body,
      buttons: [Dialog.cancelButton({ label: 'Keep them' }), Dialog.warnButton({ label: 'Stop' })]
    });
    if (!answer.button.accept) {
      return;
    }
    const report = await stopEach(targets, a => store.stop(a), Date.now());
    setSelected(new Set());
    if (report.failed.length) {
      await showErrorMessage(
        `${report.failed.length} of ${targets.length} sessions were not stopped`,
        report.failed.map(f => `${f.name}: ${f.message}`).join('\n')
      );
    }
  };

  const hubPending = (a: IAllocation) =>
    a.origin === 'hub' ? store.servers[a.server_name ?? '']?.pending : null;
  const card = (a: IAllocation) => (
    <SessionCard key={a.id} session={a} row={sessionRow(a, now, hubPending(a))} openUrl={openUrl(a)}
      reclaim={reclaimRow(a as IReclaimable, now, store.kept.get(a.id))}
      onStop={() => void stop(a)} onKeep={() => void keep(a)} actions={actions}
      selected={selected.has(a.id)}
      onSelect={sessionRow(a, now).active ? () => setSelected(s => toggle(s, a.id)) : undefined} />
  );
  return (
    <div className="jp-hubgrid-sessions">
      {store.error && <p className="jp-hubgrid-error" role="alert">{store.error}</p>}
      {store.failures.map(f => (
        <div key={f.name} className="jp-hubgrid-failure" role="alert" data-failed={f.name}>
          <span className="jp-hubgrid-failure-text">
            <b>{f.name}</b> did not start: <span data-field="reason">{f.message}</span>
          </span>
          <ToolbarButtonComponent icon={closeIcon} tooltip="Dismiss" onClick={() => store.dismissFailure(f.name)} />
        </div>
      ))}
      <div className="jp-hubgrid-tabs" role="tablist" aria-label="session types">
        {SESSION_TYPES.map(t => (
          <button key={t.type} role="tab" aria-selected={tab === t.type} data-tab={t.type}
            className={`jp-mod-styled${tab === t.type ? ' jp-mod-active' : ''}`}
            onClick={() => {
              setTab(t.type);
              setSelected(new Set());
            }}>
            {t.label} ({counts[t.type] ?? 0})
          </button>
        ))}
      </div>
      <h3>Running and waiting ({active.length})</h3>
      {targets.length > 0 && (
        <p className="jp-hubgrid-selection">
          {targets.length} selected{' '}
          <button className="jp-mod-styled jp-mod-warn" data-action="stop-selected" onClick={() => void stopSelected()}>
            Stop selected ({targets.length})
          </button>{' '}
          <button className="jp-mod-styled" onClick={() => setSelected(new Set())}>Clear</button>
        </p>
      )}
      {active.length === 0 ? (
        <p className="jp-hubgrid-note">
          No session is running.{' '}
          <button className="jp-mod-styled jp-mod-accept" onClick={props.onNew}>Start one</button>
        </p>
      ) : (
        <ul className="jp-hubgrid-session-list" aria-label="active sessions">{active.map(card)}</ul>
      )}
      {endedTab.count !== '0' && (
        <>
          <h3>Ended ({endedTab.count})</h3>
          <ul className="jp-hubgrid-session-list" aria-label="ended sessions">{ended.map(card)}</ul>
          {endedTab.more && (
            <button className="jp-mod-styled" onClick={() => void store.showMoreEnded().catch(() => undefined)}>
              Show more
            </button>
          )}
        </>
      )}
    </div>
  );
}

/** The Sessions panel. */
export class SessionsPanel extends ReactWidget {
  constructor(
    settings: ServerConnection.ISettings,
    private readonly actions: ISessionActions
  ) {
    super();
    this.id = 'jp-hubgrid-sessions';
    this.addClass('jp-hubgrid-panel');
    this.title.icon = sessionsIcon;
    this.title.caption = 'hubgrid: Sessions';
    this.store = new SessionsStore(settings, () => !this.isVisible);
  }

  readonly store: SessionsStore;

  dispose(): void {
    this.store.dispose();
    super.dispose();
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    void this.store.refresh();
  }

  /** The launcher dialog, then the start through the hub. */
  async newSession(): Promise<void> {
    const store = this.store;
    const api = store.api;
    try {
      const me = store.me ?? (store.me = await api.me());
      const [groups, images, folders, presets] = await Promise.all([
        api.groups(),
        api.images().catch(() => []),
        api.folders().catch(() => []),
        api.presets()
      ]);
      const taken = Object.keys(store.servers);
      const choices = {
        me,
        groups: groups.filter(g => g.active),
        images: sessionImages(images),
        folders: folders.filter(f => (f.status ?? 'active') === 'active').map(f => f.name),
        taken,
        presets
      };
      const random = Math.random().toString(16).slice(2) + Date.now().toString(16);
      const form = {
        ...defaultForm(me.projects.map(p => p.name), choices.groups.map(g => g.name), presets),
        name: suggestName(random, taken)
      };
      const chosen = await askForSession(api, choices, form);
      if (chosen && !(await store.start(chosen.name, userOptions(chosen)))) {
        Notification.info(`Session ${chosen.name} was stopped before it was up.`, { autoClose: 5000 });
      }
    } catch (e) {
      await showErrorMessage('The session did not start', (e as Error).message);
    }
  }

  protected render(): JSX.Element {
    return (
      <>
        <div className="jp-hubgrid-header">
          <h2>Sessions</h2>
          <ToolbarButtonComponent icon={addIcon} tooltip="Start a session" label="New"
            onClick={() => void this.newSession()} />
          <ToolbarButtonComponent icon={refreshIcon} tooltip="Read again" onClick={() => void this.store.refresh()} />
        </div>
        <SessionsView store={this.store} actions={this.actions} onNew={() => void this.newSession()} />
      </>
    );
  }
}
