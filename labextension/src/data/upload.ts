/**
 * Uploads, as data: how a file is cut into tus PATCH requests, what the
 * tus client is told (metadata, fingerprint), and each upload's progress.
 *
 * Every file goes through the service's tus endpoint (`vfolders/{id}/tus`)
 * in chunks of CHUNK_SIZE. The Lab server extension streams each request
 * body on to the service as it arrives, and the service keeps the bytes of
 * a PATCH that broke off, so a broken connection costs nothing already
 * sent: the client asks the service for its offset (`HEAD`) and goes on
 * from there. Large chunks save a request and a disk flush each (the
 * service makes a PATCH's bytes durable before it answers); the browser
 * sends a slice of the file, never a copy of it.
 */

/** Bytes per PATCH request. */
export const CHUNK_SIZE = 128 * 1024 * 1024;

export interface IChunk {
  /** first byte */
  start: number;
  /** one past the last byte */
  end: number;
}

/**
 * The PATCH requests that send bytes [offset, size) of a file: each at most
 * `chunkSize`, the first starting at the service's offset. An empty file
 * sends none (the service lands it at creation).
 */
export function planChunks(
  size: number,
  offset = 0,
  chunkSize: number = CHUNK_SIZE
): IChunk[] {
  if (!Number.isSafeInteger(size) || size < 0) {
    throw new RangeError(`not a file size: ${size}`);
  }
  if (!Number.isSafeInteger(chunkSize) || chunkSize <= 0) {
    throw new RangeError(`not a chunk size: ${chunkSize}`);
  }
  checkOffset(offset, size);
  const chunks: IChunk[] = [];
  for (let start = offset; start < size; start += chunkSize) {
    chunks.push({ start, end: Math.min(size, start + chunkSize) });
  }
  return chunks;
}

/**
 * An offset the service reported (`Upload-Offset`), checked against the
 * upload's size: a whole number of bytes in [0, size].
 */
export function checkOffset(offset: number, size: number): number {
  if (!Number.isSafeInteger(offset) || offset < 0 || offset > size) {
    throw new RangeError(`the upload's offset ${offset} is outside 0..${size}`);
  }
  return offset;
}

/**
 * `Upload-Offset` (or `Upload-Length`) as the service sends it: digits
 * only. null for a missing or malformed header.
 */
export function parseOffsetHeader(value: string | null): number | null {
  if (value === null || !/^[0-9]{1,16}$/.test(value.trim())) {
    return null;
  }
  const n = Number(value.trim());
  return Number.isSafeInteger(n) ? n : null;
}

/** The tus `Upload-Metadata` of an upload to `path` in the folder. */
export function tusMetadata(
  path: string,
  overwrite: boolean
): Record<string, string> {
  return { path, overwrite: overwrite ? 'true' : 'false' };
}

/**
 * What the tus client stores (in localStorage) to resume an upload after a
 * reload: the same file to the same place. The file's name, size and
 * modification time stand for the file; folder, path and overwrite for
 * the place, so the same file sent to another path starts anew.
 */
export function uploadFingerprint(
  folderId: string,
  path: string,
  overwrite: boolean,
  file: { name: string; size: number; lastModified: number }
): string {
  return [
    'hubgrid-tus',
    folderId,
    path,
    overwrite ? 'w' : 'n',
    file.name,
    file.size,
    file.lastModified
  ]
    .map(p => encodeURIComponent(String(p)))
    .join('/');
}

/**
 * The message to show for a failed request: the service's JSON `message`
 * when the body has one, else the status, else the client's own text.
 */
export function errorMessage(
  status: number | null,
  body: string | null,
  fallback: string
): string {
  if (body) {
    try {
      const data = JSON.parse(body);
      if (data && typeof data.message === 'string' && data.message) {
        return data.message;
      }
    } catch {
      // not JSON: fall through
    }
  }
  if (status) {
    return `the upload failed (HTTP ${status})`;
  }
  return fallback;
}

// --- progress -----------------------------------------------------------------

export type UploadPhase =
  | 'queued'
  | 'uploading'
  | 'paused'
  | 'done'
  | 'failed'
  | 'canceled';

