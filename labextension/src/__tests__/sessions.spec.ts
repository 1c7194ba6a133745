import {
  checkForm,
  defaultForm,
  dryRunBody,
  IPreset,
  memText,
  presetOf,
  presetSize,
  sessionImages,
  suggestName,
  userOptions,
  verdictOf
} from '../sessions/launch';
import { gapLine, logFileName, pieces, plainLog, searchLog, withPart } from '../sessions/log';
import {
  diffSessions,
  duration,
  elapsed,
  isQuiet,
  nextInterval,
  safeAppUrl,
  serverUrl,
  sessionRow,
  stopPlan,
  totalGpu,
  visibleSessions
} from '../sessions/model';
import { IAllocation } from '../summary/types';

const T0 = Date.parse('2026-11-24T10:00:00Z');

function alloc(over: Partial<IAllocation>): IAllocation {
  return {
    id: '11111111-2222-3333-4444-555555555555',
    user: 'alice',
    domain: 'acme',
    project: 'ml',
    resource_group: 'gpu',
    session_type: 'interactive',
    slots: { cpu: '2', mem: '4294967296', 'gpu.shares': '0.3' },
    state: 'allocated',
    node: 'n1',
    gpus: [{ index: 0, share: '0.3' }],
    reasons: [],
    created_at: '2026-11-24T09:59:00Z',
    admitted_at: '2026-11-24T09:59:30Z',
    released_at: null,
    release_reason: '',
    origin: 'hub',
    image: 'hubgrid/base:latest',
    server_name: 'train',
    command: null,
    apps: [{ name: 'jupyterlab', url: '/user/alice/train/lab' }],
    exit_code: null,
    ended_at: null,
    ...over
  };
}

const waitReason = {
  code: 'slot-limit',
  kind: 'wait',
  level: 'user',
  name: 'alice',
  slot: 'gpu.shares',
  used: '0.9',
  requested: '0.7',
  limit: '1.5',
  text: 'user alice gpu.shares: used 0.9 + requested 0.7 > limit 1.5 (over by 0.1)'
};

describe('a session row', () => {
  it('shows state, project, group, image, sizes, placement and elapsed time', () => {
    const row = sessionRow(alloc({}), T0);
    expect(row).toMatchObject({
      name: 'train',
      shortId: '11111111',
      stateLabel: 'running',
      active: true,
      project: 'ml',
      group: 'gpu',
      image: 'hubgrid/base:latest',
      cpu: '2',
      mem: '4 GiB',
      gpu: '0.3 share',
      placement: 'n1 (GPU 0: 0.3)',
      elapsed: '30s',
      ended: ''
    });
    expect(row.apps).toHaveLength(1);
  });

  it("gives a pending session's reasons with their numbers", () => {
    const row = sessionRow(
      alloc({ state: 'pending', node: null, gpus: [], admitted_at: null, reasons: [waitReason] }),
      T0
    );
    expect(row.stateLabel).toBe('waiting');
    expect(row.elapsed).toBe('1m 00s');
    expect(row.reasons[0].text).toContain('used 0.9 + requested 0.7 > limit 1.5');
    expect(row.placement).toBe('');
    expect(row.apps).toEqual([]);
  });

  it("gives a batch session's exit code and a failed start's reason", () => {
    const batch = sessionRow(
      alloc({
        state: 'released',
        session_type: 'batch',
        command: 'python train.py',
        exit_code: 3,
        release_reason: 'the batch command exited',
        ended_at: '2026-11-24T10:05:30Z'
      }),
      T0
    );
    expect([batch.stateLabel, batch.ended, batch.exitCode, batch.elapsed]).toEqual([
      'ended',
      'exit code 3; the batch command exited',
      3,
      '6m 00s'
    ]);
    const failed = sessionRow(
      alloc({ state: 'released', release_reason: 'the server failed to start' }),
      T0
    );
    expect(failed.ended).toBe('the server failed to start');
    expect(failed.apps).toEqual([]);
  });

  it("shows the hub's starting and stopping over the allocation's state", () => {
    expect(sessionRow(alloc({}), T0, 'spawn').stateLabel).toBe('starting');
    expect(sessionRow(alloc({}), T0, 'stop').stateLabel).toBe('stopping');
    expect(sessionRow(alloc({}), T0, null).stateLabel).toBe('running');
    expect(sessionRow(alloc({ state: 'released' }), T0, 'spawn').stateLabel).toBe('ended');
  });

  it('names whole and shared GPUs and none', () => {
    expect(sessionRow(alloc({ slots: { gpu: '2' } }), T0).gpu).toBe('2');
    expect(sessionRow(alloc({ slots: { gpu: '1', 'gpu.shares': '0.5' } }), T0).gpu).toBe('1 + 0.5 share');
    expect(sessionRow(alloc({ slots: { cpu: '1' } }), T0).gpu).toBe('0');
    expect(sessionRow(alloc({ server_name: '' }), T0).name).toBe('(default)');
    expect(sessionRow(alloc({ server_name: '', origin: 'api' }), T0).name).toBe('11111111');
  });

  it('formats durations', () => {
    expect([duration(5), duration(65), duration(3 * 3600 + 240), duration(2 * 86400 + 7200)]).toEqual(
      ['5s', '1m 05s', '3h 04m', '2d 02h']
    );
    expect(elapsed(alloc({ created_at: null, admitted_at: null }), T0)).toBe('-');
  });
});

