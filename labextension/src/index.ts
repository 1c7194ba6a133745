import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';

import { HubgridPanel } from './panel';
import { dataPlugin } from './data/plugin';
import { summarySessionsPlugin } from './sessions/plugin';
import { statisticsPlugin } from './statistics/plugin';
import { adminOpsPlugin } from './admin/ops/plugin';
import { adminPlugin } from './admin/plugin';

/**
 * The hubgrid panel in the left sidebar: who this Lab acts as in hubgrid.
 */
const plugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyterlab-hubgrid:plugin',
  description:
    'hubgrid in JupyterLab: your quotas, sessions and data folders on a hubgrid cluster',
  autoStart: true,
  optional: [ILayoutRestorer],
  activate: (app: JupyterFrontEnd, restorer: ILayoutRestorer | null) => {
    const panel = new HubgridPanel(app.serviceManager.serverSettings);
    app.shell.add(panel, 'left', { rank: 600 });
    if (restorer) {
      restorer.add(panel, panel.id);
    }
    console.log('JupyterLab extension jupyterlab-hubgrid is activated!');
  }
};

export default [plugin, dataPlugin, summarySessionsPlugin, statisticsPlugin, adminPlugin, adminOpsPlugin];
