import { checkForm, ILaunchForm } from '../sessions/launch';
import { clockTime, gpuDetail, historyRows, IHistory, slotsText, usageView } from '../sessions/detail';
import { activeCounts, endedOfTab, ofType, stopEach, stopQuestion, stopTargets, toggle } from '../sessions/selection';
import { IAllocation } from '../summary/types';
import { historyLabel, stateLabel } from '../words';

const AT = '2026-12-01T09:00:00+00:00';

describe('clockTime', () => {
  it('shows a time in local YYYY-MM-DD HH:MM:SS, never the raw ISO text', () => {
    const d = new Date(AT);
    const pad = (n: number) => String(n).padStart(2, '0');
    expect(clockTime(AT)).toBe(
      `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:00`
    );
    expect(clockTime(null)).toBe('');
    expect(clockTime('soon')).toBe('soon');
  });
});

describe('historyRows', () => {
  const history: IHistory = {
    id: 'a1',
    state: 'released',
    events: [
      { at: AT, event: 'requested', text: 'interactive session asked for in gpu (ml)',
        slots: { cpu: '1', mem: '1610612736', 'gpu.shares': '0.5' }, resource_group: 'gpu', project: 'ml' },
      { at: AT, event: 'queued', text: 'waited in the queue', passes: 3,
        reasons: [{ code: 'x', kind: 'wait', level: 'resource-group', name: 'gpu', text: 'cpu short by 1' }] },
      { at: '2026-12-01T09:05:00+00:00', event: 'admitted', text: 'admitted on n1 (GPU 0 × 0.5)', node: 'n1' },
      { at: '2026-12-01T10:00:00+00:00', event: 'warned', text: 'warned (idle): idle 55 min', rule: 'idle',
        details: { deadline: '2026-12-01T10:05:00+00:00', reason: 'idle 55 min' } },
      { at: '2026-12-01T10:01:00+00:00', event: 'kept', text: 'kept until 2026-12-01T11:00:00+00:00',
        details: { kept_until: '2026-12-01T11:00:00+00:00' } },
      { at: '2026-12-01T10:30:00+00:00', event: 'logged', text: 'stopped', by: 'ada' },
      { at: '2026-12-01T10:30:00+00:00', event: 'stopped', text: 'stopped by ada' }
    ]
  };

  it('says each step with exact amounts, local times and the reasons it waited for', () => {
    const rows = historyRows(history);
    expect(rows.map(r => r.label)).toEqual([
      'asked for', 'queued', 'admitted', 'warned', 'kept', 'access log', 'stopped'
    ]);
    expect(rows[0].text).toBe('CPU 1 · Mem 1.5 GiB · GPU 0.5 share in gpu (ml)');
    expect(rows[1].text).toBe('waited in the queue (3 scheduler passes)');
    expect(rows[1].lines).toEqual(['cpu short by 1']);
    expect(rows[2].text).toBe('on n1 (GPU 0 × 0.5)');
    expect(rows[3].text).toBe(`by the idle rule: idle 55 min (reclaim at ${clockTime('2026-12-01T10:05:00+00:00')})`);
    expect(rows[4].text).toBe(`until ${clockTime('2026-12-01T11:00:00+00:00')}`);
    expect(rows[4].text).not.toContain('T11:00');
    expect(rows[5].text).toBe('ada: stopped');
    expect(rows[6].text).toBe('by ada');
    expect(rows[0].time).toBe(clockTime(AT));
  });

  it('says how it ended without repeating the label', () => {
    const ended = (event: string, text: string) =>
      historyRows({ id: 'a', state: 'released', events: [{ at: AT, event, text }] })[0].text;
    expect(ended('reclaimed', 'reclaimed (idle): idle for 61 min')).toBe('by the idle rule: idle for 61 min');
    expect(ended('cancelled', 'cancelled while waiting: by alice')).toBe('while waiting: by alice');
    expect(ended('ended', 'ended with exit code 3')).toBe('with exit code 3');
    const reclaimEvent = historyRows({ id: 'a', state: 'released', events: [
      { at: AT, event: 'reclaimed', text: 'reclaimed (lifetime)', rule: 'lifetime', details: { deadline: AT } }] });
    expect(reclaimEvent[0].text).toBe('by the lifetime rule');
  });

  it('shows an unknown step by its own name', () => {
    expect(historyRows({ id: 'a', state: 'pending', events: [{ at: null, event: 'odd', text: 't' }] })[0])
      .toEqual({ time: '', event: 'odd', label: 'odd', text: 't', lines: [] });
  });
});

