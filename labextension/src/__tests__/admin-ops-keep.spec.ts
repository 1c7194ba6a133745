import { inChunks, keepDetails, keepEdit, keepForm, keepTarget, nodesToRead } from '../admin/ops/keep';
import { IAdminNode } from '../admin/ops/types';

function node(name: string, used: { [slot: string]: string } = {}, taken = '0', schedulable = true): IAdminNode {
  return {
    name,
    resource_group: 'gpu',
    capacity: { cpu: '4', mem: '8589934592' },
    devices: [{ index: 0, model: 'A100', taken }],
    used,
    schedulable
  };
}

describe('a live page keeps what the admin is doing', () => {
  it('keeps an edit begun, takes the new value of an untouched field', () => {
    expect(keepEdit('7', '0', '0')).toBe('7');
    expect(keepEdit('7', '0', '5')).toBe('7');
    expect(keepEdit('0', '0', '5')).toBe('5');
  });

  it('keeps each changed field of a form on its own', () => {
    const filled = { queueOrder: 'fifo', pendingTimeout: '' };
    const typing = { queueOrder: 'fifo', pendingTimeout: '60' };
    // another admin switched the policy meanwhile: the timeout being typed stays
    expect(keepForm(typing, filled, { queueOrder: 'priority', pendingTimeout: '' })).toEqual({
      queueOrder: 'priority',
      pendingTimeout: '60'
    });
    expect(keepForm(filled, filled, { queueOrder: 'drf', pendingTimeout: '30' })).toEqual({
      queueOrder: 'drf',
      pendingTimeout: '30'
    });
  });

  it('keeps a chosen move target while it waits in the queue', () => {
    expect(keepTarget('b', [{ id: 'a' }, { id: 'b' }])).toBe('b');
    expect(keepTarget('b', [{ id: 'a' }])).toBe('');
    expect(keepTarget('', [{ id: 'a' }])).toBe('');
  });

  it("keeps the listed nodes' details until read again, drops the others", () => {
    const details = { n1: { ...node('n1'), sessions: [] }, n9: { ...node('n9'), sessions: [] } };
    expect(Object.keys(keepDetails(details, [node('n1'), node('n2')]))).toEqual(['n1']);
  });
});

describe('which nodes a poll reads again', () => {
  const before = [node('n1', { cpu: '1' }, '0.5'), node('n2'), node('n3')];
  const details = { n1: before[0], n2: before[1], n3: before[2] };

  it('none when nothing changed', () => {
    expect(nodesToRead(before, [node('n1', { cpu: '1' }, '0.5'), node('n2'), node('n3')], details, false)).toEqual([]);
  });

  it('a node whose use, GPU share taken or drain changed, a new node, one never read', () => {
    const now = [
      node('n1', { cpu: '1' }, '1'),
      node('n2', { cpu: '1' }),
      node('n3', {}, '0', false),
      node('n4')
    ];
    expect(nodesToRead(before, now, details, false)).toEqual(['n1', 'n2', 'n3', 'n4']);
    expect(nodesToRead(before, [node('n2')], { n1: before[0] }, false)).toEqual(['n2']);
  });

  it('every node on a Refresh', () => {
    expect(nodesToRead(before, before, details, true)).toEqual(['n1', 'n2', 'n3']);
  });
});

describe('reading nodes in chunks', () => {
  it('asks for every node once, in order, at most `size` a read', () => {
    expect(inChunks(['a', 'b', 'c', 'd', 'e'], 2)).toEqual([['a', 'b'], ['c', 'd'], ['e']]);
    expect(inChunks(['a'], 50)).toEqual([['a']]);
    expect(inChunks([], 50)).toEqual([]);
  });
});
