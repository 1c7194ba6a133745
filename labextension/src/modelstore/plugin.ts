/**
 * The Model Store page's plugin: a command that opens (or shows) the
 * "Model Store" page in the main area, from the command palette and the
 * Lab launcher; a page left open comes back after a reload.
 */

import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, MainAreaWidget, WidgetTracker } from '@jupyterlab/apputils';
import { ILauncher } from '@jupyterlab/launcher';

import { modelStoreIcon } from './icons';
import { modelStoreWidget, ModelStoreView } from './StorePage';

export const SHOW_MODEL_STORE = 'hubgrid:show-model-store';

export const modelStorePlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyterlab-hubgrid:model-store',
  description: 'hubgrid Model Store: published models, deployed in one click after a check',
  autoStart: true,
  optional: [ICommandPalette, ILauncher, ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    palette: ICommandPalette | null,
    launcher: ILauncher | null,
    restorer: ILayoutRestorer | null
  ) => {
    const tracker = new WidgetTracker<MainAreaWidget<ModelStoreView>>({ namespace: 'hubgrid-model-store' });
    app.commands.addCommand(SHOW_MODEL_STORE, {
      label: args => (args.isLauncher ? 'Model Store' : 'hubgrid: Model Store'),
      caption: 'Models an admin published: their cards, and a deploy in one click after a check',
      icon: modelStoreIcon,
      execute: () => {
        let page = tracker.currentWidget;
        if (!page || page.isDisposed) {
          page = modelStoreWidget(app.serviceManager.serverSettings, app.commands);
          void tracker.add(page);
          app.shell.add(page, 'main');
        } else {
          page.content.refresh();
        }
        app.shell.activateById(page.id);
      }
    });
    palette?.addItem({ command: SHOW_MODEL_STORE, category: 'hubgrid' });
    launcher?.add({ command: SHOW_MODEL_STORE, category: 'hubgrid', rank: 62, args: { isLauncher: true } });
    if (restorer) {
      void restorer.restore(tracker, { command: SHOW_MODEL_STORE, name: () => 'model-store' });
    }
  }
};
