/**
 * A main-area page's command, as the Serving, Chat and Model Store pages
 * have it: "hubgrid: <label>" in the command palette and "<label>" in the
 * Lab launcher; it opens the page, or shows (and refreshes) the one open;
 * a page left open comes back after a reload (the layout restorer).
 */

import { ILayoutRestorer, JupyterFrontEnd } from '@jupyterlab/application';
import { ICommandPalette, MainAreaWidget, WidgetTracker } from '@jupyterlab/apputils';
import { ILauncher } from '@jupyterlab/launcher';
import { LabIcon } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';

export interface IPageCommand<T extends Widget> {
  /** the command's id, e.g. 'hubgrid:show-serving' */
  command: string;
  /** the tracker's namespace and the restored page's name */
  name: string;
  label: string;
  caption: string;
  icon: LabIcon;
  /** the launcher's rank among hubgrid's items */
  rank: number;
  /** a new page */
  make: () => MainAreaWidget<T>;
  /** what showing an open page again does (nothing if not given) */
  refresh?: (page: MainAreaWidget<T>) => void;
}

export function addPageCommand<T extends Widget>(
  app: JupyterFrontEnd,
  spec: IPageCommand<T>,
  palette: ICommandPalette | null,
  launcher: ILauncher | null,
  restorer: ILayoutRestorer | null
): WidgetTracker<MainAreaWidget<T>> {
  const tracker = new WidgetTracker<MainAreaWidget<T>>({ namespace: `hubgrid-${spec.name}` });
  app.commands.addCommand(spec.command, {
    label: args => (args.isLauncher ? spec.label : `hubgrid: ${spec.label}`),
    caption: spec.caption,
    icon: spec.icon,
    execute: () => {
      let page = tracker.currentWidget;
      if (!page || page.isDisposed) {
        page = spec.make();
        void tracker.add(page);
        app.shell.add(page, 'main');
      } else {
        spec.refresh?.(page);
      }
      app.shell.activateById(page.id);
    }
  });
  palette?.addItem({ command: spec.command, category: 'hubgrid' });
  launcher?.add({ command: spec.command, category: 'hubgrid', rank: spec.rank, args: { isLauncher: true } });
  if (restorer) {
    void restorer.restore(tracker, { command: spec.command, name: () => spec.name });
  }
  return tracker;
}
