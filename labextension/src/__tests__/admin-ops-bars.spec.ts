import { barLevel, gpuTaken, nodeBars } from '../admin/ops/bars';
import { gpuMap, nodeShares, OTHERS_LABEL, untilEmptyText } from '../admin/ops/gpumap';
import { IAdminNode } from '../admin/ops/types';

const node: IAdminNode = {
  name: 'n1',
  resource_group: 'g',
  capacity: { cpu: '10', mem: '4294967296' },
  used: { cpu: '8.1', mem: '1073741824', 'gpu.shares': '0.9', gpu: '1' },
  schedulable: true,
  devices: [
    {
      index: 1,
      model: 'A100',
      taken: '0.9',
      free: '0.1',
      holders: [
        { allocation: 'aaaaaaaa-1', user: 'alice', domain: 'acme', project: 'ml', share: '0.3',
          memory: 24 * 2 ** 30 },
        { allocation: 'bbbbbbbb-2', user: 'alice', domain: 'acme', project: 'ml', share: '0.3' }
      ],
      others: '0.3'
    },
    { index: 0, model: 'A100', taken: '1', free: '0', holders: [], others: '1' }
  ]
};

describe('bar thresholds', () => {
  it('is ok up to 80 % exactly, warns above it, is full at capacity', () => {
    expect(barLevel('8', '10')).toBe('ok');
    expect(barLevel('8.0001', '10')).toBe('warn');
    expect(barLevel('0.81', '1')).toBe('warn');
    expect(barLevel('9.99', '10')).toBe('warn');
    expect(barLevel('10', '10')).toBe('full');
    expect(barLevel('11', '10')).toBe('full');
    expect(barLevel('0', '0')).toBe('ok');
  });

  it('does not round: 80.4 % warns although its whole percent is 80', () => {
    const bars = nodeBars({ ...node, used: { cpu: '8.04' } });
    expect(bars[0].percent).toBe(80);
    expect(bars[0].level).toBe('warn');
  });

  it('counts GPU shares exactly into the GPU bar', () => {
    expect(gpuTaken(node)).toBe('1.9');
    const bars = nodeBars(node);
    expect(bars.map(b => b.slot)).toEqual(['cpu', 'mem', 'gpu']);
    const gpu = bars[2];
    expect(gpu.used).toBe('1.9');
    expect(gpu.capacity).toBe('2');
    expect(gpu.free).toBe('0.1');
    expect(gpu.level).toBe('warn');
    expect(gpu.text).toBe('1.9 of 2 used, 0.1 free');
    expect(bars[0].text).toBe('8.1 of 10 used, 1.9 free');
    expect(bars[1].text).toBe('1 GiB of 4 GiB used, 3 GiB free');
  });

  it('has no GPU bar on a node without devices', () => {
    expect(nodeBars({ ...node, devices: [] }).map(b => b.slot)).toEqual(['cpu', 'mem']);
  });
});

describe('GPU map model', () => {
  it("says how the node enforces shares, with an admin's mark", () => {
    expect(nodeShares(node)).toBeNull(); // an older service says nothing
    const marked = {
      ...node,
      shares: { mode: 'hami', enforced: false, reason: 'HAMi-core library absent (/l.so)',
        not_enforced_allowed: true, taken: true }
    };
    expect(nodeShares(marked)).toEqual({
      mode: 'hami', state: 'not-enforced',
      text: 'GPU sharing: HAMi-core, shares not enforced (HAMi-core library absent (/l.so))'
    });
    expect(nodeShares({ ...marked, devices: [] })).toBeNull();
  });

  it('orders devices and lists holders with the hidden share as other domains', () => {
    const map = gpuMap(node);
    expect(map.map(c => c.index)).toEqual([0, 1]);
    expect(map[0].level).toBe('full');
    expect(map[0].holders).toEqual([
      { allocation: '', who: OTHERS_LABEL, share: '1', visible: false, cap: '' }
    ]);
    expect(map[1].holders.map(h => h.cap)).toEqual(['memory cap 24 GiB', '', '']);
    expect(map[1].holders.map(h => [h.who, h.share, h.visible])).toEqual([
      ['alice/aaaaaaaa (acme/ml)', '0.3', true],
      ['alice/bbbbbbbb (acme/ml)', '0.3', true],
      [OTHERS_LABEL, '0.3', false]
    ]);
    expect(map[1].taken).toBe('0.9');
    expect(map[1].free).toBe('0.1');
    expect(map[1].percent).toBe(90);
  });

  it('computes free when the node listing has only taken', () => {
    const map = gpuMap({ ...node, devices: [{ index: 0, model: 'x', taken: '0.3' }] });
    expect(map[0].free).toBe('0.7');
    expect(map[0].holders).toEqual([]);
  });

  it('says how long until a drained node is empty', () => {
    expect(untilEmptyText({ seconds: 0, at: null, sessions: 0, unlimited: 0 })).toBe('empty now');
    expect(untilEmptyText({ seconds: null, at: null, sessions: 2, unlimited: 1 })).toBe(
      'not known: 1 of 2 session(s) have no lifetime limit'
    );
    expect(untilEmptyText({ seconds: 7500, at: '2026-01-01T02:05:00Z', sessions: 1, unlimited: 0 })).toBe(
      'in 2 h 5 min (at 2026-01-01T02:05:00Z), 1 session(s)'
    );
  });
});
