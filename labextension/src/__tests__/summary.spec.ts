import { formatBytes, formatSlot, percentOf } from '../summary/exact';
import {
  bindingPolicy,
  composeLevels,
  groupViews,
  keypairInUse,
  makeBar,
  sessionCounts
} from '../summary/model';
import { IAllocation, IMeModel, INodeModel } from '../summary/types';

function alloc(over: Partial<IAllocation>): IAllocation {
  return {
    id: over.id ?? 'aaaaaaaa-0000-0000-0000-000000000000',
    user: 'alice',
    domain: 'acme',
    project: 'ml',
    resource_group: 'gpu',
    session_type: 'interactive',
    slots: {},
    state: 'allocated',
    node: null,
    gpus: [],
    reasons: [],
    created_at: '2026-11-24T10:00:00+00:00',
    admitted_at: null,
    released_at: null,
    release_reason: '',
    origin: 'hub',
    image: null,
    server_name: '',
    command: null,
    apps: [],
    exit_code: null,
    ended_at: null,
    ...over
  };
}

const share = (name: string, s: string, index = 0, state = 'allocated') =>
  alloc({
    id: `${name}-id`,
    server_name: name,
    state,
    node: state === 'allocated' ? 'n1' : null,
    slots: { cpu: '1', mem: '536870912', 'gpu.shares': s },
    gpus: state === 'allocated' ? [{ index, share: s }] : []
  });

const me: IMeModel = {
  name: 'alice',
  domain: 'acme',
  role: 'user',
  resource_policy: 'default',
  credential: 'token',
  projects: [
    { name: 'ml', domain: 'acme', total_resource_slots: { gpu: '2' } },
    { name: 'web', domain: 'acme', total_resource_slots: {} }
  ],
  domain_detail: { total_resource_slots: { cpu: '0', 'gpu.shares': '4' } }
};
const policy = {
  name: 'default',
  total_resource_slots: { cpu: '4', mem: '8589934592', 'gpu.shares': '1.5' },
  max_concurrent_sessions: 5
};

describe('exact helpers', () => {
  it('shows memory in binary units without rounding', () => {
    expect(formatBytes('8589934592')).toBe('8 GiB');
    expect(formatBytes('1610612736')).toBe('1.5 GiB');
    expect(formatBytes('536870912')).toBe('512 MiB');
    expect(formatBytes('1000')).toBe('1000 B');
    expect(formatBytes('1023')).toBe('1023 B');
    expect(formatBytes('1074790400')).toBe('1025 MiB');
    // exact in no unit with two decimals: rounded, and marked so
    expect(formatBytes('25274793984')).toBe('≈ 23.54 GiB');
    expect(formatBytes('1100')).toBe('≈ 1.07 KiB');
    expect(formatBytes('0')).toBe('0 B');
    expect(formatSlot('mem', null)).toBe('unlimited');
    expect(formatSlot('gpu.shares', '0.900')).toBe('0.9');
  });

  it('computes a bar width exactly and within 0..100', () => {
    expect(percentOf('0.9', '1.5')).toBe(60);
    expect(percentOf('1', '3')).toBe(33);
    expect(percentOf('5', '4')).toBe(100);
    expect(percentOf('0', '0')).toBe(0);
    expect(percentOf('1', '0')).toBe(0);
  });
});

