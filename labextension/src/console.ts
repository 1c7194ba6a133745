/**
 * The hubgrid console: the Lab's Summary and Data panels and,
 * for superadmins and domain admins, its admin pages, as a page of the
 * hubgrid service under the hub (`/services/hubgrid/console/`), usable
 * with no Jupyter server running. The entry of a second bundle built from
 * the same components (console.webpack.config.js; `npm run build:console`).
 *
 * Calls go through the components' own request code (request.ts,
 * admin/http.ts) with a ServerConnection whose base URL is the console's:
 * `<console>/hubgrid/api/<path>` is the hubgrid API itself, authenticated by
 * the service's login cookie (OAuth through the hub) and the `_xsrf` token
 * the page set, which ServerConnection sends back as X-XSRFToken. No token
 * is in the page.
 *
 * Chat's gateway calls go to `<console>/hubgrid/gateway/`, which the
 * service forwards to the serving gateway with the caller's own hub OAuth
 * token (the one in its login cookie, never handed to the page):
 * quota_service/api/consolegateway.py.
 *
 * The page: a header (who, links to the hub, the Lab and the service's
 * home), a navigation of the pages (the admin ones only after `GET me` says
 * superadmin or domain admin, as in Lab; Serving, Model Store and Chat for
 * everyone), and the open page. Each page is
 * made at its first opening; `#<page>` in the address opens that page.
 */

import { ServerConnection } from '@jupyterlab/services';
import { StackedPanel, Widget } from '@lumino/widgets';
import * as React from 'react';

import { adminPage } from './admin/frame';
import { GroupsPage } from './admin/ops/GroupsPage';
import { ImagesPage } from './admin/ops/ImagesPage';
import { OPS_PAGES } from './admin/ops/plugin';
import { QueuePage } from './admin/ops/QueuePage';
import { logWidget, SessionsPage } from './admin/ops/SessionsPage';
import { TENANCY_PAGES } from './admin/plugin';
import { adminCaller, IAdminCaller, roleOf } from './admin/role';
import { IAdminPage } from './admin/tokens';
import { consoleNav, IConsoleEntry, IConsoleLinks, pageOfHash } from './consolenav';
import { DataModel } from './data/model';
import { DataPanel } from './data/DataPanel';
import { folderWidget } from './data/FileBrowser';
import { chatWidget } from './chat/ChatPage';
import { modelStoreWidget } from './modelstore/StorePage';
import { ServingApi } from './serving/api';
import { servingWidget } from './serving/ServingPage';
import { logWidget as sessionLogWidget } from './sessions/LogView';
import { SummaryPanel } from './summary/SummaryPanel';

/** What the service writes into the page (`#hubgrid-console-config`). */
export interface IConsoleConfig extends IConsoleLinks {
  /** the console's base URL, e.g. /services/hubgrid/console/ */
  baseUrl: string;
  name: string;
  domain: string;
  role: string;
}

function readConfig(): IConsoleConfig {
  const el = document.getElementById('hubgrid-console-config');
  return JSON.parse(el?.textContent || '{}') as IConsoleConfig;
}

/** The admin pages in the Lab's menu order (both plugins' pages). */
function adminPages(openLog: (id: string, text: string) => void): IAdminPage[] {
  const render: Record<string, IAdminPage['render']> = {
    groups: props => React.createElement(GroupsPage, props),
    queue: props => React.createElement(QueuePage, props),
    sessions: props => React.createElement(SessionsPage, { ...props, openLog }),
    images: props => React.createElement(ImagesPage, props)
  };
  const ops: IAdminPage[] = OPS_PAGES.map(p => ({ ...p, render: render[p.page] }));
  return [...TENANCY_PAGES, ...ops].sort((a, b) => a.rank - b.rank);
}

class Console {
  constructor(
    readonly config: IConsoleConfig,
    host: HTMLElement
  ) {
    this.settings = ServerConnection.makeSettings({
      baseUrl: config.baseUrl,
      token: '',
      appendToken: false,
      // not 'no-store': ServerConnection then appends a cache-busting
      // `?<time>`, which the service refuses as an unknown argument (the
      // Lab's forwarder drops it); 'no-cache' asks the service every time
      init: { cache: 'no-cache', credentials: 'same-origin' }
    });
    this.data = new DataModel(this.settings);
    this.nav = consoleNav(config, page => this.close(page));
    host.appendChild(this.nav.header);
    host.appendChild(this.nav.nav);
    const main = document.createElement('main');
    main.className = 'jp-hubgrid-console-main';
    host.appendChild(main);
    this.stack.addClass('jp-hubgrid-console-stack');
    Widget.attach(this.stack, main);
    window.addEventListener('resize', () => this.stack.update());
    this.entries.set('summary', { page: 'summary', label: 'Summary', make: () => new SummaryPanel(this.settings) });
    this.entries.set('sessions', {
      page: 'sessions',
      label: 'Sessions',
      caption: 'Your sessions (an admin: every one you may see): stop, log; start one from the hub’s home page',
      make: () => this.mySessions()
    });
    this.entries.set('data', {
      page: 'data',
      label: 'Data',
      make: () => new DataPanel(this.data, row => this.open(`folder-${row.id}`, row.name, () => folderWidget(this.data, row)))
    });
    this.nav.section('you', 'You', [...this.entries.values()]);
    // the Lab's Serving, Model Store and Chat pages, on the console's
    // settings: their calls go to `<console>/hubgrid/api/` as the other
    // pages' do, Chat's gateway calls to `<console>/hubgrid/gateway/`
    // (the service forwards them with the caller's own login token)
    const serving: IConsoleEntry[] = [
      {
        page: 'serving',
        label: 'Serving',
        caption: 'Your model-serving endpoints: replicas, health, logs, tokens, scale',
        make: () => servingWidget(this.settings, this.openReplicaLog)
      },
      {
        page: 'model-store',
        label: 'Model Store',
        caption: 'Published models: deploy one; admins publish and unpublish',
        make: () => modelStoreWidget(this.settings)
      },
      {
        page: 'chat',
        label: 'Chat',
        caption: 'Chat with a served model; conversations are kept on the server',
        make: () => chatWidget(this.settings)
      }
    ];
    serving.forEach(e => this.entries.set(e.page, e));
    this.nav.section('serving', 'Serving', serving);
  }

