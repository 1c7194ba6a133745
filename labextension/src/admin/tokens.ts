/**
 * The admin plugin's token: the "hubgrid Admin" menu, to which the ops
 * plugin adds its pages (the admin plugin provides it; ./pages.ts is the
 * logic). Items appear only in the Labs of superadmins and domain admins.
 */

import { Token } from '@lumino/coreutils';

import { IAdminPageItem } from './pages';

export interface IAdminMenu {
  /** Add a page command to the menu (and the palette) at its rank, for admins only. */
  addPage(item: IAdminPageItem): void;
}

export const IAdminMenu = new Token<IAdminMenu>(
  'jupyterlab-hubgrid:IAdminMenu',
  'The hubgrid Admin menu: admin page commands, shown to superadmins and domain admins only.'
);
