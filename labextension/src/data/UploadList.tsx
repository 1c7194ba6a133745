/** The uploads of a folder view: a progress bar each, pause, resume, cancel. */

import * as React from 'react';

import { formatBytes, formatRate, formatSeconds } from './format';
import {
  CHUNK_SIZE,
  IUpload,
  planChunks,
  uploadEta,
  uploadFraction,
  uploadRate
} from './upload';

export interface IUploadControls {
  pause(id: string): void;
  resume(id: string): void;
  cancel(id: string): void;
  /** upload again, replacing the existing file (after a 409) */
  replace(id: string): void;
  clear(): void;
}

function status(u: IUpload): string {
  switch (u.phase) {
    case 'queued':
      return 'waiting';
    case 'uploading': {
      const chunks = planChunks(u.size, 0, CHUNK_SIZE).length;
      const chunk = Math.min(chunks, Math.floor(u.sent / CHUNK_SIZE) + 1);
      const parts = [
        `${formatBytes(u.sent)} of ${formatBytes(u.size)}`,
        chunks > 1 ? `chunk ${chunk}/${chunks}` : '',
        formatRate(uploadRate(u)),
        uploadEta(u) !== null ? `${formatSeconds(uploadEta(u))} left` : '',
        u.resumed ? 'resumed' : ''
      ];
      return parts.filter(p => p).join(' · ');
    }
    case 'paused':
      return `paused at ${formatBytes(u.sent)} of ${formatBytes(u.size)}`;
    case 'done':
      return `uploaded ${formatBytes(u.size)}`;
    case 'canceled':
      return 'canceled';
    default:
      return u.error ?? 'failed';
  }
}

export function UploadList(props: {
  uploads: IUpload[];
  controls: IUploadControls;
  canReplace: boolean;
}): JSX.Element | null {
  const { uploads, controls } = props;
  if (uploads.length === 0) {
    return null;
  }
  return (
    <section className="jp-hubgrid-uploads" aria-label="uploads">
      <header>
        <h3>Uploads</h3>
        <button className="jp-Button jp-mod-styled" onClick={controls.clear}>
          Clear finished
        </button>
      </header>
      <ul>
        {uploads.map(u => (
          <li key={u.id} data-upload={u.path} data-phase={u.phase}>
            <div className="jp-hubgrid-upload-name">{u.path}</div>
            <progress
              max={1}
              value={uploadFraction(u)}
              aria-label={`upload of ${u.path}`}
            />
            <div className={u.phase === 'failed' ? 'jp-hubgrid-error' : 'jp-hubgrid-data-sub'}
              role={u.phase === 'failed' ? 'alert' : undefined}>
              {status(u)}
            </div>
            <div className="jp-hubgrid-data-buttons">
              {u.phase === 'uploading' && (
                <button className="jp-Button jp-mod-styled" onClick={() => controls.pause(u.id)}>Pause</button>
              )}
              {(u.phase === 'paused' || (u.phase === 'failed' && !u.conflict)) && (
                <button className="jp-Button jp-mod-styled" onClick={() => controls.resume(u.id)}>Resume</button>
              )}
              {u.phase === 'failed' && u.conflict && props.canReplace && (
                <button className="jp-Button jp-mod-styled jp-mod-warn" onClick={() => controls.replace(u.id)}>
                  Replace the existing file
                </button>
              )}
              {(u.phase === 'uploading' || u.phase === 'paused' || u.phase === 'queued') && (
                <button className="jp-Button jp-mod-styled jp-mod-warn" onClick={() => controls.cancel(u.id)}>Cancel</button>
              )}
            </div>
          </li>
        ))}
      </ul>
    </section>
  );
}
