/**
 * Uploads through the service's tus endpoint with tus-js-client, via this
 * Jupyter server's forwarder: each request carries what `requestAPI` adds
 * (Jupyter's XSRF header from the `_xsrf` cookie, and the server token
 * when Lab holds one), so every verb passes Jupyter's checks.
 */

import { ServerConnection } from '@jupyterlab/services';
import * as tus from 'tus-js-client';

import { tusEndpoint } from './api';
import {
  CHUNK_SIZE,
  errorMessage,
  parseOffsetHeader,
  tusMetadata,
  uploadFingerprint
} from './upload';

export interface IUploadEvents {
  /** the service already held `offset` bytes of this file (a resumed upload) */
  onResumed(offset: number): void;
  onProgress(sent: number, total: number): void;
  onDone(): void;
  /** `conflict`: the name exists (409 at creation) */
  onError(message: string, conflict: boolean): void;
}

export interface IUploadHandle {
  /** stop sending; the service keeps the bytes it has (resume later) */
  pause(): Promise<void>;
  /** go on from the service's offset */
  resume(): void;
  /** stop and drop the partial upload and its quota reservation */
  cancel(): Promise<void>;
}

/** Jupyter's XSRF token, as ServerConnection sends it. */
export function xsrfToken(): string | undefined {
  let cookie = '';
  try {
    cookie = document.cookie;
  } catch {
    return undefined; // e.g. a sandboxed page
  }
  const match = cookie.match('\\b_xsrf=([^;]*)\\b');
  return match ? match[1] : undefined;
}

/** The headers `ServerConnection.makeRequest` would add. */
export function jupyterHeaders(
  settings: ServerConnection.ISettings
): Record<string, string> {
  const headers: Record<string, string> = {};
  if (settings.token) {
    headers['Authorization'] = `token ${settings.token}`;
  }
  const xsrf = xsrfToken();
  if (xsrf !== undefined) {
    headers['X-XSRFToken'] = xsrf;
  }
  return headers;
}

function statusOf(error: Error): number | null {
  const res = (error as tus.DetailedError).originalResponse;
  return res ? res.getStatus() : null;
}

/**
 * Upload `file` to `path` in the folder. A file sent to the same place
 * before and broken off (a lost connection, a closed tab) goes on from the
 * service's offset.
 */
export async function startUpload(
  settings: ServerConnection.ISettings,
  folderId: string,
  path: string,
  file: File,
  overwrite: boolean,
  events: IUploadEvents,
  chunkSize: number = CHUNK_SIZE
): Promise<IUploadHandle> {
  const fingerprint = uploadFingerprint(folderId, path, overwrite, file);
  const upload = new tus.Upload(file, {
    endpoint: tusEndpoint(settings, folderId),
    chunkSize,
    metadata: tusMetadata(path, overwrite),
    fingerprint: () => Promise.resolve(fingerprint),
    storeFingerprintForResuming: true,
    removeFingerprintOnSuccess: true,
    retryDelays: [0, 1000, 3000, 5000, 10000],
    onShouldRetry: (error, attempt, options) => {
      const status = statusOf(error);
      const method = error.originalRequest?.getMethod();
      if (status === 409 && method === 'POST') {
        return false; // the name exists: ask, do not retry
      }
      // network errors, 5xx (502: the service restarts), 409/423 (offset)
      return (
        status === null || status >= 500 || status === 409 || status === 423
      );
    },
    onBeforeRequest: req => {
      for (const [name, value] of Object.entries(jupyterHeaders(settings))) {
        req.setHeader(name, value);
      }
    },
    onAfterResponse: (req, res) => {
      if (req.getMethod() === 'HEAD' && res.getStatus() === 200) {
        const offset = parseOffsetHeader(res.getHeader('Upload-Offset') ?? null);
        if (offset !== null) {
          events.onResumed(offset);
        }
      }
    },
    onProgress: (sent, total) => events.onProgress(sent, total),
    onSuccess: () => events.onDone(),
    onError: error => {
      const status = statusOf(error);
      const body =
        (error as tus.DetailedError).originalResponse?.getBody() ?? null;
      const conflict =
        status === 409 &&
        (error as tus.DetailedError).originalRequest?.getMethod() === 'POST';
      events.onError(errorMessage(status, body, error.message), conflict);
    }
  });
  const previous = await upload.findPreviousUploads();
  if (previous.length > 0) {
    upload.resumeFromPreviousUpload(previous[0]);
  }
  upload.start();
  return {
    pause: () => upload.abort(false),
    resume: () => upload.start(),
    cancel: () => upload.abort(upload.url !== null)
  };
}
