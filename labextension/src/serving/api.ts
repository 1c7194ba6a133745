/**
 * The Serving page's calls: endpoints, their validate, tokens and scale,
 * through this server's extension (`hubgrid/api/`, which adds the server's
 * credential); the choices of the create form and a replica's session
 * (its log) through the Sessions panel's calls. Every refusal is a
 * ServingError with the service's message (and a create's problems).
 */

import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import { HubgridApi } from '../sessions/api';
import { problemsOf } from './model';
import { ICreateBody, IEndpoint, IProblem, IRule, IToken, IValidation } from './types';

const API = 'hubgrid/api/';
const enc = encodeURIComponent;

/** A refusal: the service's message, its HTTP status (0: no answer), a create's problems. */
export class ServingError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly problems: IProblem[] = []
  ) {
    super(message);
  }
}

export class ServingApi {
  constructor(readonly settings: ServerConnection.ISettings) {
    this.hubgrid = new HubgridApi(settings);
  }

  /** the Sessions panel's calls: me, groups, images, folders, an allocation and its log */
  readonly hubgrid: HubgridApi;

  list(): Promise<IEndpoint[]> {
    return this.call('endpoints');
  }

  get(id: string): Promise<IEndpoint> {
    return this.call(`endpoints/${enc(id)}`);
  }

  validate(body: ICreateBody): Promise<IValidation> {
    return this.call('endpoints/validate', 'POST', body);
  }

  create(body: ICreateBody): Promise<IEndpoint> {
    return this.call('endpoints', 'POST', body);
  }

  scale(id: string, replicas: number): Promise<IEndpoint> {
    return this.call(`endpoints/${enc(id)}`, 'PATCH', { replicas });
  }

  /** Replace its autoscaling rules ([] removes them). */
  autoscale(id: string, rules: IRule[]): Promise<IEndpoint> {
    return this.call(`endpoints/${enc(id)}`, 'PATCH', { autoscaling: rules });
  }

  remove(id: string): Promise<void> {
    return this.call(`endpoints/${enc(id)}`, 'DELETE');
  }

  tokens(id: string): Promise<IToken[]> {
    return this.call(`endpoints/${enc(id)}/tokens`);
  }

  /** A token: its secret is in this answer only. */
  createToken(id: string, days: number): Promise<IToken> {
    return this.call(`endpoints/${enc(id)}/tokens`, 'POST', { expires_in_days: days });
  }

  revokeToken(id: string, tokenId: string): Promise<void> {
    return this.call(`endpoints/${enc(id)}/tokens/${enc(tokenId)}`, 'DELETE');
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
      throw new ServingError(`cannot reach this Jupyter server: ${String(error)}`, 0);
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
      throw new ServingError(String(message), response.status, problemsOf(data));
    }
    return data as T;
  }
}
