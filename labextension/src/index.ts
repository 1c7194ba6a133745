import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';

import { dataPlugin } from './data/plugin';
import { summarySessionsPlugin } from './sessions/plugin';
import { reclaimGuardPlugin } from './sessions/guard';
import { statisticsPlugin } from './statistics/plugin';
import { chatPlugin } from './chat/plugin';
import { servingPlugin } from './serving/plugin';
import { adminOpsPlugin } from './admin/ops/plugin';
import { adminPlugin } from './admin/plugin';
import { modelStorePlugin } from './modelstore/plugin';

/**
 * The extension's own plugin: says it is active (the Summary, Sessions and
 * Data panels, the Statistics page and the admin pages are the plugins below).
 */
const plugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyterlab-hubgrid:plugin',
  description:
    'hubgrid in JupyterLab: your quotas, sessions and data folders on a hubgrid cluster',
  autoStart: true,
  activate: (app: JupyterFrontEnd) => {
    console.log('JupyterLab extension jupyterlab-hubgrid is activated!');
  }
};

export default [plugin, dataPlugin, summarySessionsPlugin, statisticsPlugin, adminPlugin, adminOpsPlugin, reclaimGuardPlugin, chatPlugin, servingPlugin, modelStorePlugin];
