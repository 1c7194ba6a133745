/**
 * The admin shell (`jupyterlab-hubgrid:admin`): the "hubgrid Admin" main
 * menu and the tenancy pages' commands hubgrid:admin-users, -domains,
 * -policies and -audit. It provides IAdminMenu (./tokens.ts), to which the
 * ops plugin adds its pages. The menu is built, with every page added so
 * far (./pages.ts), only once `GET me` (./role.ts) says superadmin or
 * domain admin: anyone else never has it, nor the pages in the palette,
 * and the commands stay hidden. Each command opens its page in the main
 * area, one instance per page (re-activated if open).
 */

import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, MainAreaWidget } from '@jupyterlab/apputils';
import { IMainMenu } from '@jupyterlab/mainmenu';
import { RankedMenu } from '@jupyterlab/ui-components';
import * as React from 'react';

import { AuditPage } from './audit/AuditPage';
import { DomainsPage } from './domains/DomainsPage';
import { adminPage } from './frame';
import { PoliciesPage } from './policies/PoliciesPage';
import { AdminPageList, IAdminPageItem } from './pages';
import { adminCaller, IAdminCaller, roleOf } from './role';
import { IAdminMenu, IAdminPage } from './tokens';
import { UsersPage } from './users/UsersPage';

/** The admin menu: its id, label and rank in the menu bar (after Kernel 5, before Tabs 500). */
export const ADMIN_MENU_ID = 'jp-mainmenu-hubgrid-admin';
export const ADMIN_MENU_LABEL = 'hubgrid Admin';
export const ADMIN_MENU_RANK = 90;

/** The tenancy pages (ranks 10-30 and 80: the ops pages take 40-70). */
export const TENANCY_PAGES: IAdminPage[] = [
  {
    command: 'hubgrid:admin-users',
    rank: 10,
    page: 'users',
    label: 'Users',
    caption: 'Search, create, edit and deactivate users; their keypairs; add users from a CSV file',
    render: p => React.createElement(UsersPage, p)
  },
  {
    command: 'hubgrid:admin-domains',
    rank: 20,
    page: 'domains',
    label: 'Domains and Projects',
    caption: 'Use per slot against the limits, members, resource groups, storage hosts, folder limits',
    render: p => React.createElement(DomainsPage, p)
  },
  {
    command: 'hubgrid:admin-policies',
    rank: 30,
    page: 'policies',
    label: 'Resource Policies',
    caption: 'Create and edit resource policies (every limit, idle reclamation)',
    render: p => React.createElement(PoliciesPage, p)
  },
  {
    command: 'hubgrid:admin-audit',
    rank: 80,
    page: 'audit',
    label: 'Access Log',
    caption: 'Who did what, filtered and paged; export as CSV',
    render: p => React.createElement(AuditPage, p)
  }
];

/**
 * The "hubgrid Admin" menu, built only when `show` first has items for it
 * (the caller is an admin); each page also goes to the command palette.
 */
function menuShower(app: JupyterFrontEnd, mainMenu: IMainMenu | null, palette: ICommandPalette | null) {
  let menu: RankedMenu | null = null;
  return (items: IAdminPageItem[]): void => {
    if (!menu && mainMenu) {
      menu = new RankedMenu({ commands: app.commands, rank: ADMIN_MENU_RANK });
      menu.id = ADMIN_MENU_ID;
      menu.title.label = ADMIN_MENU_LABEL;
      mainMenu.addMenu(menu, true, { rank: ADMIN_MENU_RANK });
    }
    for (const item of items) {
      menu?.addItem({ command: item.command, rank: item.rank });
      palette?.addItem({ command: item.command, category: ADMIN_MENU_LABEL });
      app.commands.notifyCommandChanged(item.command);
    }
  };
}

export const adminPlugin: JupyterFrontEndPlugin<IAdminMenu> = {
  id: 'jupyterlab-hubgrid:admin',
  description: 'hubgrid admin pages: users, domains and projects, resource policies, access log; the admin menu',
  autoStart: true,
  provides: IAdminMenu,
  optional: [IMainMenu, ICommandPalette],
  activate: (app: JupyterFrontEnd, mainMenu: IMainMenu | null, palette: ICommandPalette | null): IAdminMenu => {
    const settings = app.serviceManager.serverSettings;
    let caller: IAdminCaller | null = null;
    const open = new Map<string, MainAreaWidget>();
    const isAdmin = () => caller !== null && roleOf(caller.role) !== null;
    const pages = new AdminPageList(menuShower(app, mainMenu, palette));

    const addPage = (p: IAdminPage): void => {
      if (app.commands.hasCommand(p.command)) {
        return;
      }
      app.commands.addCommand(p.command, {
        label: p.label,
        caption: p.caption,
        isVisible: isAdmin,
        isEnabled: isAdmin,
        execute: () => {
          if (!caller || !isAdmin()) {
            return;
          }
          let widget = open.get(p.page);
          if (!widget || widget.isDisposed) {
            const who = caller;
            widget = adminPage(p.page, p.label, undefined, () => p.render({ settings, caller: who }));
            open.set(p.page, widget);
            app.shell.add(widget, 'main');
          }
          app.shell.activateById(widget.id);
        }
      });
      pages.add({ command: p.command, rank: p.rank });
    };
    TENANCY_PAGES.forEach(addPage);

    void adminCaller(settings).then(me => {
      caller = me;
      app.commands.notifyCommandChanged();
      if (isAdmin()) {
        pages.open();
      }
    });
    return { addPage };
  }
};
