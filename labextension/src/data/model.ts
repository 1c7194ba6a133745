/**
 * The Data menu's state: me, my policy, the folders I see, my invitations
 * and the storage hosts, read from the service and kept fresh by one poll
 * that slows down while nothing changes and stands by while the page is
 * hidden. Views subscribe; actions call `refresh()` after they change
 * something.
 */

import { ServerConnection } from '@jupyterlab/services';
import { Poll } from '@lumino/polling';

import * as api from './api';
import { answerKey, BASE_INTERVAL, MAX_INTERVAL, nextInterval } from './idle';
import { CHECK_INTERVAL, waitingForMe, waitingKey } from './invitations';
import {
  IDataMe,
  IFolder,
  IHost,
  IInvitation,
  IStoragePolicy
} from './types';

export interface IDataState {
  me: IDataMe | null;
  policy: IStoragePolicy | null;
  folders: IFolder[];
  hosts: IHost[];
  received: IInvitation[];
  sent: IInvitation[];
  /** why the last refresh failed ('' when it did not) */
  error: string;
  loaded: boolean;
}

const EMPTY: IDataState = {
  me: null,
  policy: null,
  folders: [],
  hosts: [],
  received: [],
  sent: [],
  error: '',
  loaded: false
};

export class DataModel {
  constructor(readonly settings: ServerConnection.ISettings) {
    this._poll = new Poll({
      name: 'hubgrid:data',
      factory: () => this._tick(),
      frequency: { interval: BASE_INTERVAL, backoff: true, max: MAX_INTERVAL },
      standby: 'when-hidden'
    });
    // new invitations within seconds: a cheap check, the full read when it differs
    this._check = new Poll({
      name: 'hubgrid:invitations',
      factory: () => this._checkInvitations(),
      frequency: { interval: CHECK_INTERVAL, backoff: true, max: MAX_INTERVAL },
      standby: 'when-hidden'
    });
  }

  get state(): IDataState {
    return this._state;
  }

  /** Invitations waiting for my answer (the badge). */
  get waiting(): number {
    const me = this._state.me;
    return me ? waitingForMe(this._state.received, me.name).length : 0;
  }

  /** Call `listener` after every change; returns the unsubscribe. */
  subscribe(listener: () => void): () => void {
    this._listeners.add(listener);
    return () => this._listeners.delete(listener);
  }

  /** Read everything again now (after an action, or the Refresh button). */
  async refresh(): Promise<void> {
    try {
      await this._tick();
    } catch {
      // kept in state.error; the poll goes on
    }
  }

  dispose(): void {
    this._poll.dispose();
    this._check.dispose();
    this._listeners.clear();
  }

  private async _tick(): Promise<void> {
    let changed: boolean;
    try {
      changed = await this._load();
    } catch (reason) {
      this._set({ ...this._state, error: (reason as Error).message, loaded: true });
      throw reason; // the poll backs off
    }
    const current = this._poll.frequency.interval;
    const interval = nextInterval(current, changed);
    if (interval !== current) {
      this._poll.frequency = { ...this._poll.frequency, interval };
    }
  }

  /** The quick check: the invitations waiting for me; everything again if they changed. */
  private async _checkInvitations(): Promise<void> {
    const me = this._state.me;
    if (!me || !this._state.loaded) {
      return; // the first full read is on its way
    }
    const waiting = await api.listWaitingInvitations(this.settings);
    if (waitingKey(waiting, me.name) !== waitingKey(this._state.received, me.name)) {
      await this.refresh(); // and the full read is quick again (it changed)
    }
  }

  private async _load(): Promise<boolean> {
    const s = this.settings;
    const me = this._state.me ?? (await api.getMe(s));
    const [policy, folders, hosts, received, sent] = await Promise.all([
      this._state.me ? Promise.resolve(this._state.policy) : api.getPolicy(s, me.resource_policy),
      api.listFolders(s),
      this._state.loaded ? Promise.resolve(this._state.hosts) : api.listHosts(s).catch(() => []),
      api.listInvitations(s, 'received'),
      api.listInvitations(s, 'sent')
    ]);
    const key = answerKey(folders, received, sent);
    const changed = key !== this._key || !this._state.loaded || this._state.error !== '';
    this._key = key;
    if (changed) {
      this._set({ me, policy, folders, hosts, received, sent, error: '', loaded: true });
    }
    return changed;
  }

  private _set(state: IDataState): void {
    this._state = state;
    for (const listener of [...this._listeners]) {
      listener();
    }
  }

  private _state: IDataState = EMPTY;
  private _key = '';
  private _listeners = new Set<() => void>();
  private _poll: Poll;
  private _check: Poll;
}
