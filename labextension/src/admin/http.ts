/**
 * The admin pages' calls to the hubgrid API through this server's extension
 * (as the server's owner). Unlike requestAPI, a refusal keeps its status and
 * the 422 `detail` list (AdminError), so forms can show it next to a field.
 */

import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import { fileNameFrom } from '../download';
import { API_NAMESPACE } from '../request';
import { AdminError, errorFromBody } from './errors';

async function send(
  settings: ServerConnection.ISettings,
  path: string,
  init: RequestInit
): Promise<Response> {
  const url = URLExt.join(settings.baseUrl, API_NAMESPACE, path);
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, init, settings);
  } catch (error) {
    throw new AdminError(0, `cannot reach this Jupyter server: ${String(error)}`);
  }
  if (!response.ok) {
    throw errorFromBody(response.status, response.statusText, await response.text());
  }
  return response;
}

/** A JSON call: `body` (if any) sent as JSON; the answer parsed (null on 204). */
export async function adminCall<T>(
  settings: ServerConnection.ISettings,
  path: string,
  method = 'GET',
  body?: unknown,
  contentType = 'application/json'
): Promise<T> {
  const init: RequestInit = { method };
  if (body !== undefined) {
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
    init.headers = { 'Content-Type': contentType };
  }
  const response = await send(settings, path, init);
  const text = await response.text();
  return (text ? JSON.parse(text) : null) as T;
}

/** A JSON list and how many there are in all (X-Total-Count, when the service sent only some). */
export async function adminList<T>(
  settings: ServerConnection.ISettings,
  path: string
): Promise<{ items: T[]; total: number }> {
  const response = await send(settings, path, {});
  const items = (await response.json()) as T[];
  return { items, total: Number(response.headers.get('X-Total-Count') ?? items.length) };
}

/** A download: the bytes and the file name the service gives them. */
export async function adminDownload(
  settings: ServerConnection.ISettings,
  path: string,
  fallbackName: string
): Promise<{ blob: Blob; name: string }> {
  const response = await send(settings, path, {});
  const name = fileNameFrom(response.headers.get('Content-Disposition'), fallbackName);
  return { blob: await response.blob(), name };
}
