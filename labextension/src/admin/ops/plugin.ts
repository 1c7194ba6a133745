/**
 * The ops admin pages' plugin (`jupyterlab-hubgrid:admin-ops`): the commands
 * hubgrid:admin-groups, -queue, -sessions and -images, added to the
 * "hubgrid Admin" menu through the admin plugin's IAdminMenu (../tokens.ts:
 * the menu and the palette list them for superadmins and domain admins
 * only); the commands are visible to those only too (GET me, once per page
 * load: ../role.ts). Each opens its page in the main area, one instance per
 * page (re-activated if open).
 */

import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { MainAreaWidget } from '@jupyterlab/apputils';
import * as React from 'react';

import { adminPage } from '../frame';
import { adminCaller, IAdminCaller, roleOf } from '../role';
import { IAdminMenu } from '../tokens';
import { GroupsPage } from './GroupsPage';
import { ImagesPage } from './ImagesPage';
import { QueuePage } from './QueuePage';
import { logWidget, SessionsPage } from './SessionsPage';

interface IOpsPage {
  command: string;
  /** its place in the admin menu (the tenancy pages take 10-30 and 80) */
  rank: number;
  page: string;
  label: string;
  caption: string;
}

export const OPS_PAGES: IOpsPage[] = [
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
    const settings = app.serviceManager.serverSettings;
    let caller: IAdminCaller | null = null;
    const open = new Map<string, MainAreaWidget>();
    const isAdmin = () => caller !== null && roleOf(caller.role) !== null;

    const openLog = (id: string, text: string) => {
      const widget = logWidget(id, text);
      const old = open.get(widget.id);
      if (old && !old.isDisposed) {
        old.dispose();
      }
      open.set(widget.id, widget);
      app.shell.add(widget, 'main');
      app.shell.activateById(widget.id);
    };

    const make = (page: string, who: IAdminCaller): JSX.Element => {
      const props = { settings, caller: who };
      switch (page) {
        case 'groups':
          return React.createElement(GroupsPage, props);
        case 'queue':
          return React.createElement(QueuePage, props);
        case 'sessions':
          return React.createElement(SessionsPage, { ...props, openLog });
        default:
          return React.createElement(ImagesPage, props);
      }
    };

    for (const p of OPS_PAGES) {
      app.commands.addCommand(p.command, {
        label: p.label,
        caption: p.caption,
        isVisible: isAdmin,
        isEnabled: isAdmin,
        execute: () => {
          if (!caller || !isAdmin()) {
            return;
          }
          const who = caller;
          let widget = open.get(p.page);
          if (!widget || widget.isDisposed) {
            widget = adminPage(p.page, p.label, undefined, () => make(p.page, who));
            open.set(p.page, widget);
            app.shell.add(widget, 'main');
          }
          app.shell.activateById(widget.id);
        }
      });
      menu.addPage({ command: p.command, rank: p.rank });
    }

    void adminCaller(settings).then(me => {
      caller = me;
      for (const p of OPS_PAGES) {
        app.commands.notifyCommandChanged(p.command);
      }
    });
  }
};
