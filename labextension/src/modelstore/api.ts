/**
 * The Model Store page's calls through this server's extension
 * (`hubgrid/api/`, which adds the server's credential): the published
 * models, a deploy's check and the deploy, publish and unpublish; the
 * choices of the forms through the Sessions panel's calls. Every refusal
 * is a StoreError with the service's message and its problems by field.
 */

import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import { HubgridApi } from '../sessions/api';
import { problemsOf } from './model';
import { ICheck, IDeployBody, IEndpointMade, IProblem, IPublishBody, IStoreModel } from './types';

const API = 'hubgrid/api/';
const enc = encodeURIComponent;

/** A refusal: the service's message, its HTTP status (0: no answer), its problems. */
export class StoreError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly problems: IProblem[] = []
  ) {
    super(message);
  }
}

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

  unpublish(id: string): Promise<void> {
    return this.call(`model-store/${enc(id)}`, 'DELETE');
  }

  private async call<T>(path: string, method = 'GET', body?: unknown): Promise<T> {
    const init: RequestInit = { method };
    if (body !== undefined) {
      init.body = JSON.stringify(body);
      init.headers = { 'Content-Type': 'application/json' };
    }
    let response: Response;
    try {
      response = await ServerConnection.makeRequest(URLExt.join(this.settings.baseUrl, API, path), init, this.settings);
    } catch (error) {
      throw new StoreError(`cannot reach this Jupyter server: ${String(error)}`, 0);
    }
    const text = await response.text();
    let data: unknown = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch {
      data = null;
    }
    if (!response.ok) {
      const message = (data as { message?: string } | null)?.message || text.slice(0, 500) || response.statusText;
      throw new StoreError(String(message), response.status, problemsOf(data));
    }
    return data as T;
  }
}