describe('gpuDetail', () => {
  const base = { id: 'a-1', state: 'allocated', node: 'gpu-7' } as unknown as IAllocation;

  it("names each device with its share's memory cap and the node's sharing", () => {
    const d = gpuDetail({
      ...base,
      gpus: [{ index: 3, share: '0.5', memory: 40 * 2 ** 30 }],
      shares: { mode: 'mps', enforced: false, reason: 'MPS daemon not running', not_enforced_allowed: true }
    });
    expect(d.devices).toEqual(['GPU 3: 0.5, memory cap 40 GiB']);
    expect(d.shares?.state).toBe('not-enforced');
    expect(d.shares?.text).toBe('GPU sharing: MPS, shares not enforced (MPS daemon not running)');
  });

  it('shows whole GPUs as whole and nothing without GPUs', () => {
    expect(gpuDetail({ ...base, gpus: [{ index: 0, share: '1' }, { index: 1, share: '1' }],
      shares: { mode: 'framework', enforced: true } })).toEqual({
      devices: ['GPU 0: whole', 'GPU 1: whole'],
      shares: { mode: 'framework', state: 'enforced', text: 'GPU sharing: framework caps, shares enforced' }
    });
    expect(gpuDetail({ ...base, gpus: null, shares: null })).toEqual({ devices: [], shares: null });
  });
});

describe('usageView', () => {
  it('shows the latest reading exactly: CPU of the granted cores, memory in binary units', () => {
    const view = usageView({
      id: 'a', state: 'allocated', cores: '2', note: '', samples: [],
      latest: { at: AT, cpu_percent: '50.00', mem_used: '1610612736', mem_limit: '2147483648',
        gpu_util: '12.50', gpu_mem: '40.00' }
    });
    expect(view).toEqual({ at: clockTime(AT), cpu: '50 % of 2 cores', mem: '1.5 GiB of 2 GiB',
      gpu: '12.5 % busy · 40 % memory', note: '' });
  });

  it('says why there is no reading, and what a reading lacks', () => {
    expect(usageView({ id: 'a', state: 'allocated', cores: '1', latest: null, samples: [],
      note: 'not sampled' })).toEqual({ at: '', cpu: '–', mem: '–', gpu: '–', note: 'not sampled' });
    const partial = usageView({ id: 'a', state: 'allocated', cores: '1', note: '', samples: [],
      latest: { at: AT, cpu_percent: null, mem_used: '1024', mem_limit: null, gpu_util: null, gpu_mem: null } });
    expect([partial.cpu, partial.mem, partial.gpu]).toEqual(['–', '1 KiB', '–']);
    const one = usageView({ id: 'a', state: 'allocated', cores: '1', note: '', samples: [],
      latest: { at: AT, cpu_percent: '7.25', mem_used: null, mem_limit: null, gpu_util: null, gpu_mem: '3.00' } });
    expect([one.cpu, one.mem, one.gpu]).toEqual(['7.25 % of 1 core', '–', '3 % memory']);
  });

  it('writes sizes as the Sessions panel does', () => {
    expect(slotsText({ cpu: '0.5', mem: '1073741824' })).toBe('CPU 0.5 · Mem 1 GiB · GPU 0');
  });
});

