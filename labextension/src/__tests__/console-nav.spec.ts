import { pageOfHash } from '../consolenav';

describe('the console address names a page', () => {
  it('reads the page from the hash, decoded', () => {
    expect(pageOfHash('#admin-users')).toBe('admin-users');
    expect(pageOfHash('admin-queue')).toBe('admin-queue');
    expect(pageOfHash('#folder-a%20b')).toBe('folder-a b');
  });

  it('names no page for an empty or broken hash', () => {
    expect(pageOfHash('')).toBe('');
    expect(pageOfHash('#')).toBe('');
    expect(pageOfHash('#%E0%A4%A')).toBe('');
  });
});