describe('composeLevels', () => {
  const allocations = [
    share('a', '0.3'),
    share('b', '0.3'),
    share('c', '0.3'),
    share('p', '0.7', 0, 'pending'),
    alloc({ id: 'old', state: 'released', slots: { cpu: '9' } })
  ];
  const levels = composeLevels(me, policy, allocations);

  it('has my policy, each project and my domain, in that order', () => {
    expect(levels.map(l => [l.level, l.name])).toEqual([
      ['user', 'alice'],
      ['project', 'ml'],
      ['project', 'web'],
      ['domain', 'acme']
    ]);
    expect(levels[0].source).toBe('resource policy default');
    expect(levels[0].complete).toBe(true);
    expect(levels[1].complete).toBe(false); // a user sees only their sessions
  });

  it('adds three 0.3 GPU shares to exactly 0.9', () => {
    const bar = levels[0].bars.find(b => b.slot === 'gpu.shares')!;
    expect(bar.used).toBe('0.9');
    expect(bar.text).toBe('0.9 / 1.5');
    expect(bar.free).toBe('0.6');
    expect(bar.usedPercent).toBe(60);
    expect(bar.pending).toBe('0.7');
    expect(bar.pendingPercent).toBe(40); // 0.9 + 0.7 is over the limit: the bar ends at 100
  });

  it('keeps every known slot visible, even with limit and use 0', () => {
    expect(levels[3].bars.map(b => b.slot)).toEqual(['cpu', 'mem', 'gpu', 'gpu.shares']);
    const cpu = levels[3].bars[0];
    expect([cpu.limit, cpu.used, cpu.text]).toEqual(['0', '3', '3 / 0']);
    expect(cpu.over).toBe(true);
    const gpu = levels[0].bars.find(b => b.slot === 'gpu')!;
    expect([gpu.limit, gpu.used, gpu.text]).toEqual([null, '0.9', '0.9 (unlimited)']);
  });

  it('counts shares against a project device limit, as admission does', () => {
    const gpu = levels[1].bars.find(b => b.slot === 'gpu')!;
    expect(gpu.text).toBe('0.9 / 2');
    expect(gpu.free).toBe('1.1');
  });

  it('shows memory exactly', () => {
    const mem = levels[0].bars.find(b => b.slot === 'mem')!;
    expect(mem.text).toBe('1.5 GiB / 8 GiB');
  });

  it('counts sessions, not ended ones', () => {
    expect(levels[0].sessions).toEqual({ limit: 5, running: 3, pending: 1 });
    expect(sessionCounts(me, allocations)).toEqual({ running: 3, pending: 1 });
  });

  it('limits unspecified slots to 0 under unspecified_limited', () => {
    const [user] = composeLevels(
      me,
      { name: 'tight', total_resource_slots: { cpu: '1' }, unspecified_limited: true },
      []
    );
    expect(user.bars.map(b => b.text)).toEqual(['0 / 1', '0 B / 0 B', '0 / 0', '0 / 0']);
  });

  it('takes other slots in after the known ones', () => {
    const [user] = composeLevels(me, { name: 'x', total_resource_slots: { 'tpu': '1' } }, [
      alloc({ slots: { fpga: '2' } })
    ]);
    expect(user.bars.map(b => b.slot)).toEqual(['cpu', 'mem', 'gpu', 'gpu.shares', 'fpga', 'tpu']);
  });

  it('sees every session of the level as an admin', () => {
    const admin = { ...me, role: 'domain-admin' };
    const lv = composeLevels(admin, policy, [share('x', '0.5'), { ...share('y', '0.25'), user: 'bob' }]);
    expect(lv[0].bars[3].used).toBe('0.5'); // my policy: mine only
    expect(lv[1].complete).toBe(true);
    expect(lv[1].bars.find(b => b.slot === 'gpu')!.used).toBe('0.75');
  });
});

describe('the binding policy', () => {
  const policies = [policy, { name: 'batch', total_resource_slots: { cpu: '64' } }];
  const keys = [
    { access_key: 'AK1', resource_policy: 'batch', active: true, last_used_at: '2026-11-24T10:00:00Z' },
    { access_key: 'AK2', resource_policy: null, active: true, last_used_at: '2026-11-24T09:00:00Z' }
  ];

  it("is my user's with a token", () => {
    expect(keypairInUse(me, keys)).toBeNull();
    expect(bindingPolicy(me, policies, null)).toEqual({ policy, via: 'user' });
  });

  it("is the keypair's when the Lab calls with a keypair that names one", () => {
    const viaKey = { ...me, credential: 'keypair' };
    const key = keypairInUse(viaKey, keys);
    expect(key?.access_key).toBe('AK1');
    const bound = bindingPolicy(viaKey, policies, key);
    expect([bound.policy?.name, bound.via]).toEqual(['batch', 'keypair']);
    expect(composeLevels(viaKey, bound.policy, [], bound.via)[0].source).toBe(
      'keypair policy batch'
    );
    expect(bindingPolicy(viaKey, policies, keys[1]).via).toBe('user');
  });
});

describe('makeBar', () => {
  it('never shows float noise', () => {
    const bar = makeBar('gpu.shares', '1', '0.3', '0');
    expect(bar.free).toBe('0.7');
    expect(makeBar('cpu', '0.3', '0.1', '0.2').pendingPercent).toBe(67);
  });
});

