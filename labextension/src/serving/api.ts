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
import { callApi, ProblemsError } from '../problems';
import { IGatewayInfo } from './callsnippet';
import { ICreateBody, IEndpoint, IRule, IToken, IValidation } from './types';

const enc = encodeURIComponent;

/** A refusal: the service's message, its HTTP status (0: no answer), its problems. */
export const ServingError = ProblemsError;
export type ServingError = ProblemsError;

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

  /** Where this server reaches the gateway (`hubgrid/gateway-info`); null when it cannot say. */
  async gatewayInfo(): Promise<IGatewayInfo | null> {
    try {
      const r = await ServerConnection.makeRequest(URLExt.join(this.settings.baseUrl, 'hubgrid/gateway-info'), {}, this.settings);
      return r.ok ? ((await r.json()) as IGatewayInfo) : null;
    } catch {
      return null;
    }
  }

  private call<T>(path: string, method = 'GET', body?: unknown): Promise<T> {
    return callApi<T>(this.settings, path, method, body);
  }
}