describe('the list and its polling', () => {
  const a = alloc({ id: 'a', created_at: '2026-11-24T09:00:00Z' });
  const b = alloc({ id: 'b', created_at: '2026-11-24T08:00:00Z', state: 'pending' });
  const old1 = alloc({ id: 'o1', state: 'released', ended_at: '2026-11-23T01:00:00Z' });
  const old2 = alloc({ id: 'o2', state: 'cancelled', released_at: '2026-11-23T02:00:00Z' });
  const bobs = alloc({ id: 'x', user: 'bob' });

  it("shows my active sessions oldest first, then my newest ended ones, never another user's", () => {
    const v = visibleSessions([a, old1, b, old2, bobs], 'alice', 1);
    expect(v.active.map(s => s.id)).toEqual(['b', 'a']);
    expect(v.ended.map(s => s.id)).toEqual(['o2']);
    expect(v.endedTotal).toBe(2);
    // the service sent only the newest ended ones: its count says how many there are
    expect(visibleSessions([a, old2], 'alice', 1, 40).endedTotal).toBe(40);
  });

  it('sees a new, an ended and a changed session between two polls', () => {
    const before = [a, b];
    const after = [
      { ...a, state: 'released' },
      { ...b, reasons: [waitReason] },
      alloc({ id: 'new' })
    ];
    expect(diffSessions(before, after)).toEqual({ added: ['new'], ended: ['a'], changed: ['b'] });
    expect(diffSessions([a], [])).toEqual({ added: [], ended: ['a'], changed: [] });
    expect(isQuiet(diffSessions(before, before))).toBe(true);
  });

  it('backs off while nothing changes, and is quick again when something does', () => {
    expect(nextInterval(3000, true, false, 3000, 30000)).toBe(6000);
    expect(nextInterval(24000, true, false, 3000, 30000)).toBe(30000);
    expect(nextInterval(30000, false, false, 3000, 30000)).toBe(3000);
    expect(nextInterval(30000, true, true, 3000, 30000)).toBe(3000); // something pending
  });

  it('stops a server through the hub and an API allocation by releasing it', () => {
    expect(stopPlan(a)).toEqual({ kind: 'hub', user: 'alice', server: 'train' });
    expect(stopPlan({ ...a, origin: 'api' })).toEqual({ kind: 'release', id: 'a' });
    expect(stopPlan(old1)).toBeNull();
  });

  it('opens only same-origin paths and http(s) URLs', () => {
    expect(safeAppUrl('/user/alice/train/lab')).toBe('/user/alice/train/lab');
    expect(safeAppUrl('https://x.example/app')).toBe('https://x.example/app');
    expect(safeAppUrl('javascript:alert(1)')).toBeNull();
    expect(safeAppUrl('//evil.example/')).toBeNull();
    expect(safeAppUrl('')).toBeNull();
    expect(serverUrl('alice', 'a b')).toBe('/user/alice/a%20b/');
  });

  it('adds GPU use exactly', () => {
    const three = ['1', '2', '3'].map(id => alloc({ id, slots: { 'gpu.shares': '0.3' } }));
    expect(totalGpu(three)).toBe('0.9');
  });
});

