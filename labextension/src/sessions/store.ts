/**
 * The Sessions menu's state: my sessions (every project, every named
 * server), read on a backing-off poll that pauses while nobody looks; the
 * hub's view of my servers (starting, ready); the starts that failed; and
 * idle reclamation's warnings (news for the notifications, "keep it").
 */

import { ServerConnection } from '@jupyterlab/services';

import { IAllocation, IMeModel } from '../summary/types';
import { HubgridApi, IHubServer, stoppedWhileStarting } from './api';
import { announceSessionsChanged } from './events';
import { diffSessions, isQuiet, stopPlan } from './model';
import { IdlePoll } from './poller';
import { IKeepAnswer, IReclaimable, IWatchNews, rememberKeep, watch, watchState } from './reclaim';

export interface IStartFailure {
  name: string;
  message: string;
  at: number;
}

/** how many ended sessions the list shows first */
export const ENDED_PAGE = 10;

export class SessionsStore {
  constructor(settings: ServerConnection.ISettings, hidden: () => boolean) {
    this.api = new HubgridApi(settings);
    this.poll = new IdlePoll({
      name: 'hubgrid:sessions',
      tick: () => this.load(),
      hidden,
      base: 3000,
      max: 30000
    });
  }

  me: IMeModel | null = null;
  /** my active sessions, and the newest `endedWanted` of my ended ones */
  allocations: IAllocation[] = [];
  /** how many of my ended sessions are read (Show more reads more) */
  endedWanted = ENDED_PAGE;
  /** how many ended sessions I have in all */
  endedTotal = 0;
  servers: { [name: string]: IHubServer } = {};
  failures: IStartFailure[] = [];
  error = '';
  loaded = false;
  readonly api: HubgridApi;

  /** this page's keeps, by allocation id (shown until the service's next notice) */
  readonly kept = new Map<string, IKeepAnswer>();

  /** Call `news` with each poll's reclaim news (warnings to notify once, warned sessions that ended). */
  onReclaimNews(news: (n: IWatchNews) => void): () => void {
    this.newsListeners.add(news);
    return () => this.newsListeners.delete(news);
  }

  /**
   * Read now if the last read is older than `maxAge` ms, even while the
   * panel is hidden (its poll stands by then): the reclaim warnings.
   */
  async readIfStale(maxAge: number): Promise<void> {
    if (Date.now() - this.readAt >= maxAge) {
      await this.load().catch(() => undefined);
    }
  }

  /** "Keep it": push the session's reclaim deadline; a refusal (422: no more keeps) is thrown. */
  async keep(a: IAllocation): Promise<IKeepAnswer> {
    const answer = await this.api.keep(a.id);
    this.kept.set(a.id, answer);
    rememberKeep(this.watched, a.id, answer);
    this.changed();
    announceSessionsChanged();
    await this.load().catch(() => undefined);
    return answer;
  }

  /** Call `listener` after each change of state. */
  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  refresh(): Promise<void> {
    return this.poll.refresh();
  }

  dispose(): void {
    this.poll.dispose();
    this.listeners.clear();
    this.newsListeners.clear();
  }

  /**
   * Start a named server of mine; a refusal is kept as a failed start (and
   * thrown). A start ended by a stop asked meanwhile is no failure: false.
   */
  async start(name: string, options: object): Promise<boolean> {
    const me = await this.whoAmI();
    try {
      await this.api.startServer(me.name, name, options);
    } catch (e) {
      if (stoppedWhileStarting(e)) {
        announceSessionsChanged();
        await this.refresh();
        return false;
      }
      this.failures = [
        { name, message: (e as Error).message, at: Date.now() },
        ...this.failures.filter(f => f.name !== name)
      ].slice(0, 5);
      this.changed();
      throw e;
    }
    this.failures = this.failures.filter(f => f.name !== name);
    announceSessionsChanged();
    await this.refresh();
    return true;
  }

  /** Stop (or cancel) a session: its server through the hub, else release it. */
  async stop(a: IAllocation): Promise<void> {
    const plan = stopPlan(a);
    if (plan?.kind === 'hub') {
      await this.api.stopServer(plan.user, plan.server);
    } else if (plan?.kind === 'release') {
      await this.api.release(plan.id);
    }
    announceSessionsChanged();
    await this.refresh();
  }

  /** Read more of my ended sessions. */
  async showMoreEnded(): Promise<void> {
    this.endedWanted += 2 * ENDED_PAGE;
    await this.refresh();
  }

  dismissFailure(name: string): void {
    this.failures = this.failures.filter(f => f.name !== name);
    this.changed();
  }

  private async whoAmI(): Promise<IMeModel> {
    if (!this.me) {
      this.me = await this.api.me();
    }
    return this.me;
  }

  private async load(): Promise<{ quiet: boolean; busy: boolean }> {
    try {
      const me = await this.whoAmI();
      const [active, ended, servers] = await Promise.all([
        this.api.allocationsPage({ user: me.name, state: 'pending,allocated' }),
        this.api.allocationsPage({ user: me.name, state: 'released,cancelled', limit: this.endedWanted }),
        this.api
          .hubUser(me.name)
          .then(u => u.servers ?? {})
          .catch(() => ({}) as { [name: string]: IHubServer })
      ]);
      const allocations = [...active.items, ...ended.items];
      this.endedTotal = ended.total;
      const diff = diffSessions(this.allocations, allocations);
      const serversChanged = JSON.stringify(servers) !== JSON.stringify(this.servers);
      const quiet = this.loaded && isQuiet(diff) && !serversChanged;
      this.allocations = allocations;
      this.servers = servers;
      this.readAt = Date.now();
      const news = watch(this.watched, allocations as IReclaimable[]);
      this.error = '';
      const first = !this.loaded;
      this.loaded = true;
      this.changed();
      // every read: the banner of this Lab's own session follows its notice
      news.mine = allocations as IReclaimable[];
      this.newsListeners.forEach(listener => listener(news));
      if (!quiet && !first) {
        announceSessionsChanged();
      }
      // a server starting: stay quick until it runs (a queued one backs off:
      // a change of its reasons or its admission shows at the next poll)
      const starting = Object.values(servers).some(s => !!s.pending);
      return { quiet, busy: starting };
    } catch (e) {
      this.error = (e as Error).message;
      this.changed();
      throw e;
    }
  }

  private changed(): void {
    this.listeners.forEach(listener => listener());
  }

  private readAt = 0;
  private readonly watched = watchState();
  private readonly newsListeners = new Set<(n: IWatchNews) => void>();
  private readonly poll: IdlePoll;
  private readonly listeners = new Set<() => void>();
}
