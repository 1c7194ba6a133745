import { badgeText, groupInvitations, waitingForMe } from '../data/invitations';
import { invitation } from './data-fixtures';

describe('invitations', () => {
  const received = [
    invitation('1', 'bob', 'alice'),
    invitation('2', 'carol', 'alice', 'accepted', { updated_at: '2026-11-21T10:00:00+00:00' }),
    invitation('3', 'dave', 'alice', 'pending', { folder_name: 'a-first' })
  ];
  const sent = [
    invitation('4', 'alice', 'bob'),
    invitation('5', 'alice', 'carol', 'canceled', { updated_at: '2026-11-22T10:00:00+00:00' })
  ];

  it('counts only pending invitations addressed to me for the badge', () => {
    expect(waitingForMe([...received, ...sent], 'alice').map(i => i.id)).toEqual(['1', '3']);
    expect(badgeText(0)).toBe('');
    expect(badgeText(2)).toBe('2');
    expect(badgeText(12)).toBe('9+');
  });

  it('groups what to answer, what to revoke and what is done', () => {
    const g = groupInvitations(received, sent, 'alice');
    expect(g.received.map(i => i.id)).toEqual(['3', '1']); // by folder name
    expect(g.sent.map(i => i.id)).toEqual(['4']);
    expect(g.history.map(i => i.id)).toEqual(['5', '2']); // newest first
  });

  it('lists an invitation found in both answers once', () => {
    const self = invitation('9', 'alice', 'alice');
    const g = groupInvitations([self], [self], 'alice');
    expect(g.received.map(i => i.id)).toEqual(['9']);
    expect(g.sent).toEqual([]);
  });
});
