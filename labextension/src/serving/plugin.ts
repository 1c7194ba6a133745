/**
 * The Serving page's plugin: a command "hubgrid: Serving" (palette,
 * launcher) that opens (or shows) the page in the main area; a replica's
 * log opens in the Sessions panel's log view (its session's log:
 * `GET allocations/{id}/logs`, which the endpoint's creator and admins may read).
 */

import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, MainAreaWidget, WidgetTracker } from '@jupyterlab/apputils';
import { ILauncher } from '@jupyterlab/launcher';

import { logWidget } from '../sessions/LogView';
import { ServingApi } from './api';
import { servingIcon } from './icons';
import { servingWidget, ServingView } from './ServingPage';

export const SHOW_SERVING = 'hubgrid:show-serving';

export const servingPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyterlab-hubgrid:serving',
  description: 'hubgrid model serving: endpoints, their replicas, health, logs, tokens and scale',
  autoStart: true,
  optional: [ICommandPalette, ILauncher, ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    palette: ICommandPalette | null,
    launcher: ILauncher | null,
    restorer: ILayoutRestorer | null
  ) => {
    const tracker = new WidgetTracker<MainAreaWidget<ServingView>>({ namespace: 'hubgrid-serving' });
    const logs = new Map<string, MainAreaWidget>();
    const openLog = async (api: ServingApi, allocation: string): Promise<void> => {
      let widget = logs.get(allocation);
      if (!widget || widget.isDisposed) {
        const session = await api.hubgrid.allocation(allocation);
        widget = logWidget(api.hubgrid, session);
        logs.set(allocation, widget);
        app.shell.add(widget, 'main', { mode: 'split-bottom' });
      }
      app.shell.activateById(widget.id);
    };
    app.commands.addCommand(SHOW_SERVING, {
      label: args => (args.isLauncher ? 'Serving' : 'hubgrid: Serving'),
      caption: 'Model-serving endpoints: create from a model folder, replicas, health, logs, tokens, scale',
      icon: servingIcon,
      execute: () => {
        let page = tracker.currentWidget;
        if (!page || page.isDisposed) {
          page = servingWidget(app.serviceManager.serverSettings, openLog);
          void tracker.add(page);
          app.shell.add(page, 'main');
        } else {
          page.content.refresh();
        }
        app.shell.activateById(page.id);
      }
    });
    palette?.addItem({ command: SHOW_SERVING, category: 'hubgrid' });
    launcher?.add({ command: SHOW_SERVING, category: 'hubgrid', rank: 60, args: { isLauncher: true } });
    if (restorer) {
      void restorer.restore(tracker, { command: SHOW_SERVING, name: () => 'serving' });
    }
  }
};
