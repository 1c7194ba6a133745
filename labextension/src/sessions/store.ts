/**
 * The Sessions menu's state: my sessions (every project, every named
 * server), read on a backing-off poll that pauses while nobody looks; the
 * hub's view of my servers (starting, ready); and the starts that failed.
 */

import { ServerConnection } from '@jupyterlab/services';

import { IAllocation, IMeModel } from '../summary/types';
import { HubgridApi, IHubServer, stoppedWhileStarting } from './api';
import { announceSessionsChanged } from './events';
import { diffSessions, isQuiet, stopPlan } from './model';
import { IdlePoll } from './poller';

export interface IStartFailure {
  name: string;
  message: string;
  at: number;
}

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
  allocations: IAllocation[] = [];
  servers: { [name: string]: IHubServer } = {};
  failures: IStartFailure[] = [];
  error = '';
  loaded = false;
  readonly api: HubgridApi;

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
      const [allocations, servers] = await Promise.all([
        this.api.allocations(undefined, me.name),
        this.api
          .hubUser(me.name)
          .then(u => u.servers ?? {})
          .catch(() => ({}) as { [name: string]: IHubServer })
      ]);
      const diff = diffSessions(this.allocations, allocations);
      const serversChanged = JSON.stringify(servers) !== JSON.stringify(this.servers);
      const quiet = this.loaded && isQuiet(diff) && !serversChanged;
      this.allocations = allocations;
      this.servers = servers;
      this.error = '';
      const first = !this.loaded;
      this.loaded = true;
      this.changed();
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

  private readonly poll: IdlePoll;
  private readonly listeners = new Set<() => void>();
}
