import {
  busy,
  CHUNK_SIZE,
  checkOffset,
  errorMessage,
  IUpload,
  parseOffsetHeader,
  planChunks,
  PROGRESS_EVERY,
  tusMetadata,
  uploadEta,
  uploadFingerprint,
  uploadFraction,
  uploadRate,
  uploadsReducer,
  worthDrawing
} from '../data/upload';

const MiB = 1024 * 1024;

describe('chunk planning', () => {
  it('cuts a file into 128 MiB PATCH requests, the last one short', () => {
    expect(CHUNK_SIZE).toBe(128 * MiB);
    const chunks = planChunks(300 * MiB);
    expect(chunks).toEqual([
      { start: 0, end: 128 * MiB },
      { start: 128 * MiB, end: 256 * MiB },
      { start: 256 * MiB, end: 300 * MiB }
    ]);
  });

  it('sends nothing for an empty file (it lands at creation)', () => {
    expect(planChunks(0)).toEqual([]);
  });

  it('goes on from the offset the service reported', () => {
    expect(planChunks(300 * MiB, 100 * MiB)).toEqual([
      { start: 100 * MiB, end: 228 * MiB },
      { start: 228 * MiB, end: 300 * MiB }
    ]);
    expect(planChunks(20 * MiB, 20 * MiB)).toEqual([]); // all there: nothing left
  });

  it('a file of exactly n chunks has n requests', () => {
    expect(planChunks(256 * MiB)).toHaveLength(2);
    expect(planChunks(256 * MiB + 1)).toHaveLength(3);
    expect(planChunks(5, 0, 2)).toEqual([
      { start: 0, end: 2 },
      { start: 2, end: 4 },
      { start: 4, end: 5 }
    ]);
  });

  it('refuses an offset outside the file and a nonsense size', () => {
    expect(() => planChunks(10, 11)).toThrow(RangeError);
    expect(() => planChunks(10, -1)).toThrow(RangeError);
    expect(() => planChunks(10, 0.5)).toThrow(RangeError);
    expect(() => planChunks(-1)).toThrow(RangeError);
    expect(() => planChunks(10, 0, 0)).toThrow(RangeError);
    expect(checkOffset(10, 10)).toBe(10);
  });
});

describe('tus offsets and headers', () => {
  it('reads Upload-Offset as digits only', () => {
    expect(parseOffsetHeader('8388608')).toBe(8388608);
    expect(parseOffsetHeader(' 0 ')).toBe(0);
    expect(parseOffsetHeader('-1')).toBeNull();
    expect(parseOffsetHeader('1e6')).toBeNull();
    expect(parseOffsetHeader('')).toBeNull();
    expect(parseOffsetHeader(null)).toBeNull();
    expect(parseOffsetHeader('99999999999999999')).toBeNull(); // past 2^53
  });

  it('names the target path and overwrite in the metadata', () => {
    expect(tusMetadata('data/big.tar', false)).toEqual({ path: 'data/big.tar', overwrite: 'false' });
    expect(tusMetadata('x', true)).toEqual({ path: 'x', overwrite: 'true' });
  });

  it('resumes only the same file to the same place', () => {
    const file = { name: 'big.tar', size: 10, lastModified: 1 };
    const base = uploadFingerprint('F', 'a/big.tar', false, file);
    expect(uploadFingerprint('F', 'a/big.tar', false, { ...file })).toBe(base);
    expect(uploadFingerprint('F', 'b/big.tar', false, file)).not.toBe(base);
    expect(uploadFingerprint('G', 'a/big.tar', false, file)).not.toBe(base);
    expect(uploadFingerprint('F', 'a/big.tar', true, file)).not.toBe(base);
    expect(uploadFingerprint('F', 'a/big.tar', false, { ...file, lastModified: 2 })).not.toBe(base);
    // a '/' in a name cannot make two places look alike
    expect(uploadFingerprint('F/a', 'b', false, file)).not.toBe(uploadFingerprint('F', 'a/b', false, file));
  });

  it("shows the service's message for a refusal", () => {
    const quota = JSON.stringify({
      status: 413,
      reason: 'quota-exceeded',
      message: 'vfolder quota: used 90 + in flight 5 + upload 6 > limit 100 bytes'
    });
    expect(errorMessage(413, quota, 'x')).toBe(
      'vfolder quota: used 90 + in flight 5 + upload 6 > limit 100 bytes'
    );
    expect(errorMessage(502, '<html>', 'x')).toBe('the upload failed (HTTP 502)');
    expect(errorMessage(null, null, 'tus: failed to upload chunk')).toBe('tus: failed to upload chunk');
  });
});

