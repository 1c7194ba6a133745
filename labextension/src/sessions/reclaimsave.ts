/**
 * The save before this session's reclaim (no DOM; the documents, the
 * contents API and the timer are handed in, so tests give fakes). Every
 * open document with unsaved changes is written, and the save always ends
 * within a bounded time, so the service's stop, which waits for it, is
 * never held by a dialog nobody answers:
 *
 * - a document whose file has not changed on disk since the Lab loaded or
 *   saved it is saved in place, by the Lab's own save;
 * - a document whose file changed on disk (someone else wrote it: a
 *   terminal, a script, another Lab) would make the Lab's save ask "File
 *   Changed: overwrite or revert?" and wait for an answer. The file on
 *   disk is left as it is and the Lab's version is written next to it as
 *   a copy (`copyPath`), so neither change is lost;
 * - a save that fails, or is still waiting after `SAVE_BOUND` (a dialog
 *   opened meanwhile), is written as a copy too; what cannot be written at
 *   all is counted as unsaved.
 */

/** How long one write may take before it is given up (ms). */
export const SAVE_BOUND = 20_000;

/** The Lab's own tolerance between the disk's and its clock (Context._maybeSave), ms. */
export const MODIFIED_MARGIN = 500;

/** What a copy is written as: its type, format and content, as the Lab saves it. */
export interface IContents {
  type: string;
  format: string | null;
  content: unknown;
}

/** One open document (a DocumentRegistry context, seen through what the save needs). */
export interface ISaveDoc {
  path: string;
  dirty: boolean;
  writable: boolean;
  /** the file's last_modified and hash as of the Lab's last load or save */
  lastModified: string | null;
  hash: string | null;
  /** the document's contents as the Lab would write them */
  contents(): IContents;
  /** the Lab's own save (may open "File Changed" and wait for an answer) */
  save(): Promise<void>;
}

/** The file on disk now (the contents API without content). */
export interface IDiskState {
  last_modified: string;
  hash?: string | null;
}

/** The server's contents API and a timer. */
export interface ISaveIO {
  stat(path: string): Promise<IDiskState>;
  write(path: string, contents: IContents): Promise<void>;
  /** resolves after `ms` */
  sleep(ms: number): Promise<void>;
  /** the time now, ms */
  now(): number;
}

/** What the save did, as the server extension is told (`POST hubgrid/reclaim`). */
export interface ISaveResult {
  /** documents with unsaved changes */
  documents: number;
  /** written in place */
  saved: number;
  /** written as a copy next to the file (`copyPaths`) */
  copies: number;
  /** not written at all */
  unsaved: number;
  copyPaths: string[];
  errors: string[];
}

/**
 * Whether the file changed on disk since the Lab loaded or saved it: the
 * Lab's own rule (Context._maybeSave): the hashes differ when both are
 * known, else the disk's time is later than the Lab's by more than the margin.
 */
export function changedOnDisk(doc: ISaveDoc, disk: IDiskState): boolean {
  if (doc.hash && disk.hash) {
    return doc.hash !== disk.hash;
  }
  if (!doc.lastModified) {
    return false;
  }
  const ours = Date.parse(doc.lastModified);
  const theirs = Date.parse(disk.last_modified);
  return !Number.isNaN(ours) && !Number.isNaN(theirs) && theirs - ours > MODIFIED_MARGIN;
}

/**
 * Where the Lab's version of a document is written when it cannot be saved
 * in place: next to it, named after it and the time in UTC
 * (`work/analysis.ipynb` -> `work/analysis.reclaim-2026-11-26T10-00-05Z.ipynb`).
 */
export function copyPath(path: string, now: number): string {
  const slash = path.lastIndexOf('/');
  const dir = path.slice(0, slash + 1);
  const name = path.slice(slash + 1);
  const dot = name.lastIndexOf('.');
  const [stem, ext] = dot > 0 ? [name.slice(0, dot), name.slice(dot)] : [name, ''];
  const stamp = new Date(now).toISOString().slice(0, 19).replace(/:/g, '-');
  return `${dir}${stem}.reclaim-${stamp}Z${ext}`;
}

const LATE: unique symbol = Symbol('late');
type Late = typeof LATE;

/** `work`, or LATE when it takes longer than `ms`. */
async function within<T>(work: Promise<T>, ms: number, io: ISaveIO): Promise<T | Late> {
  const late = io.sleep(ms).then((): Late => LATE);
  return Promise.race<T | Late>([work, late]);
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

type Outcome = { kind: 'saved' } | { kind: 'copy'; path: string } | { kind: 'unsaved'; why: string };

async function saveOne(doc: ISaveDoc, io: ISaveIO, bound: number): Promise<Outcome> {
  let why = '';
  if (doc.writable) {
    try {
      const disk = await within(io.stat(doc.path), bound, io);
      if (disk === LATE) {
        why = 'the server did not answer in time';
      } else if (changedOnDisk(doc, disk)) {
        why = 'it changed on disk';
      } else if ((await within(doc.save(), bound, io)) !== LATE) {
        return { kind: 'saved' };
      } else {
        why = 'its save did not end in time';
      }
    } catch (e) {
      why = message(e);
    }
  } else {
    why = 'it is read-only';
  }
  const path = copyPath(doc.path, io.now());
  try {
    if ((await within(io.write(path, doc.contents()), bound, io)) !== LATE) {
      return { kind: 'copy', path };
    }
    return { kind: 'unsaved', why: `${doc.path}: ${why}, and its copy was not written in time` };
  } catch (e) {
    return { kind: 'unsaved', why: `${doc.path}: ${why}, and its copy failed: ${message(e)}` };
  }
}

/**
 * Save every document with unsaved changes (one per path), all at once;
 * ends within about twice `bound`, whatever the server or a dialog does.
 */
export async function saveForReclaim(
  docs: ISaveDoc[],
  io: ISaveIO,
  bound: number = SAVE_BOUND
): Promise<ISaveResult> {
  const seen = new Set<string>();
  const dirty = docs.filter(d => d.dirty && !seen.has(d.path) && seen.add(d.path));
  const outcomes = await Promise.all(dirty.map(d => saveOne(d, io, bound)));
  const result: ISaveResult = {
    documents: dirty.length,
    saved: 0,
    copies: 0,
    unsaved: 0,
    copyPaths: [],
    errors: []
  };
  for (const o of outcomes) {
    if (o.kind === 'saved') {
      result.saved += 1;
    } else if (o.kind === 'copy') {
      result.copies += 1;
      result.copyPaths.push(o.path);
    } else {
      result.unsaved += 1;
      result.errors.push(o.why);
    }
  }
  return result;
}
