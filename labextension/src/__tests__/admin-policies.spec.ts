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
