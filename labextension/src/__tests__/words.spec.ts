import { counted, stateLabel } from '../words';

describe('counted', () => {
  it('says one thing in the singular and any other count in the plural', () => {
    expect(counted(1, 'user')).toBe('1 user');
    expect(counted(0, 'user')).toBe('0 users');
    expect(counted(3, 'user')).toBe('3 users');
  });
});

describe('state labels', () => {
  it('names a state as every page does, and an unknown one as it is', () => {
    expect(stateLabel('pending')).toBe('waiting');
    expect(stateLabel('odd')).toBe('odd');
  });
});
