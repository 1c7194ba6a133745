/**
 * The admin shell (`jupyterlab-hubgrid:admin`): the "hubgrid Admin" main
 * menu (declared in schema/admin.json with every admin command, the ops
 * plugin's too) and the tenancy pages' commands hubgrid:admin-users,
 * -domains, -policies and -audit. Superadmins and domain admins see them
 * (GET me once: ./role.ts); for anyone else the commands stay hidden and
 * the menu is removed. Each command opens its page in the main area, one
 * instance per page (re-activated if open).
 */

import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, MainAreaWidget } from '@jupyterlab/apputils';
import { IMainMenu } from '@jupyterlab/mainmenu';
import * as React from 'react';

import { AuditPage } from './audit/AuditPage';
import { DomainsPage } from './domains/DomainsPage';
import { adminPage, IAdminPageProps } from './frame';
import { PoliciesPage } from './policies/PoliciesPage';
import { adminCaller, IAdminCaller, roleOf } from './role';
import { UsersPage } from './users/UsersPage';

/** The admin menu's id (the contract with the ops plugin: schema/admin.json). */
export const ADMIN_MENU_ID = 'jp-mainmenu-hubgrid-admin';

interface ITenancyPage {
  command: string;
  page: string;
  label: string;
  caption: string;
  render: (props: IAdminPageProps) => JSX.Element;
}

export const TENANCY_PAGES: ITenancyPage[] = [
  {
    command: 'hubgrid:admin-users',
    page: 'users',
    label: 'Users',
    caption: 'Search, create, edit and deactivate users; their keypairs; add users from a CSV file',
    render: p => React.createElement(UsersPage, p)
  },
  {
    command: 'hubgrid:admin-domains',
    page: 'domains',
    label: 'Domains and Projects',
    caption: 'Use per slot against the limits, members, resource groups, storage hosts, folder limits',
    render: p => React.createElement(DomainsPage, p)
  },
  {
    command: 'hubgrid:admin-policies',
    page: 'policies',
    label: 'Resource Policies',
    caption: 'Create and edit resource policies (every limit, idle reclamation)',
    render: p => React.createElement(PoliciesPage, p)
  },
  {
    command: 'hubgrid:admin-audit',
    page: 'audit',
    label: 'Access Log',
    caption: 'Who did what, filtered and paged; export as CSV',
    render: p => React.createElement(AuditPage, p)
  }
];

/** Remove the admin menu (a plain user): retried until the menu is built. */
function dropMenu(menu: IMainMenu, tries = 40): void {
  const found = (menu as any).menus?.find?.((m: any) => m.id === ADMIN_MENU_ID || m.title?.label === 'hubgrid Admin');
  if (found) {
    found.dispose();
  } else if (tries > 0) {
    setTimeout(() => dropMenu(menu, tries - 1), 250);
  }
}

export const adminPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyterlab-hubgrid:admin',
  description: 'hubgrid admin pages: users, domains and projects, resource policies, access log',
  autoStart: true,
  optional: [IMainMenu, ICommandPalette],
  activate: (app: JupyterFrontEnd, mainMenu: IMainMenu | null, palette: ICommandPalette | null) => {
    const settings = app.serviceManager.serverSettings;
    let caller: IAdminCaller | null = null;
    const open = new Map<string, MainAreaWidget>();
    const isAdmin = () => caller !== null && roleOf(caller.role) !== null;

    for (const p of TENANCY_PAGES) {
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
            widget = adminPage(p.page, `Admin: ${p.label}`, undefined, () => p.render({ settings, caller: who }));
            open.set(p.page, widget);
            app.shell.add(widget, 'main');
          }
          app.shell.activateById(widget.id);
        }
      });
    }

    void adminCaller(settings).then(me => {
      caller = me;
      if (isAdmin()) {
        for (const p of TENANCY_PAGES) {
          palette?.addItem({ command: p.command, category: 'hubgrid Admin' });
          app.commands.notifyCommandChanged(p.command);
        }
      } else if (mainMenu) {
        void app.restored.then(() => dropMenu(mainMenu));
      }
    });
  }
};
