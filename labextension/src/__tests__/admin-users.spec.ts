import {
  bulkLines,
  IUser,
  keypairBody,
  membershipChanges,
  NO_FILTERS,
  userDraft,
  userPatch,
  usersPath
} from '../admin/users/model';

const ann: IUser = {
  name: 'ann',
  domain: 'acme',
  role: 'user',
  active: true,
  resource_policy: null,
  projects: ['ml', 'viz']
};

describe('users search', () => {
  it('leaves empty filters out', () => {
    expect(usersPath(NO_FILTERS)).toBe('users');
  });
  it('sends q, role, domain and active encoded', () => {
    expect(usersPath({ q: ' An n', role: 'domain-admin', domain: 'acme', active: 'false' })).toBe(
      'users?q=An%20n&role=domain-admin&domain=acme&active=false'
    );
  });
});

describe('user edit', () => {
  it('sends nothing when nothing changed', () => {
    expect(userPatch(ann, userDraft(ann))).toBeNull();
    expect(membershipChanges(ann, userDraft(ann))).toEqual({ add: [], remove: [] });
  });
  it('sends only the changed fields', () => {
    const d = { ...userDraft(ann), role: 'domain-admin', resource_policy: 'gold', active: false };
    expect(userPatch(ann, d)).toEqual({ role: 'domain-admin', resource_policy: 'gold', active: false });
  });
  it('turns the projects text into memberships to add and remove', () => {
    const d = { ...userDraft(ann), projects: 'viz; nlp, cv' };
    expect(membershipChanges(ann, d)).toEqual({ add: ['cv', 'nlp'], remove: ['ml'] });
  });
});

describe('bulk add results', () => {
  it('lists each row in order with what was created or why it was refused', () => {
    const { summary, lines } = bulkLines({
      created: 1,
      refused: 1,
      results: [
        { row: 3, name: 'bob', result: 'refused', status: 404, reason: 'no domain globex' },
        {
          row: 2,
          name: 'amy',
          result: 'created',
          user: { ...ann, name: 'amy', projects: ['ml'], resource_policy: 'gold' }
        }
      ]
    });
    expect(summary).toBe('1 created, 1 refused');
    expect(lines).toEqual([
      { row: 2, name: 'amy', result: 'created', text: 'acme, user, projects ml, policy gold' },
      { row: 3, name: 'bob', result: 'refused', text: '404: no domain globex' }
    ]);
  });
});

describe('keypair form', () => {
  it('sends the policy and expiry only when given', () => {
    expect(keypairBody('ann', '', ' ')).toEqual({ user: 'ann' });
    expect(keypairBody('ann', 'gold', '2027-01-01T00:00:00Z')).toEqual({
      user: 'ann',
      resource_policy: 'gold',
      expires_at: '2027-01-01T00:00:00Z'
    });
  });
});
