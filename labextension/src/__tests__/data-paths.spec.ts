import {
  baseName,
  breadcrumbs,
  encodePath,
  joinPath,
  nameProblem,
  parentPath
} from '../data/paths';

describe('paths inside a folder', () => {
  it('joins and splits', () => {
    expect(joinPath('', 'a.txt')).toBe('a.txt');
    expect(joinPath('d/e', 'a.txt')).toBe('d/e/a.txt');
    expect(joinPath('d/', 'a.txt')).toBe('d/a.txt');
    expect(parentPath('d/e/a.txt')).toBe('d/e');
    expect(parentPath('a.txt')).toBe('');
    expect(baseName('d/e/')).toBe('e');
  });

  it('builds breadcrumbs from the folder root', () => {
    expect(breadcrumbs('data', 'x/y')).toEqual([
      { name: 'data', path: '' },
      { name: 'x', path: 'x' },
      { name: 'y', path: 'x/y' }
    ]);
    expect(breadcrumbs('data', '')).toEqual([{ name: 'data', path: '' }]);
  });

  it('encodes a whole path for the query, so URL joining never reads .. in it', () => {
    expect(encodePath('a b/c+d.txt')).toBe('a%20b%2Fc%2Bd.txt');
    expect(encodePath('x/../y')).not.toContain('/');
  });

  it('catches names the service refuses', () => {
    expect(nameProblem('results.csv')).toBeNull();
    expect(nameProblem('.data')).toBeNull();
    expect(nameProblem('<script>')).toBeNull(); // allowed; shown as text
    expect(nameProblem('')).toMatch(/empty/);
    expect(nameProblem(' x')).toMatch(/space/);
    expect(nameProblem('..')).toMatch(/cannot be a name/);
    expect(nameProblem('a/b')).toMatch(/\//);
    expect(nameProblem('a\\b')).toMatch(/\\/);
    expect(nameProblem('gnp\u202e.txt')).toBe('a name cannot contain U+202E');
    expect(nameProblem('a\nb')).toBe('a name cannot contain U+000A');
  });
});
