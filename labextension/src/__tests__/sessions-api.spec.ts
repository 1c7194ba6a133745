import { HubgridError, STOPPED_WHILE_STARTING, stoppedWhileStarting } from '../sessions/api';

describe('a start answered by the hub door', () => {
  it('ended by a stop asked meanwhile is told apart from a failed start', () => {
    expect(stoppedWhileStarting(new HubgridError('train was stopped while it was starting', 409, STOPPED_WHILE_STARTING))).toBe(true);
  });

  it('refused or failed otherwise is a failure', () => {
    expect(stoppedWhileStarting(new HubgridError('Internal Server Error', 500))).toBe(false);
    expect(stoppedWhileStarting(new HubgridError('still starting', 409, 'Still starting'))).toBe(false);
    expect(stoppedWhileStarting(new HubgridError('x', 500, STOPPED_WHILE_STARTING))).toBe(false);
    expect(stoppedWhileStarting(new Error('Stopped while starting'))).toBe(false);
  });
});
