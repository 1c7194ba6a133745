import { grantBody, grantLabel, groupChange, groupForm } from '../admin/ops/grants';
import {
  HIDDEN_LABEL,
  moveRequest,
  moveTargets,
  priorityRequest,
  queueRows,
  queueSummary
} from '../admin/ops/queue';
import { IQueue } from '../admin/ops/types';

const queue: IQueue = {
  resource_group: 'gpu',
  queue_order: 'fifo',
  hol_passes: 3,
  pending_timeout: null,
  pending: 3,
  hidden: 1,
  entries: [
    {
      position: 2,
      visible: true,
      id: 'r2',
      user: 'alice',
      domain: 'acme',
      project: 'ml',
      slots: { cpu: '2', 'gpu.shares': '0.5' },
      priority: 5,
      passes: 4,
      waits_for: 'limits',
      holds_line: false,
      reasons: [{ code: 'limit', kind: 'wait', level: 'project', name: 'ml', text: 'project gpu over' }]
    },
    { position: 1, visible: false },
    {
      position: 0,
      visible: true,
      id: 'r0',
      user: 'ada',
      domain: 'acme',
      project: 'ml',
      slots: { mem: '1073741824' },
      priority: 0,
      passes: 1,
      waits_for: 'capacity',
      holds_line: true,
      reasons: []
    }
  ]
};

describe('queue move requests', () => {
  it('sends position 0 for the front, before/after with the other id', () => {
    expect(moveRequest('front', 'r2')).toEqual({ position: 0 });
    expect(moveRequest('before', 'r2', 'r0')).toEqual({ before: 'r0' });
    expect(moveRequest('after', 'r0', 'r2')).toEqual({ after: 'r2' });
  });

  it('refuses a move without a target or onto itself', () => {
    expect(() => moveRequest('before', 'r2')).toThrow('choose the request');
    expect(() => moveRequest('after', 'r2', 'r2')).toThrow('itself');
  });

  it('takes priorities 0..100 only', () => {
    expect(priorityRequest(' 7 ')).toEqual({ priority: 7 });
    expect(priorityRequest('100')).toEqual({ priority: 100 });
    for (const bad of ['101', '-1', '1.5', '', 'x']) {
      expect(() => priorityRequest(bad)).toThrow('0 to 100');
    }
  });
});

describe('queue rows', () => {
  it('orders by position and keeps hidden entries anonymous', () => {
    const rows = queueRows(queue);
    expect(rows.map(r => r.position)).toEqual([0, 1, 2]);
    expect(rows[1]).toMatchObject({ visible: false, who: HIDDEN_LABEL, id: '', slots: '' });
    expect(rows[0].who).toBe('ada/r0 (acme/ml)'); // an API session: its short id
    const hub = queueRows({ ...queue, entries: [{ ...queue.entries[2], origin: 'hub', server_name: 'lab1' }] });
    expect(hub[0].who).toBe('ada/lab1 (acme/ml)');
    const dflt = queueRows({ ...queue, entries: [{ ...queue.entries[2], origin: 'hub', server_name: '' }] });
    expect(dflt[0].who).toBe('ada/(default) (acme/ml)');
    expect(rows[0].slots).toBe('Memory 1 GiB');
    expect(rows[0].waits).toBe('capacity (holds the line), 1 pass(es)');
    expect(rows[2].slots).toBe('CPU 2, GPU shares 0.5');
    expect(rows[2].reasons).toEqual(['project gpu over']);
    expect(rows[2].priority).toBe('5');
    expect(moveTargets(rows, 'r2').map(r => r.id)).toEqual(['r0']);
  });

  it('summarises the queue', () => {
    expect(queueSummary(queue)).toBe('3 pending (1 of other domains); order fifo; no pending timeout');
  });
});

describe('grants', () => {
  it('builds and labels grant bodies', () => {
    expect(grantBody('domain', ' acme ')).toEqual({ domain: 'acme' });
    expect(grantBody('project', 'acme/ml')).toEqual({ project: 'acme/ml' });
    expect(() => grantBody('project', 'ml')).toThrow('domain/project');
    expect(() => grantBody('user', '')).toThrow('name the user');
    expect(grantLabel({ project: 'acme/ml' })).toBe('project acme/ml');
  });
});

describe('group settings', () => {
  const g = {
    name: 'gpu',
    active: true,
    session_types: [],
    queue_order: 'fifo',
    pending_timeout: 600,
    nodes: []
  };
  it('sends only what changed; empty clears the timeout', () => {
    expect(groupChange(g, groupForm(g))).toEqual({});
    expect(groupChange(g, { queueOrder: 'priority', pendingTimeout: '600' })).toEqual({ queue_order: 'priority' });
    expect(groupChange(g, { queueOrder: 'fifo', pendingTimeout: '' })).toEqual({ clear: ['pending_timeout'] });
    expect(groupChange(g, { queueOrder: 'fifo', pendingTimeout: '30' })).toEqual({ pending_timeout: 30 });
    expect(() => groupChange(g, { queueOrder: 'fifo', pendingTimeout: '1.5' })).toThrow('whole seconds');
  });
});