  /** `GET me`, then the admin pages for an admin; then the page the address names. */
  async start(): Promise<void> {
    const caller = await adminCaller(this.settings);
    this.caller = caller;
    if (caller && roleOf(caller.role)) {
      this.addAdmin(caller);
    }
    this.nav.ready(caller);
    window.addEventListener('hashchange', () => this.show(pageOfHash(location.hash) || 'summary'));
    this.show(pageOfHash(location.hash) || 'summary');
  }

  /**
   * The Sessions page: the admin pages' session list (GET allocations: a
   * user sees their own), with stop (allocations/{id}/stop, which the
   * service allows a session's owner) and logs. Starting is the hub's (its
   * home page); a Lab's Sessions panel starts through its own server.
   */
  private mySessions(): Widget {
    const settings = this.settings;
    const make = (caller: IAdminCaller) => () =>
      React.createElement(SessionsPage, { settings, caller, openLog: this.openLog });
    return adminPage('my-sessions', 'Sessions', undefined, make(this.caller ?? { name: this.config.name, domain: this.config.domain, role: this.config.role }));
  }

  private readonly openLog = (id: string, text: string): void =>
    this.open(`log-${id}`, `Log ${id.slice(0, 8)}`, () => logWidget(id, text));

  /** A replica's session log (the Serving page's Log), as an opened page. */
  private readonly openReplicaLog = async (api: ServingApi, allocation: string): Promise<void> => {
    const session = await api.hubgrid.allocation(allocation);
    this.open(`log-${allocation}`, `Log ${allocation.slice(0, 8)}`, () => sessionLogWidget(api.hubgrid, session));
  };

  private addAdmin(caller: IAdminCaller): void {
    const openLog = this.openLog;
    const items: IConsoleEntry[] = adminPages(openLog).map(p => ({
      page: `admin-${p.page}`,
      label: p.label,
      caption: p.caption,
      make: () => adminPage(p.page, `Admin: ${p.label}`, undefined, () => p.render({ settings: this.settings, caller }))
    }));
    items.forEach(e => this.entries.set(e.page, e));
    this.nav.section('admin', 'Admin', items);
  }

  /** Open a page made on demand (a folder, a log), listed under "Open" until closed. */
  private open(page: string, label: string, make: () => Widget): void {
    if (!this.entries.has(page)) {
      const entry = { page, label, make, closable: true };
      this.entries.set(page, entry);
      this.nav.addOpen(entry);
    }
    this.show(page);
  }

  private close(page: string): void {
    this.widgets.get(page)?.dispose();
    this.widgets.delete(page);
    this.entries.delete(page);
    if (this.current === page) {
      this.show('summary');
    }
  }

  /** Show `page`; a page not there (none of the caller's, or closed) shows the Summary. */
  private show(page: string): void {
    if (!this.entries.has(page)) {
      page = 'summary';
    }
    const entry = this.entries.get(page)!;
    let widget = this.widgets.get(page);
    if (!widget || widget.isDisposed) {
      widget = entry.make();
      widget.addClass('jp-hubgrid-console-page');
      widget.node.dataset.consolePage = page;
      this.widgets.set(page, widget);
      this.stack.addWidget(widget);
    }
    for (const w of this.widgets.values()) {
      if (w !== widget) {
        w.hide();
      }
    }
    widget.show();
    this.current = page;
    this.nav.select(page);
    if (location.hash !== `#${page}`) {
      history.replaceState(null, '', `#${page}`);
    }
  }

  readonly settings: ServerConnection.ISettings;
  private readonly data: DataModel;
  private readonly nav: ReturnType<typeof consoleNav>;
  private readonly stack = new StackedPanel();
  private readonly entries = new Map<string, IConsoleEntry>();
  private readonly widgets = new Map<string, Widget>();
  private current = '';
  private caller: IAdminCaller | null = null;
}

/** Start the console in `#hubgrid-console`. */
export function main(): void {
  const host = document.getElementById('hubgrid-console');
  if (!host) {
    return;
  }
  const c = new Console(readConfig(), host);
  void c.start();
}

main();
