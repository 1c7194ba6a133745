/**
 * The Model Store page's plugin: a command that opens (or shows) the
 * "Model Store" page in the main area, from the command palette and the
 * Lab launcher; a page left open comes back after a reload.
 */

import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { ILauncher } from '@jupyterlab/launcher';

import { modelStoreIcon } from './icons';
import { addPageCommand } from '../pagecommand';
import { modelStoreWidget } from './StorePage';

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
    addPageCommand(app, {
      command: SHOW_MODEL_STORE,
      name: 'model-store',
      label: 'Model Store',
      caption: 'Models an admin published: their cards, and a deploy in one click after a check',
      icon: modelStoreIcon,
      rank: 62,
      make: () => modelStoreWidget(app.serviceManager.serverSettings, app.commands),
      refresh: page => page.content.refresh()
    }, palette, launcher, restorer);
  }
};