describe('groupViews', () => {
  const nodes: INodeModel[] = [
    {
      name: 'n1',
      resource_group: 'gpu',
      capacity: { cpu: '8', mem: '34359738368' },
      devices: [
        { index: 1, model: 'A100' },
        { index: 0, model: 'A100' }
      ],
      schedulable: true
    },
    {
      name: 'n2',
      resource_group: 'gpu',
      capacity: { cpu: '4', mem: '17179869184' },
      devices: [],
      schedulable: false
    },
    { name: 'other', resource_group: 'cpu', capacity: { cpu: '2' }, devices: [], schedulable: true }
  ];
  const groups = [
    { name: 'gpu', active: true, session_types: ['interactive'], nodes: ['n1', 'n2'] }
  ];
  const allocations = [
    share('a', '0.3'),
    share('b', '0.3'),
    share('c', '0.3'),
    share('w', '1', 1),
    share('p', '0.5', 0, 'pending')
  ];
  const [view] = groupViews(groups, nodes, allocations, 'alice', false);

  it('maps which share of each GPU is taken, by device index', () => {
    const n1 = view.nodes.find(n => n.name === 'n1')!;
    expect(n1.gpus.map(g => [g.index, g.taken, g.free, g.takenPercent])).toEqual([
      [0, '0.9', '0.1', 90],
      [1, '1', '0', 100]
    ]);
    expect(n1.gpus[0].holders.map(h => [h.session, h.share, h.mine])).toEqual([
      ['a', '0.3', true],
      ['b', '0.3', true],
      ['c', '0.3', true]
    ]);
  });

  it('counts free capacity over schedulable nodes only, running sessions only', () => {
    expect(view.slots.map(s => [s.slot, s.capacity, s.used, s.free])).toEqual([
      ['cpu', '8', '4', '4'],
      ['mem', '34359738368', '2147483648', '32212254720']
    ]);
    expect(view.slots[1].text).toBe('30 GiB free of 32 GiB');
    expect([view.gpuCount, view.gpusIdle, view.gpuSharesFree]).toEqual([2, 0, '0.1']);
    expect(view.complete).toBe(false);
  });

  it("counts everyone's use when the service reports it, naming only mine", () => {
    const counted: INodeModel[] = [
      {
        ...nodes[0],
        used: { cpu: '6', mem: '4294967296' },
        devices: [
          { index: 0, model: 'A100', taken: '0.9' },
          { index: 1, model: 'A100', taken: '0' }
        ]
      }
    ];
    // only a's 0.3 is mine: the other 0.6 of GPU 0 is someone else's
    const [v] = groupViews(groups, counted, [share('a', '0.3')], 'alice', false);
    const n1 = v.nodes[0];
    expect(n1.gpus.map(g => [g.index, g.taken, g.free])).toEqual([
      [0, '0.9', '0.1'],
      [1, '0', '1']
    ]);
    expect(n1.gpus[0].holders.map(h => h.share)).toEqual(['0.3']);
    expect(v.slots[0].used).toBe('6');
    expect([v.gpusIdle, v.gpuSharesFree, v.complete]).toEqual([1, '1.1', true]);
  });

  it('says how a GPU node enforces shares and the cap of my share', () => {
    const marked: INodeModel[] = [{
      ...nodes[0],
      shares: {
        mode: 'mps', enforced: false, reason: 'MPS daemon not running',
        not_enforced_allowed: true, taken: true
      }
    }, { ...nodes[1], shares: { mode: 'mps', enforced: true } }];
    const capped = { ...share('a', '0.5'), gpus: [{ index: 0, share: '0.5', memory: 40 * 2 ** 30 }] };
    const [v] = groupViews(groups, marked, [capped], 'alice', false);
    expect(v.nodes[0].shares).toEqual({
      mode: 'mps', state: 'not-enforced',
      text: 'GPU sharing: MPS, shares not enforced (MPS daemon not running)'
    });
    expect(v.nodes[0].gpus[0].holders.map(h => h.cap)).toEqual(['memory cap 40 GiB']);
    // a node without GPUs has no sharing line; an older service says nothing
    expect(v.nodes[1].shares).toBeNull();
    expect(view.nodes[0].shares).toBeNull();
  });

  it('lists a group without nodes with zero capacity', () => {
    const [empty] = groupViews(
      [{ name: 'none', active: true, session_types: [], nodes: [] }],
      nodes,
      [],
      'alice',
      true
    );
    expect(empty.slots.map(s => s.text)).toEqual(['0 free of 0', '0 B free of 0 B']);
    expect(empty.nodes).toEqual([]);
  });
});
