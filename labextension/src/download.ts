/**
 * Downloads: made from fetched answers (CSV exports of the admin and
 * Statistics pages: the name a server gave the file, and the save), and of
 * a folder's files through a one-use ticket, so that no credential is ever
 * put in a URL (jupyterlab_hubgrid/downloads.py).
 */

import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

/** where this server issues download tickets */
export const TICKETS_PATH = 'hubgrid/download-tickets';

/**
 * A one-use link (valid 60 s) to one file of a folder: asked of this
 * server with an ordinary authenticated, XSRF-checked call; the link holds
 * no token, only the ticket, which works once.
 */
export async function downloadTicket(
  settings: ServerConnection.ISettings,
  folderId: string,
  path: string
): Promise<string> {
  const response = await ServerConnection.makeRequest(
    URLExt.join(settings.baseUrl, TICKETS_PATH),
    {
      method: 'POST',
      body: JSON.stringify({ folder: folderId, path }),
      headers: { 'Content-Type': 'application/json' }
    },
    settings
  );
  const data = await response.json().catch(() => ({}));
  if (!response.ok || typeof data?.url !== 'string') {
    throw new ServerConnection.ResponseError(response, data?.message || `the download was refused (${response.status})`);
  }
  return data.url;
}

/** Follow a download link (the browser saves the file under `name`). */
export function followDownload(url: string, name: string): void {
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.rel = 'noreferrer';
  a.style.display = 'none';
  document.body.appendChild(a);
  a.click();
  a.remove();
}

/** Hand `blob` to the browser as a download named `name`. */
export function saveBlob(blob: Blob, name: string): void {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.style.display = 'none';
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

/**
 * The file name a Content-Disposition header gives (RFC 6266: `filename*`
 * over `filename`), stripped of any path, or `fallback`.
 */
export function fileNameFrom(disposition: string | null, fallback: string): string {
  let name = '';
  if (disposition) {
    const star = /filename\*\s*=\s*UTF-8''([^;]+)/i.exec(disposition);
    const plain = /filename\s*=\s*"([^"]*)"/i.exec(disposition) ?? /filename\s*=\s*([^;\s]+)/i.exec(disposition);
    if (star) {
      try {
        name = decodeURIComponent(star[1].trim());
      } catch {
        name = '';
      }
    }
    if (!name && plain) {
      name = plain[1];
    }
  }
  name = name.split(/[\\/]/).pop()!.replace(/[\u0000-\u001f\u007f]/g, '').trim();
  return name && name !== '.' && name !== '..' ? name : fallback;
}
