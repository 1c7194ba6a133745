/**
 * The Model Store page's calls through this server's extension
 * (`hubgrid/api/`, which adds the server's credential): the published
 * models, a deploy's check and the deploy, publish and unpublish; the
 * choices of the forms through the Sessions panel's calls. Every refusal
 * is a StoreError with the service's message and its problems by field.
 */

import { ServerConnection } from '@jupyterlab/services';

import { HubgridApi } from '../sessions/api';
import { callApi, ProblemsError } from '../problems';
import { ICheck, IDeployBody, IEndpointMade, IPublishBody, IStoreModel } from './types';

const enc = encodeURIComponent;

/** A refusal: the service's message, its HTTP status (0: no answer), its problems. */
export const StoreError = ProblemsError;
export type StoreError = ProblemsError;

export class StoreApi {
  constructor(readonly settings: ServerConnection.ISettings) {
    this.hubgrid = new HubgridApi(settings);
  }

  /** me, resource groups, images, folders */
  readonly hubgrid: HubgridApi;

  list(): Promise<IStoreModel[]> {
    return this.call('model-store');
  }

  check(id: string, body: IDeployBody): Promise<ICheck> {
    return this.call(`model-store/${enc(id)}/check`, 'POST', body);
  }

  deploy(id: string, body: IDeployBody): Promise<IEndpointMade> {
    return this.call(`model-store/${enc(id)}/deploy`, 'POST', body);
  }

  publish(body: IPublishBody): Promise<IStoreModel> {
    return this.call('model-store', 'POST', body);
  }

  /** The domains the caller sees (a superadmin: every one), for where to publish. */
  domains(): Promise<Array<{ name: string; active?: boolean }>> {
    return this.call('domains');
  }

  unpublish(id: string): Promise<void> {
    return this.call(`model-store/${enc(id)}`, 'DELETE');
  }

  private call<T>(path: string, method = 'GET', body?: unknown): Promise<T> {
    return callApi<T>(this.settings, path, method, body);
  }
}
