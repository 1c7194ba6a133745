/**
 * The console's header and navigation (plain DOM, no Lab): who is logged
 * in, links to the hub, the Lab and the service's home, and the pages as
 * links to `#<page>` in sections ("You", "Admin" for admins only, "Open"
 * for folders and logs opened from a page, each with a close button).
 * Every text is set as text, never as HTML.
 */

import { Widget } from '@lumino/widgets';

import { IAdminCaller } from './admin/role';

/** The links the header offers (from the service's page). */
export interface IConsoleLinks {
  /** the hub's base URL, e.g. / */
  hubUrl: string;
  /** the service's home page */
  homeUrl: string;
  /** the caller's default Lab */
  labUrl: string;
  name: string;
  domain: string;
  role: string;
}

/** A page of the console: its id (the address's #), label, and how it is made. */
export interface IConsoleEntry {
  page: string;
  label: string;
  caption?: string;
  make: () => Widget;
  closable?: boolean;
}

/** The page an address's hash names ('' for none). */
export function pageOfHash(hash: string): string {
  const raw = hash.replace(/^#/, '');
  try {
    return decodeURIComponent(raw);
  } catch {
    return '';
  }
}

function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls: string, text = ''): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (cls) {
    node.className = cls;
  }
  if (text) {
    node.textContent = text;
  }
  return node;
}

function link(text: string, href: string, id: string): HTMLAnchorElement {
  const a = el('a', 'jp-hubgrid-console-link', text);
  a.href = href;
  a.id = id;
  return a;
}

/** The header and the navigation; `close(page)` is asked when an opened page's close button is pressed. */
export function consoleNav(links: IConsoleLinks, close: (page: string) => void) {
  const header = el('header', 'jp-hubgrid-console-header');
  header.appendChild(el('h1', 'jp-hubgrid-console-title', 'hubgrid console'));
  const who = el('span', 'jp-hubgrid-console-who');
  who.id = 'hubgrid-console-who';
  who.textContent = `${links.name} · ${links.role} · ${links.domain}`;
  header.appendChild(who);
  const out = el('span', 'jp-hubgrid-console-links');
  out.append(
    link('Hub home', `${links.hubUrl}hub/home`, 'hubgrid-console-hub'),
    link('Your JupyterLab', links.labUrl, 'hubgrid-console-lab'),
    link('About hubgrid', links.homeUrl, 'hubgrid-console-home')
  );
  header.appendChild(out);

  const nav = el('nav', 'jp-hubgrid-console-nav');
  nav.setAttribute('aria-label', 'hubgrid console pages');
  const anchors = new Map<string, HTMLAnchorElement>();
  let openList: HTMLUListElement | null = null;

  const item = (entry: IConsoleEntry): HTMLLIElement => {
    const li = el('li', 'jp-hubgrid-console-item');
    li.dataset.page = entry.page;
    const a = el('a', 'jp-hubgrid-console-page-link', entry.label);
    a.href = `#${encodeURIComponent(entry.page)}`;
    if (entry.caption) {
      a.title = entry.caption;
    }
    anchors.set(entry.page, a);
    li.appendChild(a);
    if (entry.closable) {
      const x = el('button', 'jp-hubgrid-console-close', '×');
      x.type = 'button';
      x.title = `Close ${entry.label}`;
      x.setAttribute('aria-label', `Close ${entry.label}`);
      x.onclick = () => {
        li.remove();
        anchors.delete(entry.page);
        close(entry.page);
      };
      li.appendChild(x);
    }
    return li;
  };

  const section = (id: string, title: string, entries: IConsoleEntry[]): HTMLUListElement => {
    const box = el('section', 'jp-hubgrid-console-section');
    box.dataset.section = id;
    const h = el('h2', 'jp-hubgrid-console-section-title', title);
    h.id = `hubgrid-console-section-${id}`;
    box.setAttribute('aria-labelledby', h.id);
    const ul = el('ul', 'jp-hubgrid-console-list');
    entries.forEach(e => ul.appendChild(item(e)));
    box.append(h, ul);
    nav.appendChild(box);
    return ul;
  };

  return {
    header,
    nav,
    section(id: string, title: string, entries: IConsoleEntry[]): void {
      section(id, title, entries);
    },
    /** A page opened from another (a folder, a log), under "Open". */
    addOpen(entry: IConsoleEntry): void {
      if (!openList) {
        openList = section('open', 'Open', []);
      }
      openList.appendChild(item(entry));
    },
    /** Mark `page` as the one shown. */
    select(page: string): void {
      for (const [p, a] of anchors) {
        if (p === page) {
          a.setAttribute('aria-current', 'page');
        } else {
          a.removeAttribute('aria-current');
        }
      }
    },
    /** `GET me` answered (null: it failed): the navigation is complete. */
    ready(caller: IAdminCaller | null): void {
      nav.dataset.ready = caller ? 'true' : 'error';
      if (!caller) {
        nav.appendChild(el('p', 'jp-hubgrid-console-error', 'The hubgrid service did not answer: reload the page.'));
      }
    }
  };
}