const PRESETS: IPreset[] = [
  { name: 'small', slots: { cpu: '0.5', mem: String(2 ** 30) }, default: true },
  { name: 'large', slots: { cpu: '2', mem: String(4 * 2 ** 30) }, default: false },
  { name: 'gpu', slots: { cpu: '1', mem: String(1536 * 2 ** 20), 'gpu.shares': '0.5' }, default: false }
];

describe('the launcher', () => {
  it('offers no inference image: it runs no Jupyter or batch session', () => {
    expect(
      sessionImages([
        { name: 'hubgrid/base:latest', session_types: ['batch', 'interactive'] },
        { name: 'hubgrid/inference:latest', session_types: ['inference'] },
        { name: 'hubgrid/batch-only:1', session_types: ['batch'] },
        { name: 'hubgrid/all:1', session_types: ['batch', 'inference', 'interactive'] },
        { name: 'older/service:1' }
      ])
    ).toEqual(['hubgrid/base:latest', 'hubgrid/batch-only:1', 'hubgrid/all:1', 'older/service:1']);
  });

  const form = { ...defaultForm(['ml', 'web'], ['cpu', 'default'], PRESETS), name: 'train' };

  it('starts from my first project, the default group and the default preset', () => {
    expect([form.project, form.group, form.cpu, form.mem]).toEqual(['ml', 'default', '0.5', '1G']);
    expect(presetOf(form, PRESETS)).toBe('small');
    expect(checkForm(form)).toEqual({});
  });

  it('fills the size of a preset and names the preset a size matches', () => {
    expect(presetSize(PRESETS[2])).toEqual({ cpu: '1', mem: '1536M', gpuMode: 'shares', gpu: '0.5' });
    expect(presetOf({ ...form, ...presetSize(PRESETS[1]) }, PRESETS)).toBe('large');
    expect(presetOf({ ...form, ...presetSize(PRESETS[2]) }, PRESETS)).toBe('gpu');
    expect(presetOf({ ...form, cpu: '2.0', mem: '4G' }, PRESETS)).toBe('large');
    expect(presetOf({ ...form, cpu: '0.75' }, PRESETS)).toBe('');
    expect(presetOf({ ...form, cpu: 'lots' }, PRESETS)).toBe('');
    expect([memText('1073741824'), memText('1536'), memText(String(2 ** 40))]).toEqual(['1G', '1536', '1T']);
  });

  it('names what is wrong with each field', () => {
    const bad = {
      ...form,
      name: 'Bad Name',
      cpu: '0',
      mem: 'lots',
      gpuMode: 'shares' as const,
      gpu: '1.5',
      type: 'batch' as const,
      command: ' '
    };
    expect(Object.keys(checkForm(bad)).sort()).toEqual(['command', 'cpu', 'gpu', 'mem', 'name']);
    expect(checkForm(form, ['train']).name).toContain('already');
    expect(checkForm({ ...form, gpuMode: 'whole', gpu: '0.5' }).gpu).toContain('whole');
  });

  it('asks the dry run and the hub for the same session', () => {
    const f = {
      ...form,
      cpu: '1',
      mem: '2G',
      image: 'hubgrid/base:latest',
      gpuMode: 'shares' as const,
      gpu: '0.5',
      folders: ['data'],
      type: 'batch' as const,
      command: 'python train.py'
    };
    expect(dryRunBody(f)).toEqual({
      project: 'ml',
      resource_group: 'default',
      slots: { cpu: '1', mem: '2G', 'gpu.shares': '0.5' },
      session_type: 'batch',
      image: 'hubgrid/base:latest',
      command: 'python train.py'
    });
    expect(userOptions(f)).toEqual({
      project: 'ml',
      resource_group: 'default',
      cpu: '1',
      mem: '2G',
      image: 'hubgrid/base:latest',
      gpu_shares: '0.5',
      vfolders: ['data'],
      session_type: 'batch',
      command: 'python train.py'
    });
    expect(userOptions({ ...form, gpuMode: 'whole', gpu: '2' }).gpu).toBe(2);
    expect(dryRunBody(form)).toEqual({
      project: 'ml',
      resource_group: 'default',
      slots: { cpu: '0.5', mem: '1G' },
      session_type: 'interactive'
    });
  });

  it('says whether it fits now, and if not why', () => {
    expect(
      verdictOf({ verdict: 'admit', fits_now: true, node: 'n1', gpus: [{ index: 1, share: '0.5' }], reasons: [] })
    ).toEqual({ kind: 'fits', headline: 'Fits now: node n1, GPU 1 (0.5)', reasons: [] });
    expect(
      verdictOf({ verdict: 'pending', fits_now: false, node: null, gpus: [], reasons: [waitReason] })
    ).toEqual({ kind: 'waits', headline: 'Would wait in the queue:', reasons: [waitReason.text] });
    expect(verdictOf({ verdict: 'refuse', fits_now: false, node: null, gpus: [], reasons: [] }).kind).toBe(
      'refused'
    );
  });

  it('suggests a name that is free', () => {
    expect(suggestName('abcdef99', [])).toBe('s-abcdef');
    expect(suggestName('abcdef99', ['s-abcdef', 's-abcdef-2'])).toBe('s-abcdef-3');
  });
});

