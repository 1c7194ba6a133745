/**
 * The Statistics page's calls: `GET me` and `GET usage` (JSON, and CSV
 * for the download) through this server's extension, which adds the
 * server's credential (the browser holds none).
 */

import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import { getMe } from '../api';
import { API_NAMESPACE, requestAPI } from '../request';
import { fileNameFrom } from '../download';
import { csvFallbackName, ICaller, IUsageQuery, usagePath } from './query';
import { IUsageReport } from './types';

export class StatisticsApi {
  constructor(readonly settings: ServerConnection.ISettings) {}

  me(): Promise<ICaller> {
    return getMe(this.settings);
  }

  report(me: ICaller, q: IUsageQuery): Promise<IUsageReport> {
    return requestAPI<IUsageReport>(usagePath(me, q), this.settings);
  }

  /** The report as CSV: its bytes and the file name the service gives it. */
  async csv(me: ICaller, q: IUsageQuery): Promise<{ blob: Blob; name: string }> {
    const url = URLExt.join(this.settings.baseUrl, API_NAMESPACE, usagePath(me, q, 'csv'));
    let response: Response;
    try {
      response = await ServerConnection.makeRequest(url, {}, this.settings);
    } catch (error) {
      throw new Error(`cannot reach this Jupyter server: ${String(error)}`);
    }
    if (!response.ok) {
      const text = await response.text();
      let message = text.slice(0, 500) || response.statusText;
      try {
        message = JSON.parse(text).message || message;
      } catch {
        // not JSON: the text itself
      }
      throw new Error(`CSV download refused (${response.status}): ${message}`);
    }
    const name = fileNameFrom(response.headers.get('Content-Disposition'), csvFallbackName(q));
    return { blob: await response.blob(), name };
  }
}
