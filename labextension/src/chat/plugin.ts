/**
 * The Chat page's plugin: a command "hubgrid: Chat" (palette, launcher)
 * that opens (or shows) the page in the main area.
 */

import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { ILauncher } from '@jupyterlab/launcher';

import { addPageCommand } from '../pagecommand';
import { chatWidget } from './ChatPage';
import { chatIcon } from './icons';

export const SHOW_CHAT = 'hubgrid:show-chat';

export const chatPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyterlab-hubgrid:chat',
  description: 'hubgrid chat: talk to a served model, conversations kept on the server',
  autoStart: true,
  optional: [ICommandPalette, ILauncher, ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    palette: ICommandPalette | null,
    launcher: ILauncher | null,
    restorer: ILayoutRestorer | null
  ) => {
    addPageCommand(app, {
      command: SHOW_CHAT,
      name: 'chat',
      label: 'Chat',
      caption: 'Chat with a served model; conversations are kept on the server',
      icon: chatIcon,
      rank: 61,
      make: () => chatWidget(app.serviceManager.serverSettings)
    }, palette, launcher, restorer);
  }
};