describe('the log', () => {
  it('takes terminal escapes and control characters out', () => {
    expect(plainLog('\u001b[31mred\u001b[0m ok\r\nnext\u0007\n\u001b]0;title\u0007x')).toBe(
      'red ok\nnext\nx'
    );
  });

  it('finds a query case-insensitively, as plain text, with line numbers', () => {
    const v = searchLog('start\nError: a.b\nfine\nerror again error\n', 'ERROR');
    expect([v.total, v.shown, v.matchCount]).toEqual([4, 2, 3]);
    expect(v.lines.map(l => l.n)).toEqual([2, 4]);
    expect(pieces(v.lines[1])).toEqual([
      { text: 'error', match: true },
      { text: ' again ', match: false },
      { text: 'error', match: true }
    ]);
    expect(searchLog('a.b\naxb', '.').shown).toBe(1); // no regular expression
    expect(searchLog('', '').total).toBe(0);
    expect(searchLog('x\ny', '').shown).toBe(2);
  });

  it('goes on from where the last read ended, each byte once', () => {
    const first = withPart(null, { text: 'one\ntw', start: 0, end: 6 }, null, 100);
    expect(first).toEqual({ raw: 'one\ntw', end: 6, cutLines: 0 });
    const next = withPart(first, { text: 'o\n', start: 6, end: 8 }, 6, 100);
    expect(next).toEqual({ raw: 'one\ntwo\n', end: 8, cutLines: 0 });
    expect(withPart(next, { text: '', start: 8, end: 8 }, 8, 100)).toEqual(next);
  });

  it('says where output was dropped before it could be read', () => {
    const buffer = { raw: 'one\npart', end: 8, cutLines: 0 };
    const after = withPart(buffer, { text: 'newest\n', start: 5008, end: 5015 }, 8, 1000);
    expect(after.raw).toBe('one\npart\n' + gapLine(5000) + 'newest\n');
    expect(gapLine(5000)).toContain('5000 bytes of output were dropped here');
    expect(after.end).toBe(5015);
    // a first read (a tail) starts wherever the log is kept: no gap line
    expect(withPart(null, { text: 'x', start: 5000, end: 5001 }, null, 10).raw).toBe('x');
  });

  it('keeps the newest whole lines within its size and numbers on', () => {
    const buffer = withPart(null, { text: 'l1\nl2\r\nl3\rl4\nl5\n', start: 0, end: 18 }, null, 8);
    expect(buffer.raw).toBe('l5\n'); // "l3\rl4" is two lines shown
    expect(buffer.cutLines).toBe(4);
    const v = searchLog(plainLog(buffer.raw), '', buffer.cutLines);
    expect(v.lines.map(l => [l.n, l.text])).toEqual([[5, 'l5']]);
    const longLine = withPart(null, { text: 'x'.repeat(20), start: 0, end: 20 }, null, 8);
    expect([longLine.raw, longLine.cutLines]).toEqual(['x'.repeat(8), 0]);
  });

  it('keeps markup as text', () => {
    const v = searchLog('<script>alert(1)</script>', 'script');
    expect(pieces(v.lines[0]).map(p => p.text).join('')).toBe('<script>alert(1)</script>');
  });

  it('downloads under a safe file name', () => {
    expect(logFileName('train', '11111111-2222')).toBe('train-11111111.log');
    expect(logFileName('../x y', 'abcdef012')).toBe('x_y-abcdef01.log');
  });
});
