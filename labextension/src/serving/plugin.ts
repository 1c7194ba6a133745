/**
 * The Serving page's plugin: a command "hubgrid: Serving" (palette,
 * launcher) that opens (or shows) the page in the main area; a replica's
 * log opens in the Sessions panel's log view (its session's log:
 * `GET allocations/{id}/logs`, which the endpoint's creator and admins may read).
 */

import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, MainAreaWidget } from '@jupyterlab/apputils';
import { ILauncher } from '@jupyterlab/launcher';

import { addPageCommand } from '../pagecommand';
import { logWidget } from '../sessions/LogView';
import { ServingApi } from './api';
import { servingIcon } from './icons';
import { servingWidget } from './ServingPage';

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
    addPageCommand(app, {
      command: SHOW_SERVING,
      name: 'serving',
      label: 'Serving',
      caption: 'Model-serving endpoints: create from a model folder, replicas, health, logs, tokens, scale',
      icon: servingIcon,
      rank: 60,
      make: () => servingWidget(app.serviceManager.serverSettings, openLog),
      refresh: page => page.content.refresh()
    }, palette, launcher, restorer);
  }
};
