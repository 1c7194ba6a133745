/**
 * New invitations within seconds: the Data menu's quick check reads only the
 * invitations waiting for me and reads everything again only when they
 * changed (the service's API is replaced by a recording double here; the
 * real check runs in tests/test_ui_invitations.py).
 */

import * as api from '../data/api';
import { CHECK_INTERVAL, waitingKey } from '../data/invitations';
import { MAX_INTERVAL } from '../data/idle';
import { DataModel } from '../data/model';
import { invitation } from './data-fixtures';

jest.mock('../data/api');
const mocked = api as jest.Mocked<typeof api>;

describe('the quick check for new invitations', () => {
  it('keys only what waits for me: pending, to me, whatever the order', () => {
    const a = [invitation('2', 'bob', 'alice'), invitation('1', 'carol', 'alice')];
    expect(waitingKey(a, 'alice')).toBe('1 2');
    expect(waitingKey([...a].reverse(), 'alice')).toBe('1 2');
    expect(waitingKey([invitation('3', 'bob', 'alice', 'accepted'), invitation('4', 'alice', 'bob')], 'alice')).toBe('');
    expect(CHECK_INTERVAL).toBeLessThanOrEqual(10_000); // "within seconds"
    expect(CHECK_INTERVAL).toBeLessThan(MAX_INTERVAL);
  });

  it('reads everything again only when an invitation arrived or went', async () => {
    const received = [invitation('1', 'bob', 'alice')];
    mocked.getMe.mockResolvedValue({ name: 'alice', resource_policy: 'p' } as any);
    mocked.getPolicy.mockResolvedValue({} as any);
    mocked.listFolders.mockResolvedValue([]);
    mocked.listHosts.mockResolvedValue([]);
    mocked.listInvitations.mockImplementation(async (_s, d) => (d === 'received' ? [...received] : []));
    const model = new DataModel({} as any);
    const check = () => (model as any)._checkInvitations() as Promise<void>;
    try {
      await check(); // before the first full read: nothing asked
      expect(mocked.listWaitingInvitations).not.toHaveBeenCalled();
      await model.refresh();
      expect(model.waiting).toBe(1);
      const reads = mocked.listFolders.mock.calls.length;
      // nothing new: one cheap read, no full read
      mocked.listWaitingInvitations.mockResolvedValue([invitation('1', 'bob', 'alice')]);
      await check();
      expect(mocked.listWaitingInvitations).toHaveBeenCalledTimes(1);
      expect(mocked.listFolders.mock.calls.length).toBe(reads);
      // a new one: everything again, the badge counts it
      received.push(invitation('2', 'carol', 'alice'));
      mocked.listWaitingInvitations.mockResolvedValue([...received]);
      await check();
      expect(mocked.listFolders.mock.calls.length).toBe(reads + 1);
      expect(model.waiting).toBe(2);
      // one revoked meanwhile: read again too
      received.splice(0, 1);
      mocked.listWaitingInvitations.mockResolvedValue([...received]);
      await check();
      expect(model.waiting).toBe(1);
    } finally {
      model.dispose();
    }
  });
});
