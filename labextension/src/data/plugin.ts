/**
 * The Data menu's plugin: the Data panel in the left sidebar, and a
 * main-area view per open folder.
 */

import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { MainAreaWidget } from '@jupyterlab/apputils';
import { ReactWidget } from '@jupyterlab/ui-components';

import { DataPanel } from './DataPanel';
import { folderWidget } from './FileBrowser';
import { IFolderRow } from './folders';
import { DataModel } from './model';

export const dataPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyterlab-hubgrid:data',
  description: 'hubgrid data: folders, their files, invitations and mounts',
  autoStart: true,
  optional: [ILayoutRestorer],
  activate: (app: JupyterFrontEnd, restorer: ILayoutRestorer | null) => {
    const model = new DataModel(app.serviceManager.serverSettings);
    const open = new Map<string, MainAreaWidget<ReactWidget>>();
    const openFolder = (row: IFolderRow) => {
      let widget = open.get(row.id);
      if (!widget || widget.isDisposed) {
        widget = folderWidget(model, row);
        open.set(row.id, widget);
        widget.disposed.connect(() => open.delete(row.id));
        app.shell.add(widget, 'main');
      }
      app.shell.activateById(widget.id);
    };
    const panel = new DataPanel(model, openFolder);
    app.shell.add(panel, 'left', { rank: 610 });
    if (restorer) {
      restorer.add(panel, panel.id);
    }
  }
};
