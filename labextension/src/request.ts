import { URLExt } from '@jupyterlab/coreutils';

import { ServerConnection } from '@jupyterlab/services';

/** Where the server extension answers, under the server's base URL. */
export const API_NAMESPACE = 'hubgrid/api';

/**
 * Call the hubgrid API through this Jupyter server's extension (which adds
 * the server's own credential: the browser holds none).
 *
 * @param endPoint API path under the hubgrid API, e.g. 'me'
 * @param serverSettings The server settings to use for the request
 * @param init Initial values for the request
 * @returns The response body interpreted as JSON
 * @throws ServerConnection.ResponseError with the service's message
 */
export async function requestAPI<T>(
  endPoint: string,
  serverSettings: ServerConnection.ISettings,
  init: RequestInit = {}
): Promise<T> {
  const requestUrl = URLExt.join(
    serverSettings.baseUrl,
    API_NAMESPACE,
    endPoint
  );

  let response: Response;
  try {
    response = await ServerConnection.makeRequest(
      requestUrl,
      init,
      serverSettings
    );
  } catch (error) {
    throw new ServerConnection.NetworkError(error as any);
  }

  let data: any = await response.text();

  if (data.length > 0) {
    try {
      data = JSON.parse(data);
    } catch (error) {
      console.log('Not a JSON response body.', response);
    }
  }

  if (!response.ok) {
    throw new ServerConnection.ResponseError(response, responseMessage(response.status, data));
  }

  return data;
}

/**
 * What a failed call says: the service's message; a 424 is JupyterHub's
 * "server no longer running" (stopped, or reclaimed): said for people.
 */
export function responseMessage(status: number, data: any): string {
  if (status === 424) {
    return 'This session\'s server is no longer running (stopped, or reclaimed): start it again from the hub';
  }
  return data?.message || data;
}
