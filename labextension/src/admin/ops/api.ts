/**
 * The ops pages' calls: the hubgrid API through this server's extension
 * (`hubgrid/api/<path>`, as the server's owner). Every refusal throws the
 * service's message (ServerConnection.ResponseError from requestAPI).
 */

import { ServerConnection } from '@jupyterlab/services';

import { requestAPI } from '../../request';
import { IMoveRequest } from './queue';
import {
  IAdminGroup,
  IAdminNode,
  IAllocation,
  IGrant,
  IImage,
  IQueue,
  IQueueEntry,
  IScanResult
} from './types';

const enc = encodeURIComponent;

function body(method: string, data: unknown): RequestInit {
  return {
    method,
    body: JSON.stringify(data),
    headers: { 'Content-Type': 'application/json' }
  };
}

export class OpsApi {
  constructor(readonly settings: ServerConnection.ISettings) {}

  private call<T>(path: string, init: RequestInit = {}): Promise<T> {
    return requestAPI<T>(path, this.settings, init);
  }

  groups(): Promise<IAdminGroup[]> {
    return this.call('resource-groups');
  }

  patchGroup(group: string, change: object): Promise<IAdminGroup> {
    return this.call(`resource-groups/${enc(group)}`, body('PATCH', change));
  }

  grant(group: string, grant: IGrant): Promise<unknown> {
    return this.call(`resource-groups/${enc(group)}/grants`, body('PUT', grant));
  }

  revoke(group: string, grant: IGrant): Promise<unknown> {
    return this.call(`resource-groups/${enc(group)}/grants`, body('DELETE', grant));
  }

  nodes(): Promise<IAdminNode[]> {
    return this.call('nodes');
  }

  /** The node with its GPU holders, its sessions and until_empty. */
  nodeSessions(node: string): Promise<IAdminNode> {
    return this.call(`nodes/${enc(node)}/sessions`);
  }

  setSchedulable(node: string, schedulable: boolean): Promise<IAdminNode> {
    return this.call(`nodes/${enc(node)}`, body('PATCH', { schedulable }));
  }

  queue(group: string): Promise<IQueue> {
    return this.call(`resource-groups/${enc(group)}/queue`);
  }

  changeQueued(group: string, id: string, change: IMoveRequest): Promise<IQueueEntry> {
    return this.call(`resource-groups/${enc(group)}/queue/${enc(id)}`, body('PATCH', change));
  }

  cancelQueued(group: string, id: string): Promise<unknown> {
    return this.call(`resource-groups/${enc(group)}/queue/${enc(id)}`, { method: 'DELETE' });
  }

  /** `query`: a query string from sessionsQuery (without '?'), or ''. */
  allocations(query: string): Promise<IAllocation[]> {
    return this.call('allocations' + (query ? `?${query}` : ''));
  }

  release(id: string): Promise<unknown> {
    return this.call(`allocations/${enc(id)}`, { method: 'DELETE' });
  }

  async log(id: string): Promise<string> {
    const text = await this.call<unknown>(`allocations/${enc(id)}/logs?tail=65536`);
    return typeof text === 'string' ? text : JSON.stringify(text);
  }

  images(): Promise<IImage[]> {
    return this.call('images');
  }

  patchImage(name: string, change: object): Promise<IImage> {
    return this.call(`images/${enc(name)}`, body('PATCH', change));
  }

  scan(): Promise<IScanResult> {
    return this.call('images/scan', { method: 'POST' });
  }
}
