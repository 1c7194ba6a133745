/**
 * The ops admin pages' plugin (`jupyterlab-hubgrid:admin-ops`): the pages
 * hubgrid:admin-groups, -queue, -sessions and -images, added to the
 * "hubgrid Admin" menu through the admin plugin's IAdminMenu (../tokens.ts),
 * which makes their commands (visible to superadmins and domain admins
 * only) and opens each in the main area, one instance per page. The
 * Sessions page's logs open here, one tab per session.
 */

import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { MainAreaWidget } from '@jupyterlab/apputils';
import * as React from 'react';

import { IAdminMenu, IAdminPage } from '../tokens';
import { GroupsPage } from './GroupsPage';
import { ImagesPage } from './ImagesPage';
import { QueuePage } from './QueuePage';
import { logWidget, SessionsPage } from './SessionsPage';

/** The ops pages, without what they show (ranks 40-70: the tenancy pages take 10-30 and 80). */
export const OPS_PAGES: Array<Omit<IAdminPage, 'render'>> = [
  {
    command: 'hubgrid:admin-groups',
    rank: 40,
    page: 'groups',
    label: 'Resource Groups and Nodes',
    caption: 'Each group’s nodes, grants and policy; slots, GPU maps, sessions and drain per node'
  },
  {
    command: 'hubgrid:admin-queue',
    rank: 50,
    page: 'queue',
    label: 'Scheduler Queue',
    caption: 'Each group’s pending requests in order: priority, move, cancel'
  },
  {
    command: 'hubgrid:admin-sessions',
    rank: 60,
    page: 'sessions',
    label: 'Sessions (All)',
    caption: 'Every session you may see: owner, project, node, resources; stop, log'
  },
  {
    command: 'hubgrid:admin-images',
    rank: 70,
    page: 'images',
    label: 'Images',
    caption: 'The image registry: minimum resources, apps, allowed domains; rescan'
  }
];

export const adminOpsPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyterlab-hubgrid:admin-ops',
  description: 'hubgrid admin pages: resource groups and nodes, scheduler queue, all sessions, images',
  autoStart: true,
  requires: [IAdminMenu],
  activate: (app: JupyterFrontEnd, menu: IAdminMenu) => {
    const logs = new Map<string, MainAreaWidget>();
    const openLog = (id: string, text: string) => {
      const widget = logWidget(id, text);
      logs.get(widget.id)?.dispose();
      logs.set(widget.id, widget);
      app.shell.add(widget, 'main');
      app.shell.activateById(widget.id);
    };
    const render: Record<string, IAdminPage['render']> = {
      groups: props => React.createElement(GroupsPage, props),
      queue: props => React.createElement(QueuePage, props),
      sessions: props => React.createElement(SessionsPage, { ...props, openLog }),
      images: props => React.createElement(ImagesPage, props)
    };
    for (const p of OPS_PAGES) {
      menu.addPage({ ...p, render: render[p.page] });
    }
  }
};
