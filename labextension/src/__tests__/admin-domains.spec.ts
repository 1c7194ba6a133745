import { GRANTED_HERE, groupsFor, projectBody, EMPTY_PROJECT, slotsOf, totalsBars } from '../admin/domains/model';

const figures = {
  limits: { cpu: '8', 'gpu.shares': '1' },
  used: { 'gpu.shares': '0.9', mem: '1073741824' },
  sessions: 3,
  pending: { 'gpu.shares': '0.3' },
  pending_sessions: 1
};

describe('domain totals', () => {
  it('shows every slot named by a limit or a use, known slots first', () => {
    expect(slotsOf(figures)).toEqual(['cpu', 'mem', 'gpu.shares']);
  });

  it('draws exact bars: 3 x 0.3 GPU is 0.9 of 1, pending after it; no limit is unlimited', () => {
    const bars = totalsBars(figures);
    const gpu = bars.find(b => b.slot === 'gpu.shares')!;
    expect(gpu.used).toBe('0.9');
    expect(gpu.usedPercent).toBe(90);
    expect(gpu.pendingPercent).toBe(10);
    expect(gpu.over).toBe(false);
    const mem = bars.find(b => b.slot === 'mem')!;
    expect(mem.limit).toBeNull();
    expect(mem.text).toContain('unlimited');
  });
});

describe('resource groups of a domain', () => {
  it('lists the grants to the domain and to its projects only', () => {
    const groups = [
      { name: 'acme-gpu', active: true, grants: [{ domain: 'acme' }] },
      { name: 'shared', active: true, grants: [{ project: 'acme/ml' }, { project: 'acmex/ml' }] },
      { name: 'globex-gpu', active: true, grants: [{ domain: 'globex' }] }
    ];
    expect(groupsFor(groups, 'acme')).toEqual([
      { group: 'acme-gpu', via: 'the domain' },
      { group: 'shared', via: 'project ml' }
    ]);
  });
});

describe('resource groups a domain admin sees', () => {
  it('lists every group of a listing without grants as granted here', () => {
    const groups = [{ name: 'default', active: true }, { name: 'gpu', active: true }];
    expect(groupsFor(groups, 'beta')).toEqual([
      { group: 'default', via: GRANTED_HERE },
      { group: 'gpu', via: GRANTED_HERE }
    ]);
  });
});

describe('create project', () => {
  it('sends the filled fields', () => {
    const { body, errors } = projectBody({ ...EMPTY_PROJECT, name: ' cv ', total_resource_slots: 'cpu=4, gpu.shares=0.5', max_concurrent_sessions: '2', allowed_vfolder_hosts: 'local; nfs' });
    expect(errors).toEqual({});
    expect(body).toEqual({ name: 'cv', total_resource_slots: { cpu: '4', 'gpu.shares': '0.5' }, max_concurrent_sessions: 2, allowed_vfolder_hosts: ['local', 'nfs'] });
  });
});
