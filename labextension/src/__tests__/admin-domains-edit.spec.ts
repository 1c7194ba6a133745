import { editDraft, editPath, editRequest } from '../admin/domains/edit';

const project = {
  domain: 'acme',
  name: 'ml',
  description: 'ML',
  active: true,
  total_resource_slots: { cpu: '4', 'gpu.shares': '0.5' },
  hub_group: 'acme.ml',
  max_concurrent_sessions: 2,
  max_vfolder_count: null,
  max_vfolder_size: 1073741824,
  allowed_vfolder_hosts: ['local'],
  created_at: '2026-11-24T08:00:00Z'
};

const domain = {
  name: 'acme',
  description: '',
  active: true,
  total_resource_slots: { cpu: '64' },
  allowed_vfolder_hosts: ['local', 'nfs'],
  allowed_images: ['lab'],
  allow_first_login: false,
  created_at: '2026-11-24T08:00:00Z'
};

const ml = { domain: 'acme', project: 'ml' };

describe('edit a project', () => {
  it('is prefilled from GET: amounts as written, limits as text, none empty', () => {
    const d = editDraft(ml, project);
    expect(d.total_resource_slots).toBe('cpu=4, gpu.shares=0.5');
    expect(d.max_concurrent_sessions).toBe('2');
    expect(d.max_vfolder_count).toBe('');
    expect(d.allowed_vfolder_hosts).toBe('local');
    expect(d.active).toBe(true);
  });

  it('sends nothing when nothing changed', () => {
    expect(editRequest(ml, project, editDraft(ml, project))).toEqual({
      path: 'domains/acme/projects/ml',
      body: {},
      errors: {}
    });
  });

  it('sends only what changed: exact amounts as strings, integers as numbers, an emptied limit cleared', () => {
    const d = { ...editDraft(ml, project), total_resource_slots: 'cpu=4, gpu.shares=0.3', max_vfolder_count: '5', max_concurrent_sessions: ' ' };
    expect(editRequest(ml, project, d).body).toEqual({
      total_resource_slots: { cpu: '4', 'gpu.shares': '0.3' },
      max_vfolder_count: 5,
      clear: ['max_concurrent_sessions']
    });
  });

  it('shows the folder size in binary units and takes one typed with a unit as exact bytes', () => {
    expect(editDraft(ml, project).max_vfolder_size).toBe('1 GiB');
    const d = { ...editDraft(ml, project), max_vfolder_size: '1.5 GiB' };
    expect(editRequest(ml, project, d)).toMatchObject({ body: { max_vfolder_size: 1610612736 }, errors: {} });
    expect(editRequest(ml, project, { ...editDraft(ml, project) }).body).toEqual({});
  });

  it('refuses a size that is not one before sending, under that field', () => {
    const req = editRequest(ml, project, { ...editDraft(ml, project), max_vfolder_size: 'lots' });
    expect(req.errors.max_vfolder_size).toContain('not a size');
    expect(req.body).not.toHaveProperty('max_vfolder_size');
  });

  it('refuses slots not written name=amount before sending, under that field', () => {
    const d = { ...editDraft(ml, project), total_resource_slots: 'cpu 4' };
    const req = editRequest(ml, project, d);
    expect(Object.keys(req.errors)).toEqual(['total_resource_slots']);
    expect(req.errors.total_resource_slots).toContain('"cpu 4" is not name=amount');
  });

  it('emptied slots mean no limit: {}', () => {
    const d = { ...editDraft(ml, project), total_resource_slots: '' };
    expect(editRequest(ml, project, d).body).toEqual({ total_resource_slots: {} });
  });
});

describe('edit a domain', () => {
  it('sends only the changed fields of DomainUpdate', () => {
    const d = { ...editDraft({ domain: 'acme' }, domain), description: ' ACME ', allow_first_login: true, allowed_images: '', allowed_vfolder_hosts: 'local, nfs' };
    expect(editRequest({ domain: 'acme' }, domain, d)).toEqual({
      path: 'domains/acme',
      body: { description: 'ACME', allow_first_login: true, allowed_images: [] },
      errors: {}
    });
  });

  it('has no project fields, and its path names the domain encoded', () => {
    const d = editDraft({ domain: 'acme' }, domain);
    expect(Object.keys(d)).not.toContain('max_concurrent_sessions');
    expect(editPath({ domain: 'a b', project: 'x/y' })).toBe('domains/a%20b/projects/x%2Fy');
  });
});
