/**
 * Idle reclamation's notifications: a Lab warning (with a "Keep it" action
 * while the policy allows one) once per warning of one of my sessions, and
 * a note when a warned session ended (reclaimed, with its reason). Reads
 * the Sessions store, and makes it read on a slow poll while its panel is
 * hidden (its own poll stands by then). This Lab's own session is also
 * warned by a banner across the Lab (`reclaimbanner.ts`), at every read. Texts are plain: toasts render them
 * as text.
 */

import { Notification, showErrorMessage } from '@jupyterlab/apputils';
import { Poll } from '@lumino/polling';

import { sessionRow } from './model';
import { ownServer, ReclaimBanner } from './reclaimbanner';
import { endedMessage, IReclaimable, isOwnSession, IWatchNews, keepOffered, noticeOf, warningMessage } from './reclaim';
import { SessionsStore } from './store';

/** How often the warnings are read while the Sessions panel is hidden (ms). */
const HIDDEN_READ = 30_000;

export class ReclaimNotifier {
  constructor(
    private readonly store: SessionsStore,
    private readonly banner: ReclaimBanner | null = null
  ) {
    this.unsubscribe = store.onReclaimNews(news => this.show(news));
    this.poll = new Poll({
      name: 'hubgrid:reclaim-warnings',
      auto: true,
      factory: () => store.readIfStale(HIDDEN_READ - 1000),
      frequency: { interval: HIDDEN_READ, backoff: true, max: 5 * HIDDEN_READ },
      standby: 'when-hidden'
    });
  }

  dispose(): void {
    this.poll.dispose();
    this.unsubscribe();
  }

  private show(news: IWatchNews): void {
    const now = Date.now();
    if (this.banner && news.mine) {
      const { user, server } = ownServer();
      this.banner.showFor(news.mine.find(a => isOwnSession(a, user, server)) ?? null);
    }
    for (const a of news.warned) {
      const n = noticeOf(a)!;
      const name = sessionRow(a, now).name;
      const actions = keepOffered(n, now)
        ? [{ label: 'Keep it', caption: 'Push the reclaim back', displayType: 'accent' as const,
             callback: () => void this.keep(a, name) }]
        : [];
      this.dismiss(a.id);
      this.toasts.set(a.id, Notification.warning(warningMessage(name, n), { autoClose: false, actions }));
    }
    for (const a of news.ended) {
      this.dismiss(a.id);
      Notification.info(endedMessage(sessionRow(a, now).name, a), { autoClose: 15_000 });
    }
    news.gone.forEach(id => this.dismiss(id));
  }

  private async keep(a: IReclaimable, name: string): Promise<void> {
    try {
      await this.store.keep(a);
    } catch (e) {
      await showErrorMessage(`Session ${name} was not kept`, (e as Error).message);
    }
  }

  private dismiss(id: string): void {
    const toast = this.toasts.get(id);
    if (toast) {
      Notification.dismiss(toast);
      this.toasts.delete(id);
    }
  }

  private readonly toasts = new Map<string, string>();
  private readonly poll: Poll;
  private readonly unsubscribe: () => void;
}