describe('upload progress', () => {
  const add = { type: 'add' as const, id: 'u', folder: 'F', path: 'big', size: 100 };

  function run(...actions: Parameters<typeof uploadsReducer>[1][]): IUpload {
    return actions.reduce(uploadsReducer, [] as IUpload[])[0];
  }

  it('goes from queued to done, with the fraction sent', () => {
    let u = run(add);
    expect(u.phase).toBe('queued');
    expect(uploadFraction(u)).toBe(0);
    u = run(add, { type: 'start', id: 'u', resumed: false }, { type: 'progress', id: 'u', sent: 40, at: 1000 });
    expect(u.phase).toBe('uploading');
    expect(uploadFraction(u)).toBeCloseTo(0.4);
    u = run(add, { type: 'start', id: 'u', resumed: false }, { type: 'done', id: 'u', at: 2000 });
    expect(u.phase).toBe('done');
    expect(uploadFraction(u)).toBe(1);
  });

  it('measures the rate and time left within one attempt', () => {
    const u = run(
      add,
      { type: 'start', id: 'u', resumed: true },
      { type: 'progress', id: 'u', sent: 50, at: 1000 }, // resumed at 50
      { type: 'progress', id: 'u', sent: 70, at: 3000 }
    );
    expect(u.resumed).toBe(true);
    expect(uploadRate(u)).toBe(10); // 20 bytes in 2 s
    expect(uploadEta(u)).toBe(3);
  });

  it('a paused upload keeps its bytes and starts a new rate when resumed', () => {
    const u = run(
      add,
      { type: 'start', id: 'u', resumed: false },
      { type: 'progress', id: 'u', sent: 30, at: 1000 },
      { type: 'pause', id: 'u' },
      { type: 'progress', id: 'u', sent: 35, at: 1100 }, // late event: ignored
      { type: 'start', id: 'u', resumed: true },
      { type: 'progress', id: 'u', sent: 40, at: 9000 }
    );
    expect(u.sent).toBe(40);
    expect(uploadRate(u)).toBeNull(); // one point of this attempt so far
  });

  it('a refused name can be replaced; a failure shows the message', () => {
    const u = run(add, { type: 'start', id: 'u', resumed: false },
      { type: 'fail', id: 'u', error: "vfolder 'x': big exists", conflict: true });
    expect(u).toMatchObject({ phase: 'failed', conflict: true, error: "vfolder 'x': big exists" });
    const again = uploadsReducer([u], { type: 'start', id: 'u', resumed: false })[0];
    expect(again).toMatchObject({ phase: 'uploading', conflict: false, error: null });
  });

  it('clears finished uploads and knows when some still run', () => {
    let list = [add, { ...add, id: 'v' }, { ...add, id: 'w' }].reduce(uploadsReducer, [] as IUpload[]);
    list = uploadsReducer(list, { type: 'done', id: 'u', at: 1 });
    list = uploadsReducer(list, { type: 'cancel', id: 'v' });
    expect(busy(list)).toBe(true); // w waits
    list = uploadsReducer(list, { type: 'clear' });
    expect(list.map(u => u.id)).toEqual(['w']);
    list = uploadsReducer(list, { type: 'fail', id: 'w', error: 'x' });
    expect(busy(list)).toBe(false);
  });

  it('an empty file is done at once', () => {
    const u = run({ ...add, size: 0 }, { type: 'start', id: 'u', resumed: false }, { type: 'done', id: 'u', at: 1 });
    expect(uploadFraction(u)).toBe(1);
  });
});

describe('drawing progress', () => {
  it('draws the first event, the last byte, and at most every PROGRESS_EVERY ms', () => {
    expect(worthDrawing(null, 1000, 10, 100)).toBe(true);
    expect(worthDrawing(1000, 1000 + PROGRESS_EVERY - 1, 20, 100)).toBe(false);
    expect(worthDrawing(1000, 1000 + PROGRESS_EVERY, 20, 100)).toBe(true);
    expect(worthDrawing(1000, 1001, 100, 100)).toBe(true);
  });
});
