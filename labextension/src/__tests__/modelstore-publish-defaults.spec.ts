import { IPublishFolder, publishFolders, publishScopes } from '../modelstore/model';

const me = { name: 'ann', domain: 'acme', projects: [{ name: 'ml', domain: 'acme' }] };

function folder(id: string, owner: IPublishFolder['owner'], over: Partial<IPublishFolder> = {}): IPublishFolder {
  return { id, name: id, status: 'active', usage_mode: 'general', owner, ...over };
}

describe('publishFolders', () => {
  it('never preselects another user\'s private folder, even listed first', () => {
    const r = publishFolders([
      folder('bobs', { kind: 'user', user: 'bob', domain: 'acme' }, { usage_mode: 'model' }),
      folder('mine', { kind: 'user', user: 'ann', domain: 'acme' })
    ], me);
    expect(r.preselected).toBe('mine');
    expect(r.folders.map(f => f.id)).toEqual(['mine', 'bobs']);
    expect(r.folders.map(f => f.whose)).toEqual(['yours', "bob's"]);
  });

  it('puts own model folders first, then own, then the projects\', then others\'', () => {
    const r = publishFolders([
      folder('other-proj', { kind: 'project', project: 'x', domain: 'acme' }),
      folder('proj', { kind: 'project', project: 'ml', domain: 'acme' }),
      folder('own', { kind: 'user', user: 'ann', domain: 'acme' }),
      folder('own-model', { kind: 'user', user: 'ann', domain: 'acme' }, { usage_mode: 'model' }),
      folder('gone', { kind: 'user', user: 'ann', domain: 'acme' }, { status: 'trashed', usage_mode: 'model' })
    ], me);
    expect(r.folders.map(f => f.id)).toEqual(['own-model', 'own', 'proj', 'other-proj']);
    expect(r.preselected).toBe('own-model');
  });

  it('preselects a project folder of the caller\'s when they own none', () => {
    const r = publishFolders([
      folder('bobs', { kind: 'user', user: 'bob', domain: 'acme' }),
      folder('proj', { kind: 'project', project: 'ml', domain: 'acme' })
    ], me);
    expect(r.preselected).toBe('proj');
  });

  it('preselects nothing when only others\' folders are there (a project of the same name elsewhere is not theirs)', () => {
    const r = publishFolders([
      folder('bobs', { kind: 'user', user: 'bob', domain: 'acme' }),
      folder('elsewhere', { kind: 'project', project: 'ml', domain: 'globex' })
    ], me);
    expect(r.preselected).toBe('');
    expect(r.folders.map(f => f.id)).toEqual(['bobs', 'elsewhere']);
  });
});

describe('publishScopes', () => {
  const domains = [{ name: 'globex' }, { name: 'acme' }, { name: 'old', active: false }, { name: 'beta' }];

  it('offers a superadmin every domain and each active one, theirs first', () => {
    expect(publishScopes('superadmin', 'acme', domains)).toEqual(['', 'acme', 'beta', 'globex']);
  });

  it('offers a domain admin their domain only, whatever else is listed', () => {
    expect(publishScopes('domain-admin', 'globex', domains)).toEqual(['globex']);
  });
});