export interface IUpload {
  id: string;
  folder: string;
  path: string;
  size: number;
  phase: UploadPhase;
  /** bytes the service holds */
  sent: number;
  /** resumed from an earlier attempt (the service already held some bytes) */
  resumed: boolean;
  error: string | null;
  /** the first progress of this attempt: bytes and time (ms), for the rate */
  since: { sent: number; at: number } | null;
  /** last progress: time (ms) */
  at: number | null;
  /** the service refused the name (409): it may be replaced */
  conflict: boolean;
}

export type UploadAction =
  | { type: 'add'; id: string; folder: string; path: string; size: number }
  | { type: 'start'; id: string; resumed: boolean }
  | { type: 'progress'; id: string; sent: number; at: number }
  | { type: 'pause'; id: string }
  | { type: 'done'; id: string; at: number }
  | {
      type: 'fail';
      id: string;
      error: string;
      conflict?: boolean;
    }
  | { type: 'cancel'; id: string }
  | { type: 'clear' };

const FINISHED: UploadPhase[] = ['done', 'failed', 'canceled'];

function update(
  uploads: IUpload[],
  id: string,
  change: (u: IUpload) => IUpload
): IUpload[] {
  return uploads.map(u => (u.id === id ? change(u) : u));
}

/** The upload list after `action` (a React reducer: never mutates). */
export function uploadsReducer(
  uploads: IUpload[],
  action: UploadAction
): IUpload[] {
  switch (action.type) {
    case 'add':
      return [
        ...uploads.filter(u => u.id !== action.id),
        {
          id: action.id,
          folder: action.folder,
          path: action.path,
          size: action.size,
          phase: 'queued',
          sent: 0,
          resumed: false,
          error: null,
          since: null,
          at: null,
          conflict: false
        }
      ];
    case 'start':
      return update(uploads, action.id, u => ({
        ...u,
        phase: 'uploading',
        resumed: action.resumed,
        error: null,
        conflict: false,
        since: null
      }));
    case 'progress':
      return update(uploads, action.id, u => {
        if (u.phase !== 'uploading') {
          return u;
        }
        const sent = Math.min(u.size, Math.max(0, action.sent));
        return {
          ...u,
          sent,
          since: u.since ?? { sent, at: action.at },
          at: action.at
        };
      });
    case 'pause':
      return update(uploads, action.id, u =>
        u.phase === 'uploading' || u.phase === 'queued'
          ? { ...u, phase: 'paused', since: null }
          : u
      );
    case 'done':
      return update(uploads, action.id, u => ({
        ...u,
        phase: 'done',
        sent: u.size,
        at: action.at,
        error: null
      }));
    case 'fail':
      return update(uploads, action.id, u => ({
        ...u,
        phase: 'failed',
        error: action.error,
        conflict: action.conflict ?? false
      }));
    case 'cancel':
      return update(uploads, action.id, u =>
        FINISHED.includes(u.phase) && u.phase !== 'failed'
          ? u
          : { ...u, phase: 'canceled' }
      );
    case 'clear':
      return uploads.filter(u => !FINISHED.includes(u.phase));
  }
}

/** Progress is drawn at most this often (ms): each redraw costs the page CPU. */
export const PROGRESS_EVERY = 250;

/**
 * Whether a progress event is worth a redraw: the first one, the last
 * byte, or PROGRESS_EVERY ms after the last drawn one.
 */
export function worthDrawing(
  lastDrawn: number | null,
  now: number,
  sent: number,
  total: number
): boolean {
  return lastDrawn === null || sent >= total || now - lastDrawn >= PROGRESS_EVERY;
}

/** How far, in [0, 1] (an empty file that landed is 1). */
export function uploadFraction(u: IUpload): number {
  if (u.size === 0) {
    return u.phase === 'done' ? 1 : 0;
  }
  return Math.min(1, u.sent / u.size);
}

/** Bytes per second in this attempt, null before two progress points. */
export function uploadRate(u: IUpload): number | null {
  if (!u.since || u.at === null || u.at <= u.since.at) {
    return null;
  }
  return ((u.sent - u.since.sent) * 1000) / (u.at - u.since.at);
}

/** Seconds left at the current rate, null when unknown. */
export function uploadEta(u: IUpload): number | null {
  const rate = uploadRate(u);
  if (rate === null || rate <= 0 || u.phase !== 'uploading') {
    return null;
  }
  return (u.size - u.sent) / rate;
}

/** Whether any upload still runs or waits (keep the page open). */
export function busy(uploads: IUpload[]): boolean {
  return uploads.some(u => u.phase === 'uploading' || u.phase === 'queued');
}
