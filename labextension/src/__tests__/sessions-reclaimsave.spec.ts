import {
  changedOnDisk,
  copyPath,
  IContents,
  IDiskState,
  ISaveDoc,
  ISaveIO,
  saveForReclaim
} from '../sessions/reclaimsave';
import { IOwnReclaim, reclaimedText } from '../sessions/ownreclaim';

const T0 = Date.parse('2026-11-26T10:00:05Z');
const LOADED = '2026-11-26T09:00:00.000Z';

/** A document as the Lab holds it; `save` is what the Lab's own save does. */
function doc(path: string, over: Partial<ISaveDoc> = {}): ISaveDoc & { saves: number } {
  const d = {
    path,
    dirty: true,
    writable: true,
    lastModified: LOADED,
    hash: null,
    saves: 0,
    contents: (): IContents => ({ type: 'notebook', format: 'json', content: { cells: [path] } }),
    save: async () => {
      d.saves += 1;
    },
    ...over
  };
  return d;
}

/**
 * The server's files and a timer that fires only when the test says so:
 * nothing here depends on how long anything really takes.
 */
class FakeIO implements ISaveIO {
  disk = new Map<string, IDiskState>();
  written = new Map<string, IContents>();
  failWrites = '';
  private timers: (() => void)[] = [];

  stat = async (path: string): Promise<IDiskState> => {
    const d = this.disk.get(path);
    if (!d) {
      throw new Error(`${path}: not found`);
    }
    return d;
  };
  write = async (path: string, c: IContents): Promise<void> => {
    if (this.failWrites) {
      throw new Error(this.failWrites);
    }
    this.written.set(path, c);
  };
  sleep = (_ms: number) => new Promise<void>(resolve => this.timers.push(resolve));
  now = () => T0;

  /** every bound runs out */
  fire(): void {
    const t = this.timers;
    this.timers = [];
    t.forEach(f => f());
  }
}

const settle = () => new Promise(resolve => setTimeout(resolve, 0));

describe('the save before a reclaim', () => {
  it('saves a document that did not change on disk in place, once per path, and skips clean ones', async () => {
    const io = new FakeIO();
    io.disk.set('a.ipynb', { last_modified: LOADED });
    io.disk.set('b.txt', { last_modified: LOADED });
    const a = doc('a.ipynb');
    const again = doc('a.ipynb'); // a second view of the same file
    const clean = doc('b.txt', { dirty: false });
    const result = await saveForReclaim([a, again, clean], io);
    expect(result).toMatchObject({ documents: 1, saved: 1, copies: 0, unsaved: 0 });
    expect(a.saves + again.saves).toBe(1);
    expect(clean.saves).toBe(0);
    expect(io.written.size).toBe(0);
  });

  it('leaves a file that changed on disk as it is and writes the Lab\'s version next to it', async () => {
    const io = new FakeIO();
    io.disk.set('work/analysis.ipynb', { last_modified: '2026-11-26T09:30:00.000Z' });
    const a = doc('work/analysis.ipynb');
    const result = await saveForReclaim([a], io);
    expect(a.saves).toBe(0); // the Lab's save would ask "overwrite or revert?" and wait
    expect(result).toMatchObject({ documents: 1, saved: 0, copies: 1, unsaved: 0 });
    const copy = 'work/analysis.reclaim-2026-11-26T10-00-05Z.ipynb';
    expect(result.copyPaths).toEqual([copy]);
    expect(io.written.get(copy)).toEqual({
      type: 'notebook',
      format: 'json',
      content: { cells: ['work/analysis.ipynb'] }
    });
    expect(io.written.has('work/analysis.ipynb')).toBe(false);
  });

  it('reads a change on disk from the hash when both sides have one', () => {
    const d = doc('x.txt', { hash: 'h1' });
    expect(changedOnDisk(d, { last_modified: LOADED, hash: 'h2' })).toBe(true);
    expect(changedOnDisk(d, { last_modified: '2030-01-01T00:00:00Z', hash: 'h1' })).toBe(false);
    // no hash: the disk's time past the Lab's own margin
    const t = doc('y.txt');
    expect(changedOnDisk(t, { last_modified: '2026-11-26T09:00:00.400Z' })).toBe(false);
    expect(changedOnDisk(t, { last_modified: '2026-11-26T09:00:00.600Z' })).toBe(true);
  });

  it('is not held by a save that waits for a dialog: it ends, with a copy', async () => {
    const io = new FakeIO();
    io.disk.set('a.ipynb', { last_modified: LOADED });
    io.disk.set('b.ipynb', { last_modified: LOADED });
    // the file changed after our look: the Lab's save opens "File Changed" and waits
    const waiting = doc('a.ipynb', { save: () => new Promise<void>(() => undefined) });
    const fine = doc('b.ipynb');
    let ended = false;
    const run = saveForReclaim([waiting, fine], io).then(r => {
      ended = true;
      return r;
    });
    await settle();
    expect(ended).toBe(false); // still waiting for the dialog...
    io.fire(); // ...until the bound runs out
    const result = await run;
    expect(result).toMatchObject({ documents: 2, saved: 1, copies: 1, unsaved: 0 });
    expect(result.copyPaths).toEqual(['a.reclaim-2026-11-26T10-00-05Z.ipynb']);
  });

  it('counts what it could not write at all, and says why', async () => {
    const io = new FakeIO();
    io.failWrites = 'disk full';
    const gone = doc('gone.txt'); // deleted on disk: no stat
    const result = await saveForReclaim([gone], io);
    expect(result).toMatchObject({ documents: 1, saved: 0, copies: 0, unsaved: 1 });
    expect(result.errors[0]).toBe('gone.txt: gone.txt: not found, and its copy failed: disk full');
  });

  it('writes a read-only document as a copy', async () => {
    const io = new FakeIO();
    const ro = doc('ro/notes.md', { writable: false });
    const result = await saveForReclaim([ro], io);
    expect(result.copyPaths).toEqual(['ro/notes.reclaim-2026-11-26T10-00-05Z.md']);
    expect(ro.saves).toBe(0);
  });

  it('names copies after the file and the time in UTC', () => {
    expect(copyPath('Makefile', T0)).toBe('Makefile.reclaim-2026-11-26T10-00-05Z');
    expect(copyPath('.bashrc', T0)).toBe('.bashrc.reclaim-2026-11-26T10-00-05Z');
    expect(copyPath('a.b/c.tar.gz', T0)).toBe('a.b/c.tar.reclaim-2026-11-26T10-00-05Z.gz');
  });

  it('says after the reclaim where the copies are and that the files on disk were kept', () => {
    const own: IOwnReclaim = {
      notice: {
        rule: 'idle',
        deadline: '2026-11-26T10:00:30Z',
        reason: 'no activity for 600 s',
        numbers: {},
        warned_at: '2026-11-26T09:55:30Z',
        can_keep: false,
        keeps: 0,
        max_keeps: 0,
        keep_extension: 0,
        kept_until: null
      },
      savedAt: T0,
      dirty: 2,
      saveError: '',
      copies: ['work/analysis.reclaim-2026-11-26T10-00-05Z.ipynb'],
      unsaved: 0
    };
    const text = reclaimedText(own, T0).lines.join('\n');
    expect(text).toContain('One file had changed on disk');
    expect(text).toContain('left as they were on disk');
    expect(text).toContain('work/analysis.reclaim-2026-11-26T10-00-05Z.ipynb');
  });
});
