/**
 * The Statistics page's plugin: a command that opens (or shows) the
 * "Usage statistics" page in the main area, from the command palette,
 * the Lab launcher and the Help menu; a page left open comes back after
 * a reload.
 */

import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, MainAreaWidget, WidgetTracker } from '@jupyterlab/apputils';
import { ILauncher } from '@jupyterlab/launcher';
import { IMainMenu } from '@jupyterlab/mainmenu';

import { statisticsIcon } from './icons';
import { statisticsWidget, StatisticsView } from './StatisticsPage';

export const SHOW_STATISTICS = 'hubgrid:show-statistics';

export const statisticsPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyterlab-hubgrid:statistics',
  description: 'hubgrid usage statistics: GPU-, core- and GiB-hours per day, a table and a CSV',
  autoStart: true,
  optional: [ICommandPalette, ILauncher, IMainMenu, ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    palette: ICommandPalette | null,
    launcher: ILauncher | null,
    menu: IMainMenu | null,
    restorer: ILayoutRestorer | null
  ) => {
    const tracker = new WidgetTracker<MainAreaWidget<StatisticsView>>({ namespace: 'hubgrid-statistics' });
    app.commands.addCommand(SHOW_STATISTICS, {
      label: args => (args.isLauncher ? 'Usage statistics' : 'hubgrid: Usage Statistics'),
      caption: 'GPU-, core- and GiB-hours per day and per user or project, with a CSV',
      icon: statisticsIcon,
      execute: () => {
        let page = tracker.currentWidget;
        if (!page || page.isDisposed) {
          page = statisticsWidget(app.serviceManager.serverSettings);
          void tracker.add(page);
          app.shell.add(page, 'main');
        } else {
          page.content.refresh();
        }
        app.shell.activateById(page.id);
      }
    });
    palette?.addItem({ command: SHOW_STATISTICS, category: 'hubgrid' });
    launcher?.add({ command: SHOW_STATISTICS, category: 'hubgrid', rank: 50, args: { isLauncher: true } });
    menu?.helpMenu.addGroup([{ command: SHOW_STATISTICS }], 60);
    if (restorer) {
      void restorer.restore(tracker, { command: SHOW_STATISTICS, name: () => 'statistics' });
    }
  }
};
