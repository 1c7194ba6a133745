import { parseMap, policyDraft, policyRequest, POLICY_FIELDS } from '../admin/policies/form';

const gold = {
  name: 'gold',
  total_resource_slots: { cpu: '8', 'gpu.shares': '2.5' },
  unspecified_limited: false,
  max_concurrent_sessions: 3,
  max_session_lifetime: null,
  idle_timeout: 3600,
  max_pending_sessions: null,
  max_pending_resource_slots: {},
  max_gpus_per_session: '1.5',
  allowed_resource_groups: ['acme-gpu'],
  max_vfolder_count: null,
  max_vfolder_size: null,
  allowed_vfolder_hosts: [],
  utilization_window: 600,
  utilization_grace: null,
  utilization_thresholds: { cpu: '5', gpu_util: '2.5' },
  utilization_operator: 'or',
  reclaim_warning: 300,
  keep_extension: null,
  max_keeps: 2
};

describe('policy form', () => {
  it('covers every field of the service', () => {
    const keys = POLICY_FIELDS.map(f => f.key);
    for (const key of Object.keys(gold)) {
      if (key !== 'name') {
        expect(keys).toContain(key);
      }
    }
  });

  it('creates with the filled fields only, integers as numbers and amounts as strings', () => {
    const d = { ...policyDraft(null), name: ' silver ', total_resource_slots: 'cpu=4, gpu.shares=0.5', max_keeps: '2', max_gpus_per_session: '0.3', allowed_resource_groups: 'a, b', utilization_thresholds: 'cpu=5' };
    const r = policyRequest(null, d);
    expect(r.method).toBe('POST');
    expect(r.path).toBe('resource-policies');
    expect(r.errors).toEqual({});
    expect(r.body).toEqual({
      name: 'silver',
      total_resource_slots: { cpu: '4', 'gpu.shares': '0.5' },
      max_keeps: 2,
      max_gpus_per_session: '0.3',
      allowed_resource_groups: ['a', 'b'],
      utilization_thresholds: { cpu: '5' }
    });
  });

  it('edits with what changed and clears emptied limits', () => {
    const d = { ...policyDraft(gold), idle_timeout: '', max_keeps: '5', utilization_operator: 'and', utilization_thresholds: '' };
    const r = policyRequest(gold, d);
    expect(r.method).toBe('PATCH');
    expect(r.path).toBe('resource-policies/gold');
    expect(r.body).toEqual({ max_keeps: 5, utilization_operator: 'and', clear: ['idle_timeout', 'utilization_thresholds'] });
  });

  it('sends nothing for an unchanged policy', () => {
    expect(policyRequest(gold, policyDraft(gold)).body).toEqual({});
  });

  it('sends a non-integer as typed, so the service names the field', () => {
    const r = policyRequest(gold, { ...policyDraft(gold), max_keeps: 'many' });
    expect(r.body).toEqual({ max_keeps: 'many' });
  });

  it('refuses a slot map that is not name=amount before sending', () => {
    expect(parseMap('cpu 8')).toEqual({ error: '"cpu 8" is not name=amount' });
    const r = policyRequest(gold, { ...policyDraft(gold), total_resource_slots: 'cpu' });
    expect(r.errors.total_resource_slots).toContain('not name=amount');
  });
});

describe('sizes with binary units', () => {
  it('reads mem in a slot map with a unit as exact bytes, other slots as typed', () => {
    expect(parseMap('cpu=8, mem=32 GiB, gpu.shares=2.5')).toEqual({
      value: { cpu: '8', mem: '34359738368', 'gpu.shares': '2.5' }
    });
    expect(parseMap('mem=512M').value).toEqual({ mem: '536870912' });
    expect(parseMap('mem=1.1K').error).toContain('mem: "1.1K" is not a whole number of bytes');
  });

  it('shows a policy\'s memory and folder size in binary units, and sends them back unchanged', () => {
    const p = { name: 'p', total_resource_slots: { cpu: '8', mem: '34359738368' }, max_vfolder_size: 107374182400 };
    const d = policyDraft(p);
    expect(d.total_resource_slots).toBe('cpu=8, mem=32 GiB');
    expect(d.max_vfolder_size).toBe('100 GiB');
    expect(policyRequest(p, d).body).toEqual({});
    const bigger = policyRequest(p, { ...d, max_vfolder_size: '1T', total_resource_slots: 'cpu=8, mem=64G' });
    expect(bigger.body).toEqual({
      max_vfolder_size: 1099511627776,
      total_resource_slots: { cpu: '8', mem: '68719476736' }
    });
  });

  it('keeps an odd size in bytes when no unit shows it exactly', () => {
    expect(policyDraft({ name: 'p', max_vfolder_size: 200000014 }).max_vfolder_size).toBe('200000014');
  });
});
