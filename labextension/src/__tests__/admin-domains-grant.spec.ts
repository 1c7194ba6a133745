import { grantable, IGroup } from '../admin/domains/model';

describe('resource groups a superadmin may grant to a domain', () => {
  it('offers every group not granted to the domain itself, by name', () => {
    const groups: IGroup[] = [
      { name: 'gpu', active: true, grants: [{ domain: 'acme' }] },
      { name: 'cpu', active: true, grants: [{ project: 'acme/ml' }] },
      { name: 'batch', active: true, grants: [] },
      { name: 'other', active: false, grants: [{ domain: 'globex' }, { user: 'gina' }] }
    ];
    expect(grantable(groups, 'acme')).toEqual(['batch', 'cpu', 'other']);
    expect(grantable(groups, 'new')).toEqual(['batch', 'cpu', 'gpu', 'other']);
  });

  it('offers nothing when the grants are not read (a domain admin)', () => {
    expect(grantable([{ name: 'gpu', active: true }], 'acme')).toEqual([]);
  });
});
