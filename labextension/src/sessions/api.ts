/**
 * The calls of the Summary and Sessions menus: the hubgrid API through the
 * server extension (`hubgrid/api/`), and the owner's servers through its
 * hub door (`hubgrid/hub/`: start, stop, read). The browser holds no
 * credential; every refusal is an Error with the service's (or hub's) message.
 */

import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import {
  IAllocation,
  IGroupModel,
  IKeypairModel,
  IMeModel,
  INodeModel,
  IPolicyModel
} from '../summary/types';
import type { IHistory, IUsage } from './detail';
import { IDryRun, IPreset } from './launch';
import { ILogPart } from './log';
import { IKeepAnswer } from './reclaim';

/** A page of allocations, and how many there are in all. */
export interface IAllocationPage {
  items: IAllocation[];
  total: number;
}

/** A refusal, with its HTTP status (0: no answer) and reason, if any. */
export class HubgridError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly reason = ''
  ) {
    super(message);
  }
}

/** The hub door's reason for a start whose session was stopped before it was up. */
export const STOPPED_WHILE_STARTING = 'Stopped while starting';

/** Whether `error` says the start was ended by a stop (mine, asked meanwhile). */
export function stoppedWhileStarting(error: unknown): boolean {
  return (
    error instanceof HubgridError && error.status === 409 && error.reason === STOPPED_WHILE_STARTING
  );
}

async function send(
  settings: ServerConnection.ISettings,
  path: string,
  init: RequestInit = {}
): Promise<Response> {
  const url = URLExt.join(settings.baseUrl, path);
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, init, settings);
  } catch (error) {
    throw new HubgridError(`cannot reach this Jupyter server: ${String(error)}`, 0);
  }
  if (!response.ok) {
    const text = await response.text();
    let message = text.slice(0, 500) || response.statusText;
    let reason = '';
    try {
      const body = JSON.parse(text);
      message = body.message || message;
      reason = typeof body.reason === 'string' ? body.reason : '';
    } catch {
      // not JSON: the text as it is
    }
    throw new HubgridError(message, response.status, reason);
  }
  return response;
}

async function json<T>(
  settings: ServerConnection.ISettings,
  path: string,
  init: RequestInit = {}
): Promise<T> {
  const response = await send(settings, path, init);
  const text = await response.text();
  return (text ? JSON.parse(text) : null) as T;
}

const API = 'hubgrid/api/';
const HUB = 'hubgrid/hub/';
const enc = encodeURIComponent;

function post(body: unknown): RequestInit {
  return {
    method: 'POST',
    body: JSON.stringify(body),
    headers: { 'Content-Type': 'application/json' }
  };
}

/** The hubgrid calls, bound to this server's settings. */
export class HubgridApi {
  constructor(readonly settings: ServerConnection.ISettings) {}

  me(): Promise<IMeModel> {
    return json(this.settings, API + 'me');
  }

  policies(): Promise<IPolicyModel[]> {
    return json(this.settings, API + 'resource-policies');
  }

  keypairs(): Promise<IKeypairModel[]> {
    return json(this.settings, API + 'keypairs');
  }

  /** The resource presets every user is offered (the default one marked). */
  presets(): Promise<IPreset[]> {
    return json(this.settings, API + 'resource-presets');
  }

  groups(): Promise<IGroupModel[]> {
    return json(this.settings, API + 'resource-groups');
  }

  nodes(): Promise<INodeModel[]> {
    return json(this.settings, API + 'nodes');
  }

  images(): Promise<
    Array<{ name: string; description?: string; session_types?: string[] }>
  > {
    return json(this.settings, API + 'images');
  }

  folders(): Promise<Array<{ id: string; name: string; status?: string }>> {
    return json(this.settings, API + 'vfolders');
  }

  /** Allocations I may see (`state`, `user` narrow). */
  async allocations(state?: string, user?: string): Promise<IAllocation[]> {
    return (await this.allocationsPage({ state, user })).items;
  }

  /**
   * Allocations I may see: `state` (one or several, comma-separated) and
   * `user` narrow, `limit` keeps the newest; `total` counts them all.
   */
  async allocationsPage(query: { state?: string; user?: string; limit?: number }): Promise<IAllocationPage> {
    const q = new URLSearchParams();
    for (const [key, value] of Object.entries(query)) {
      if (value !== undefined && value !== '') {
        q.set(key, String(value));
      }
    }
    const qs = q.toString();
    const response = await send(this.settings, API + 'allocations' + (qs ? `?${qs}` : ''));
    const items = (await response.json()) as IAllocation[];
    return { items, total: Number(response.headers.get('X-Total-Count') ?? items.length) };
  }

  dryRun(body: object): Promise<IDryRun> {
    return json(this.settings, API + 'allocations/dry-run', post(body));
  }

  /** Release an allocation made through the API, or cancel a pending one. */
  async release(id: string): Promise<void> {
    await send(this.settings, API + `allocations/${enc(id)}`, { method: 'DELETE' });
  }

  /** "Keep it": push the session's reclaim deadline (a 422 when the policy allows no more). */
  keep(id: string): Promise<IKeepAnswer> {
    return json(this.settings, API + `allocations/${enc(id)}/keep`, post({}));
  }

  /** One allocation I may see. */
  allocation(id: string): Promise<IAllocation> {
    return json(this.settings, API + `allocations/${enc(id)}`);
  }

  /** The session's scheduling history, oldest first (its detail view). */
  history(id: string): Promise<IHistory> {
    return json(this.settings, API + `allocations/${enc(id)}/history`);
  }

  /** The session's live use: the reclaim pass's readings of its CPU, memory and GPUs. */
  usage(id: string): Promise<IUsage> {
    return json(this.settings, API + `allocations/${enc(id)}/usage`);
  }

  /** The session's log as text (the last `tail` bytes). */
  async log(id: string, tail?: number): Promise<string> {
    return (await this.logPart(id, tail ? { tail } : {})).text;
  }

  /** The log (its last `tail` bytes), or its output from position `offset` on, with where it begins and ends. */
  async logPart(id: string, at: { tail?: number; offset?: number }): Promise<ILogPart> {
    const q = new URLSearchParams();
    if (at.tail !== undefined) {
      q.set('tail', String(at.tail));
    }
    if (at.offset !== undefined) {
      q.set('offset', String(at.offset));
    }
    const qs = q.toString();
    const response = await send(this.settings, API + `allocations/${enc(id)}/logs${qs ? `?${qs}` : ''}`);
    return {
      text: await response.text(),
      start: Number(response.headers.get('X-Hubgrid-Log-Start') ?? 0),
      end: Number(response.headers.get('X-Hubgrid-Log-End') ?? 0)
    };
  }

  /** Start my named server with these user_options: true when it is up (201). */
  async startServer(user: string, server: string, options: object): Promise<boolean> {
    const response = await send(
      this.settings,
      HUB + `users/${enc(user)}/servers/${enc(server)}`,
      post({ user_options: options })
    );
    return response.status === 201;
  }

  /** Stop it: true when stopped (204), false while it stops (202). */
  async stopServer(user: string, server: string): Promise<boolean> {
    const response = await send(this.settings, HUB + `users/${enc(user)}/servers/${enc(server)}`, {
      method: 'DELETE'
    });
    return response.status === 204;
  }

  /** My hub model: my servers (names, ready, pending, url). */
  hubUser(user: string): Promise<{ servers?: { [name: string]: IHubServer } }> {
    return json(this.settings, HUB + `users/${enc(user)}`);
  }
}

export interface IHubServer {
  name: string;
  ready: boolean;
  pending: string | null;
  url: string;
  started?: string | null;
}
