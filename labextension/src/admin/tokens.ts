/**
 * The admin plugin's token: the "hubgrid Admin" menu, to which the ops
 * plugin adds its pages (the admin plugin provides it, makes each page's
 * command and opens the page; ./pages.ts is the menu's logic). Items
 * appear only in the Labs of superadmins and domain admins.
 */

import { Token } from '@lumino/coreutils';

import { IAdminPageProps } from './frame';
import { IAdminPageItem } from './pages';

/** An admin page: its command, place in the menu, and what it shows. */
export interface IAdminPage extends IAdminPageItem {
  /** the page's id suffix (jp-hubgrid-admin-<page>) */
  page: string;
  label: string;
  caption: string;
  render: (props: IAdminPageProps) => JSX.Element;
}

export interface IAdminMenu {
  /** Add a page: its command (visible to admins only), in the menu and the palette at its rank. */
  addPage(page: IAdminPage): void;
}

export const IAdminMenu = new Token<IAdminMenu>(
  'jupyterlab-hubgrid:IAdminMenu',
  'The hubgrid Admin menu: admin page commands, shown to superadmins and domain admins only.'
);
