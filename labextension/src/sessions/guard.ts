/**
 * This Lab's own session and idle reclamation (IO): input in the Lab is
 * reported to the server extension (`hubgrid/input`: activity); a call to
 * `hubgrid/reclaim` waits until the session's announced reclaim is a few
 * seconds away, then every open document with unsaved changes is saved
 * (`reclaimsave.ts`: in place, or as a copy next to a file that changed on
 * disk, always within a bounded time) and the result is posted back to
 * `hubgrid/reclaim` (the service's stop waits for it); when the server is gone, a dialog says the session was reclaimed, why
 * (the service's final record, read through the hub: the rule, the numbers
 * as of the stop and the stop's real time) and offers to start it again,
 * instead of JupyterHub's "Server unavailable" (this plugin provides the
 * IConnectionLost service, which package.json's disabledExtensions takes
 * from @jupyterlab/hub-extension; other losses get the hub's dialog).
 */

import {
  ConnectionLost,
  IConnectionLost,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { Dialog, Notification, showDialog } from '@jupyterlab/apputils';
import { PageConfig, URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';
import { Widget } from '@lumino/widgets';

import {
  consoleUrl,
  finalRecordUrl,
  IDueReclaim,
  IFinalReclaim,
  inputDue,
  INPUT_EVERY,
  IOwnReclaim,
  isReclaimed,
  reclaimedText,
  restartUrl
} from './ownreclaim';
import { RECLAIMED_EVENT } from './reclaimbanner';
import { IContents, ISaveDoc, ISaveIO, saveForReclaim } from './reclaimsave';

/** A document widget's context, as far as the save needs it (DocumentRegistry.Context). */
interface ILabContext {
  path: string;
  model: { dirty: boolean; toJSON(): unknown; toString(): string };
  contentsModel: {
    type?: string;
    format?: string | null;
    writable?: boolean;
    last_modified?: string;
    hash?: string | null;
  } | null;
  save(): Promise<void>;
}

/** The open documents of this Lab's main area (widgets with a context). */
function openDocs(app: JupyterFrontEnd): ISaveDoc[] {
  const docs: ISaveDoc[] = [];
  for (const widget of app.shell.widgets('main')) {
    const ctx = (widget as unknown as { context?: ILabContext }).context;
    if (!ctx?.model || typeof ctx.save !== 'function') {
      continue;
    }
    const cm = ctx.contentsModel;
    docs.push({
      path: ctx.path,
      dirty: ctx.model.dirty,
      writable: cm?.writable !== false,
      lastModified: cm?.last_modified ?? null,
      hash: cm?.hash ?? null,
      contents: (): IContents => {
        const format = cm?.format ?? 'text';
        const content = format === 'json' ? ctx.model.toJSON() : ctx.model.toString();
        return { type: cm?.type ?? 'file', format, content };
      },
      save: () => ctx.save()
    });
  }
  return docs;
}
/** after a failed wait (the server restarting, a proxy hiccup), ms */
const RETRY = 30_000;
/** the final record of a reclaim is asked for this many times, this often (ms) */
const FINAL_TRIES = 15;
const FINAL_EVERY = 2_000;

/**
 * Open the service's console page in a hidden frame (it logs this browser in
 * to the service through the hub) and read the `_xsrf` token it set, which
 * the service wants back with cookie-authenticated calls; "" if it could not.
 */
function consoleToken(page: string): Promise<string> {
  return new Promise(resolve => {
    const frame = document.createElement('iframe');
    frame.style.display = 'none';
    const done = (token: string) => {
      window.clearTimeout(timer);
      frame.remove();
      resolve(token);
    };
    const timer = window.setTimeout(() => done(''), 20_000);
    frame.onload = () => {
      try {
        const match = (frame.contentDocument?.cookie ?? '').match(/(?:^|;\s*)_xsrf=([^;]+)/);
        done(match ? decodeURIComponent(match[1]) : '');
      } catch {
        done(''); // not the service's page (another origin)
      }
    };
    frame.src = page;
    document.body.appendChild(frame);
  });
}

export class ReclaimGuard {
  constructor(private readonly app: JupyterFrontEnd) {
    this.settings = app.serviceManager.serverSettings;
    const onInput = () => this.input();
    for (const kind of ['keydown', 'pointerdown', 'wheel']) {
      document.addEventListener(kind, onInput, { capture: true, passive: true });
    }
    // one waiting call per browser for all of this server's tabs (a browser
    // opens at most 6 connections to a host): the tab holding the lock waits,
    // and tells the others when the reclaim is due; each saves its documents
    const name = `hubgrid-reclaim:${this.settings.baseUrl}`;
    this.channel = typeof BroadcastChannel !== 'undefined' ? new BroadcastChannel(name) : null;
    if (this.channel) {
      this.channel.onmessage = (e: MessageEvent) => void this.save(e.data as IDueReclaim);
    }
    const locks = (navigator as any).locks;
    if (locks?.request && this.channel) {
      void locks.request(name, () => this.watch());
    } else {
      void this.watch(); // no Web Locks (plain http): one call per tab
    }
  }

  /** what this Lab knows of its reclaim (the due notice, the save) */
  own: IOwnReclaim | null = null;

  /** Input in the Lab: reported now, or at the end of the interval (the last input counts). */
  private input(): void {
    const now = Date.now();
    if (this.stopped || this.inputTimer !== null) {
      return;
    }
    if (inputDue(this.inputAt, now)) {
      this.sendInput();
    } else {
      this.inputTimer = window.setTimeout(() => this.sendInput(), INPUT_EVERY - (now - this.inputAt!));
    }
  }

  private sendInput(): void {
    this.inputTimer = null;
    this.inputAt = Date.now();
    const url = URLExt.join(this.settings.baseUrl, 'hubgrid', 'input');
    ServerConnection.makeRequest(url, { method: 'POST' }, this.settings)
      .then(r => {
        if (r.status === 404) {
          this.stopped = true; // a server without the extension's route
        }
      })
      .catch(() => undefined);
  }

  private async watch(): Promise<void> {
    let seen = '';
    while (!this.stopped) {
      const url = URLExt.join(this.settings.baseUrl, 'hubgrid', 'reclaim') +
        `?seen=${encodeURIComponent(seen)}`;
      let due: IDueReclaim | null = null;
      try {
        const r = await ServerConnection.makeRequest(url, {}, this.settings);
        if (r.status === 404) {
          return; // not a hubgrid session's server
        }
        due = r.ok ? ((await r.json()) as IDueReclaim) : null;
      } catch {
        due = null;
      }
      if (!due) {
        await new Promise(resolve => setTimeout(resolve, RETRY));
        continue;
      }
      seen = due.key;
      this.channel?.postMessage(due); // the other tabs of this server save theirs
      await this.save(due);
    }
  }

  /**
   * Save every open document with unsaved changes (bounded: a dialog never
   * holds it), remember the notice, and tell the server how it went.
   */
  async save(due: IDueReclaim): Promise<void> {
    const own: IOwnReclaim = {
      notice: due.reclaim,
      savedAt: null,
      dirty: 0,
      saveError: '',
      allocation: due.allocation || ''
    };
    this.own = own;
    const contents = this.app.serviceManager.contents;
    const io: ISaveIO = {
      stat: path => contents.get(path, { content: false, hash: true } as any),
      write: async (path, c) => {
        await contents.save(path, c as any);
      },
      sleep: ms => new Promise(resolve => setTimeout(resolve, ms)),
      now: () => Date.now()
    };
    const result = await saveForReclaim(openDocs(this.app), io);
    own.dirty = result.documents;
    own.copies = result.copyPaths;
    own.unsaved = result.unsaved;
    if (result.unsaved === 0) {
      own.savedAt = Date.now();
    } else {
      own.saveError = result.errors.join('; ');
    }
    document.body.dataset.hubgridReclaimSaved = String(result.documents);
    document.body.dataset.hubgridReclaimCopies = String(result.copies);
    const url = URLExt.join(this.settings.baseUrl, 'hubgrid', 'reclaim');
    const body = {
      key: due.key,
      state: result.unsaved === 0 ? 'saved' : 'failed',
      documents: result.documents,
      saved: result.saved,
      copies: result.copies,
      unsaved: result.unsaved,
      error: own.saveError.slice(0, 300)
    };
    // the service's stop waits for this (bounded): a failed post only makes it wait longer
    await ServerConnection.makeRequest(url, { method: 'POST', body: JSON.stringify(body) }, this.settings)
      .catch(() => undefined);
  }

  /** The server is gone: our dialog if it was this reclaim; false if it was something else. */
  async lost(): Promise<boolean> {
    if (!isReclaimed(this.own, Date.now())) {
      return false;
    }
    if (this.stopped) {
      return true; // said once: closing it is an answer
    }
    this.stopped = true;
    Notification.dismiss(); // the reclaim warning and its "Keep it" no longer hold
    document.dispatchEvent(new Event(RECLAIMED_EVENT)); // and the banner's
    this.own!.final = await this.finalRecord(this.own!.allocation || '');
    const text = reclaimedText(this.own!);
    const body = new Widget();
    body.addClass('jp-hubgrid-reclaimed');
    // the final record's stop time, for people's tools and tests (the text says it too)
    body.node.dataset.hubgridStoppedAt = this.own!.final?.stopped_at ?? '';
    for (const line of text.lines) {
      const p = document.createElement('p');
      p.textContent = line; // the service's reason, as text
      body.node.appendChild(p);
    }
    const url = restartUrl(
      PageConfig.getOption('hubHost'),
      PageConfig.getOption('hubPrefix'),
      PageConfig.getOption('hubUser'),
      PageConfig.getOption('hubServerName')
    );
    const result = await showDialog({
      title: text.title,
      body,
      buttons: url
        ? [Dialog.cancelButton({ label: 'Close' }), Dialog.okButton({ label: 'Start it again' })]
        : [Dialog.okButton({ label: 'Close' })]
    });
    if (url && result.button.accept) {
      window.location.assign(url);
    }
    return true;
  }

  /**
   * The service's final record of this reclaim (the stop's time and numbers),
   * read through the hub once the server is gone: the service records it
   * when the server's stop is over, so it is asked for a while; null if it
   * cannot be read (the dialog then says what the warning said, as such).
   */
  private async finalRecord(allocation: string): Promise<IFinalReclaim | null> {
    const url = finalRecordUrl(PageConfig.getOption('hubPrefix'), allocation);
    if (!url) {
      return null;
    }
    let xsrf = '';
    for (let tries = 0; tries < FINAL_TRIES; tries++) {
      try {
        const headers: Record<string, string> = xsrf ? { 'X-XSRFToken': xsrf } : {};
        const r = await fetch(url, { credentials: 'same-origin', cache: 'no-store', headers });
        if ((r.status === 401 || r.status === 403) && !xsrf) {
          // not logged in to the service, or a cookie call without its token:
          // its console page logs in (OAuth through the hub: a navigation, so
          // in a hidden frame) and sets the token its calls send back
          xsrf = await consoleToken(consoleUrl(url));
          if (xsrf) {
            continue;
          }
        }
        if (r.ok) {
          const events = ((await r.json()) as { events?: { details?: IFinalReclaim }[] }).events ?? [];
          const final = events[0]?.details;
          if (final?.stopped_at && final.reason) {
            return final;
          }
        }
      } catch {
        // the hub restarting, a proxy hiccup: try again
      }
      await new Promise(resolve => setTimeout(resolve, FINAL_EVERY));
    }
    return null;
  }

  private readonly settings: ServerConnection.ISettings;
  private readonly channel: BroadcastChannel | null;
  private inputAt: number | null = null;
  private inputTimer: number | null = null;
  private stopped = false;
}

/**
 * IConnectionLost: this session's reclaim says so; any other loss gets the
 * hub's own dialog (the text and Restart of @jupyterlab/hub-extension).
 */
export const reclaimGuardPlugin: JupyterFrontEndPlugin<IConnectionLost> = {
  id: 'jupyterlab-hubgrid:reclaim-guard',
  description: 'Saves open documents before this session is reclaimed, and says why it was',
  autoStart: true,
  requires: [JupyterFrontEnd.IPaths],
  provides: IConnectionLost,
  activate: (app: JupyterFrontEnd, paths: JupyterFrontEnd.IPaths): IConnectionLost => {
    const guard = new ReclaimGuard(app);
    const hubPrefix = paths.urls.hubPrefix || '';
    let showing = false;
    return async (manager, err) => {
      if (showing) {
        return;
      }
      showing = true;
      try {
        if (await guard.lost()) {
          return;
        }
        if (!hubPrefix) {
          return await ConnectionLost(manager, err);
        }
        const result = await showDialog({
          title: 'Server unavailable or unreachable',
          body: `Your server at ${paths.urls.base} is not running.\nWould you like to restart it?`,
          buttons: [Dialog.okButton({ label: 'Restart' }), Dialog.cancelButton({ label: 'Dismiss' })]
        });
        if (result.button.accept) {
          await app.commands.execute('hub:restart');
        }
      } finally {
        showing = false;
      }
    };
  }
};
