/**
 * The warning of this Lab's own session, hard to miss: a banner across the
 * top of the Lab (a top-area widget), with a live countdown to the
 * reclaim, the reason, and "Keep it running" (idle rule: counts as
 * activity, reported to the service at once through `hubgrid/input?now=1`)
 * or "Keep it" (another rule, while the policy allows one). It stays until
 * the warning is withdrawn (activity came back, a keep) or the session
 * stops; the toast of `notices.ts` tells of other sessions. Texts are
 * rendered as text.
 */

import { PageConfig, URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';
import { Widget } from '@lumino/widgets';

import { bannerText, IReclaimable, keepOffered, noticeOf } from './reclaim';

/** The event on `document` that says this session was reclaimed (the banner goes). */
export const RECLAIMED_EVENT = 'hubgrid-reclaimed';

/** How long a "Keep it running" hides the banner while the service hears of it (ms). */
export const KEPT_GRACE = 45_000;

export class ReclaimBanner extends Widget {
  constructor(
    private readonly settings: ServerConnection.ISettings,
    private readonly keep: (a: IReclaimable) => Promise<void>
  ) {
    super();
    this.id = 'jp-hubgrid-reclaim-banner';
    this.addClass('jp-hubgrid-reclaim-banner');
    this.node.setAttribute('role', 'alert');
    Object.assign(this.node.style, {
      display: 'flex',
      alignItems: 'center',
      gap: '12px',
      padding: '6px 12px',
      background: 'var(--jp-warn-color2)',
      color: 'var(--jp-ui-font-color0)',
      borderBottom: '2px solid var(--jp-warn-color0)',
      fontSize: 'var(--jp-ui-font-size1)'
    });
    this.head = document.createElement('strong');
    this.head.className = 'jp-hubgrid-reclaim-banner-head';
    this.why = document.createElement('span');
    this.why.className = 'jp-hubgrid-reclaim-banner-why';
    this.why.style.flex = '1';
    this.button = document.createElement('button');
    this.button.className = 'jp-Button jp-mod-styled jp-mod-accept jp-hubgrid-reclaim-banner-keep';
    this.button.onclick = () => void this.act();
    this.node.append(this.head, this.why, this.button);
    this.hide();
    // typing or clicking in the Lab is activity: an idle warning is answered
    for (const kind of ['keydown', 'pointerdown']) {
      document.addEventListener(kind, () => this.input(), { capture: true, passive: true });
    }
    // the server is gone: the reclaim dialog says the rest
    document.addEventListener(RECLAIMED_EVENT, () => this.clear());
  }

  /** The latest read of this Lab's session (null: not listed or not warned). */
  showFor(a: IReclaimable | null): void {
    const n = a ? noticeOf(a) : null;
    if (!a || !n || (this.keptFor === n.warned_at && Date.now() < this.keptUntil)) {
      this.clear();
      return;
    }
    this.current = a;
    this.render();
    if (this.timer === null) {
      this.timer = window.setInterval(() => this.render(), 1000);
    }
    this.show();
  }

  /** Activity in this Lab: an idle warning is answered (the service hears of it at once). */
  input(): void {
    const n = this.current ? noticeOf(this.current) : null;
    if (n?.rule === 'idle' && this.isVisible) {
      void this.act();
    }
  }

  private render(): void {
    const a = this.current;
    const text = a ? bannerText(a, Date.now()) : null;
    if (!a || !text) {
      this.clear();
      return;
    }
    const n = noticeOf(a)!;
    this.head.textContent = text.head;
    this.why.textContent = `Why: ${text.why}`;
    const idle = n.rule === 'idle';
    this.button.textContent = idle ? 'Keep it running' : 'Keep it';
    this.button.title = idle
      ? 'Counts as activity: the idle reclaim starts counting again'
      : `Push the reclaim back by ${n.keep_extension} s`;
    this.button.style.display = idle || keepOffered(n, Date.now()) ? '' : 'none';
  }

  private async act(): Promise<void> {
    const a = this.current;
    const n = a ? noticeOf(a) : null;
    if (!a || !n) {
      return;
    }
    if (n.rule === 'idle') {
      const url = URLExt.join(this.settings.baseUrl, 'hubgrid', 'input') + '?now=1';
      await ServerConnection.makeRequest(url, { method: 'POST' }, this.settings).catch(() => undefined);
    } else {
      try {
        await this.keep(a);
      } catch (e) {
        this.why.textContent = `Not kept: ${(e as Error).message}`;
        return;
      }
    }
    // the service withdraws the warning at its next pass; until then it stays hidden
    this.keptFor = n.warned_at;
    this.keptUntil = Date.now() + KEPT_GRACE;
    this.clear();
  }

  private clear(): void {
    this.current = null;
    if (this.timer !== null) {
      window.clearInterval(this.timer);
      this.timer = null;
    }
    this.hide();
  }

  private current: IReclaimable | null = null;
  private timer: number | null = null;
  private keptFor = '';
  private keptUntil = 0;
  private readonly head: HTMLElement;
  private readonly why: HTMLElement;
  private readonly button: HTMLButtonElement;
}

/** This Lab's own session, as PageConfig names it. */
export function ownServer(): { user: string; server: string } {
  return { user: PageConfig.getOption('hubUser'), server: PageConfig.getOption('hubServerName') };
}
