/**
 * The Summary and Sessions menus: two left-sidebar panels, a main-area log
 * view and detail view (history, use) per session, reclaim warnings as notifications, and commands (start
 * a session, show either panel).
 */

import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette, MainAreaWidget } from '@jupyterlab/apputils';

import { SummaryPanel } from '../summary/SummaryPanel';
import { detailWidget } from './DetailView';
import { logWidget } from './LogView';
import { ReclaimNotifier } from './notices';
import { ReclaimBanner } from './reclaimbanner';
import { SessionsPanel } from './SessionsPanel';

export const COMMANDS = {
  newSession: 'hubgrid:new-session',
  showSummary: 'hubgrid:show-summary',
  showSessions: 'hubgrid:show-sessions'
};

export const summarySessionsPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyterlab-hubgrid:summary-sessions',
  description: 'hubgrid Summary (limits, use, GPU map) and Sessions (live list, launcher, logs)',
  autoStart: true,
  optional: [ILayoutRestorer, ICommandPalette],
  activate: (
    app: JupyterFrontEnd,
    restorer: ILayoutRestorer | null,
    palette: ICommandPalette | null
  ) => {
    const settings = app.serviceManager.serverSettings;
    // one tab per session and kind (its log, its details), brought forward when open
    const tabs = new Map<string, MainAreaWidget>();
    const openTab = (key: string, make: () => MainAreaWidget): void => {
      let widget = tabs.get(key);
      if (!widget || widget.isDisposed) {
        widget = make();
        tabs.set(key, widget);
        app.shell.add(widget, 'main');
      }
      app.shell.activateById(widget.id);
    };
    const sessions = new SessionsPanel(settings, {
      open: url => window.open(url, '_blank', 'noopener'),
      log: session => openTab(`log:${session.id}`, () => logWidget(sessions.store.api, session)),
      details: session =>
        openTab(`details:${session.id}`, () => detailWidget(sessions.store.api, session))
    });
    // idle reclamation's warnings, notified once each (with "Keep it"), panel shown or not
    // and this Lab's own session's warning as a banner across the Lab, with a countdown
    const banner = new ReclaimBanner(settings, async a => {
      await sessions.store.keep(a);
    });
    app.shell.add(banner, 'top', { rank: 1000 });
    new ReclaimNotifier(sessions.store, banner);
    const summary = new SummaryPanel(settings);
    app.shell.add(summary, 'left', { rank: 601 });
    app.shell.add(sessions, 'left', { rank: 602 });
    if (restorer) {
      restorer.add(summary, summary.id);
      restorer.add(sessions, sessions.id);
    }
    app.commands.addCommand(COMMANDS.newSession, {
      label: 'hubgrid: Start a Session…',
      execute: () => sessions.newSession()
    });
    app.commands.addCommand(COMMANDS.showSummary, {
      label: 'hubgrid: Show Summary',
      execute: () => app.shell.activateById(summary.id)
    });
    app.commands.addCommand(COMMANDS.showSessions, {
      label: 'hubgrid: Show Sessions',
      execute: () => app.shell.activateById(sessions.id)
    });
    if (palette) {
      for (const command of Object.values(COMMANDS)) {
        palette.addItem({ command, category: 'hubgrid' });
      }
    }
  }
};
