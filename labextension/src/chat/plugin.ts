/**
 * The Chat page's plugin: a command "hubgrid: Chat" (palette, launcher)
 * that opens (or shows) the page in the main area.
 */

import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, MainAreaWidget, WidgetTracker } from '@jupyterlab/apputils';
import { ILauncher } from '@jupyterlab/launcher';
import { ReactWidget } from '@jupyterlab/ui-components';

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
    const tracker = new WidgetTracker<MainAreaWidget<ReactWidget>>({ namespace: 'hubgrid-chat' });
    app.commands.addCommand(SHOW_CHAT, {
      label: args => (args.isLauncher ? 'Chat' : 'hubgrid: Chat'),
      caption: 'Chat with a served model; conversations are kept on the server',
      icon: chatIcon,
      execute: () => {
        let page = tracker.currentWidget;
        if (!page || page.isDisposed) {
          page = chatWidget(app.serviceManager.serverSettings);
          void tracker.add(page);
          app.shell.add(page, 'main');
        }
        app.shell.activateById(page.id);
      }
    });
    palette?.addItem({ command: SHOW_CHAT, category: 'hubgrid' });
    launcher?.add({ command: SHOW_CHAT, category: 'hubgrid', rank: 61, args: { isLauncher: true } });
    if (restorer) {
      void restorer.restore(tracker, { command: SHOW_CHAT, name: () => 'chat' });
    }
  }
};