function alloc(id: string, state: string, type = 'interactive', server = id): IAllocation {
  return { id, state, session_type: type, server_name: server, origin: 'hub', user: 'alice',
    project: 'ml', resource_group: 'g', slots: {}, reasons: [], gpus: [] } as unknown as IAllocation;
}

describe('tabs and the selection', () => {
  const all = [alloc('a', 'allocated'), alloc('b', 'pending'), alloc('c', 'allocated', 'batch'),
    alloc('d', 'released'), alloc('e', 'released', 'batch')];

  it('splits sessions by type and counts the active ones of each', () => {
    expect(ofType(all, 'batch').map(a => a.id)).toEqual(['c', 'e']);
    expect(ofType([{ ...all[0], session_type: '' } as IAllocation], 'interactive')).toHaveLength(1);
    expect(activeCounts(all)).toEqual({ interactive: 2, batch: 1 });
  });

  it("counts a tab's ended sessions, with + while the service holds more unread", () => {
    const batchEnded = ofType(all, 'batch').filter(a => a.state === 'released');
    expect(endedOfTab(all, 'batch', batchEnded, 2)).toEqual({ count: '1', more: false });
    expect(endedOfTab(all, 'interactive', [], 2)).toEqual({ count: '1', more: true });
    expect(endedOfTab(all, 'batch', batchEnded, 9)).toEqual({ count: '1+', more: true });
    expect(endedOfTab(all.slice(0, 3), 'batch', [], 0)).toEqual({ count: '0', more: false });
  });

  it('toggles a selection without changing the old one', () => {
    const one = toggle(new Set(), 'a');
    expect([...one]).toEqual(['a']);
    expect([...toggle(one, 'a')]).toEqual([]);
    expect([...one]).toEqual(['a']);
  });

  it('stops only the selected sessions still running or waiting', () => {
    expect(stopTargets(all, new Set(['a', 'b', 'd', 'zz'])).map(a => a.id)).toEqual(['a', 'b']);
  });

  it('asks one question naming them all', () => {
    const q = stopQuestion([all[0], all[1]], 0);
    expect(q.title).toBe('Stop 1 running and cancel 1 waiting sessions?');
    expect(q.body).toBe('a, b. Their processes end; files in their folders stay.');
    expect(stopQuestion([all[0]], 0).title).toBe('Stop 1 running session?');
    expect(stopQuestion([all[1]], 0).title).toBe('Cancel 1 waiting session?');
  });

  it('stops each one, the others too when one fails', async () => {
    const calls: string[] = [];
    const report = await stopEach([all[0], all[1], all[2]], async a => {
      calls.push(a.id);
      if (a.id === 'b') {
        throw new Error('hub says no');
      }
    }, 0);
    expect(calls).toEqual(['a', 'b', 'c']);
    expect(report).toEqual({ stopped: ['a', 'c'], failed: [{ id: 'b', name: 'b', message: 'hub says no' }] });
  });
});

describe('words', () => {
  it('names the same state the same way everywhere', () => {
    expect(['allocated', 'pending', 'released', 'cancelled'].map(stateLabel))
      .toEqual(['running', 'waiting', 'ended', 'cancelled']);
    expect(stateLabel('odd')).toBe('odd');
    expect(historyLabel('logged')).toBe('access log');
  });
});

describe("the launcher's memory field", () => {
  const form: ILaunchForm = {
    name: 'lab', project: 'ml', group: 'g', image: '', cpu: '1', mem: '', gpuMode: 'none', gpu: '',
    folders: [], type: 'interactive', command: ''
  };

  it('takes binary units and refuses a fraction of a byte', () => {
    for (const mem of ['1073741824', '2G', '512 MiB', '1.5 GiB']) {
      expect(checkForm({ ...form, mem })).toEqual({});
    }
    expect(checkForm({ ...form, mem: '1.1K' }).mem).toContain('whole number of bytes');
    expect(checkForm({ ...form, mem: 'lots' }).mem).toContain('512M');
  });
});
