/**
 * The ops pages' calls: the hubgrid API through this server's extension
 * (`hubgrid/api/<path>`, as the server's owner). Every refusal throws an
 * AdminError with the service's status and message (../http.ts).
 */

import { ServerConnection } from '@jupyterlab/services';

import { adminCall, adminDownload, adminList } from '../http';
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

export class OpsApi {
  constructor(readonly settings: ServerConnection.ISettings) {}

  private call<T>(path: string, method = 'GET', data?: unknown): Promise<T> {
    return adminCall<T>(this.settings, path, method, data);
  }

  groups(): Promise<IAdminGroup[]> {
    return this.call('resource-groups');
  }

  patchGroup(group: string, change: object): Promise<IAdminGroup> {
    return this.call(`resource-groups/${enc(group)}`, 'PATCH', change);
  }

  grant(group: string, grant: IGrant): Promise<unknown> {
    return this.call(`resource-groups/${enc(group)}/grants`, 'PUT', grant);
  }

  revoke(group: string, grant: IGrant): Promise<unknown> {
    return this.call(`resource-groups/${enc(group)}/grants`, 'DELETE', grant);
  }

  nodes(): Promise<IAdminNode[]> {
    return this.call('nodes');
  }

  /** The node with its GPU holders, its sessions and until_empty. */
  /** Several nodes' sessions and GPU maps in one read (GET node-sessions: at most 200). */
  nodesSessions(nodes: string[]): Promise<IAdminNode[]> {
    return this.call(`node-sessions?names=${nodes.map(enc).join(',')}`);
  }

  setSchedulable(node: string, schedulable: boolean): Promise<IAdminNode> {
    return this.call(`nodes/${enc(node)}`, 'PATCH', { schedulable });
  }

  queue(group: string): Promise<IQueue> {
    return this.call(`resource-groups/${enc(group)}/queue`);
  }

  changeQueued(group: string, id: string, change: IMoveRequest): Promise<IQueueEntry> {
    return this.call(`resource-groups/${enc(group)}/queue/${enc(id)}`, 'PATCH', change);
  }

  cancelQueued(group: string, id: string): Promise<unknown> {
    return this.call(`resource-groups/${enc(group)}/queue/${enc(id)}`, 'DELETE');
  }

  /** `query`: a query string from sessionsQuery (without '?'), or ''; with how many there are in all. */
  allocations(query: string): Promise<{ items: IAllocation[]; total: number }> {
    return adminList<IAllocation>(this.settings, 'allocations' + (query ? `?${query}` : ''));
  }

  /**
   * Stop a session through the service: a hub server's is stopped through
   * the hub (its spawner releases it), an API session released.
   */
  stop(id: string): Promise<unknown> {
    return this.call(`allocations/${enc(id)}/stop`, 'POST');
  }

  async log(id: string): Promise<string> {
    const { blob } = await adminDownload(this.settings, `allocations/${enc(id)}/logs?tail=65536`, 'log');
    return blob.text();
  }

  images(): Promise<IImage[]> {
    return this.call('images');
  }

  patchImage(name: string, change: object): Promise<IImage> {
    return this.call(`images/${enc(name)}`, 'PATCH', change);
  }

  scan(): Promise<IScanResult> {
    return this.call('images/scan', 'POST');
  }
}
