import { fileNameFrom } from '../download';
import {
  csvFallbackName,
  groupingsFor,
  ICaller,
  isAdmin,
  IUsageQuery,
  scopesFor,
  usagePath
} from '../statistics/query';

const alice: ICaller = { name: 'alice', domain: 'acme', role: 'user' };
const carol: ICaller = { name: 'carol', domain: 'acme', role: 'domain-admin' };
const root: ICaller = { name: 'root', domain: 'default', role: 'superadmin' };
const week: IUsageQuery = { period: { start: '2026-11-18', end: '2026-11-25' }, scope: 'mine', by: 'user' };

function params(path: string): { [k: string]: string } {
  const [route, query] = path.split('?');
  expect(route).toBe('usage');
  const out: { [k: string]: string } = {};
  new URLSearchParams(query).forEach((v, k) => (out[k] = v));
  return out;
}

describe('who sees what', () => {
  it('a user only has their own usage, grouped without domains', () => {
    expect(isAdmin('user')).toBe(false);
    expect(scopesFor(alice).map(s => s.scope)).toEqual(['mine']);
    expect(groupingsFor(alice)).toEqual(['user', 'project', 'resource_group']);
  });

  it("a domain admin also has their domain's, a superadmin everyone's", () => {
    expect(scopesFor(carol)).toEqual([
      { scope: 'mine', label: 'My usage' },
      { scope: 'domain', label: 'Domain acme' }
    ]);
    expect(scopesFor(root).map(s => s.scope)).toEqual(['mine', 'domain', 'all']);
    expect(groupingsFor(carol)).toContain('domain');
  });
});

describe('the GET usage request', () => {
  it('"my usage" names me as the user, with a daily series', () => {
    expect(params(usagePath(alice, week))).toEqual({
      start: '2026-11-18', end: '2026-11-25', by: 'user', series: 'daily', user: 'alice'
    });
  });

  it("a domain admin's domain view filters by the domain, grouped as asked", () => {
    expect(params(usagePath(carol, { ...week, scope: 'domain', by: 'project' }))).toEqual({
      start: '2026-11-18', end: '2026-11-25', by: 'project', series: 'daily', domain: 'acme'
    });
  });

  it("a superadmin's everyone has no filter", () => {
    const p = params(usagePath(root, { ...week, scope: 'all', by: 'domain' }));
    expect(p.user).toBeUndefined();
    expect(p.domain).toBeUndefined();
  });

  it('a user asking for more than theirs still asks for their own', () => {
    expect(params(usagePath(alice, { ...week, scope: 'all' })).user).toBe('alice');
    expect(params(usagePath(alice, { ...week, scope: 'domain' })).domain).toBeUndefined();
  });

  it('the CSV is the same request with format=csv', () => {
    const p = params(usagePath(alice, week, 'csv'));
    expect(p).toEqual({ ...params(usagePath(alice, week)), format: 'csv' });
  });

  it('names are encoded, never spliced raw', () => {
    const odd: ICaller = { name: 'a&by=domain', domain: 'x y', role: 'superadmin' };
    const p = params(usagePath(odd, { ...week, scope: 'mine' }));
    expect(p.user).toBe('a&by=domain');
    expect(p.by).toBe('user');
  });
});

describe('the CSV file name', () => {
  it("is the service's (filename* first, then filename)", () => {
    const fallback = csvFallbackName(week);
    expect(fallback).toBe('usage-user-2026-11-18-2026-11-25.csv');
    expect(fileNameFrom(
      `attachment; filename="usage-user-2026-11-18-2026-11-25.csv"; filename*=UTF-8''usage-user-2026-11-18-2026-11-25.csv`,
      'x.csv'
    )).toBe('usage-user-2026-11-18-2026-11-25.csv');
    expect(fileNameFrom(`attachment; filename*=UTF-8''caf%C3%A9.csv`, 'x.csv')).toBe('café.csv');
    expect(fileNameFrom('attachment; filename="plain.csv"', 'x.csv')).toBe('plain.csv');
    expect(fileNameFrom(null, fallback)).toBe(fallback);
  });

  it('never carries a path or control characters', () => {
    expect(fileNameFrom('attachment; filename="../../etc/passwd"', 'x.csv')).toBe('passwd');
    expect(fileNameFrom(`attachment; filename*=UTF-8''..%2F..%2Fa%0Ab.csv`, 'x.csv')).toBe('ab.csv');
    expect(fileNameFrom('attachment; filename=".."', 'x.csv')).toBe('x.csv');
    expect(fileNameFrom(`attachment; filename*=UTF-8''%E0%A4%A`, 'x.csv')).toBe('x.csv');
  });
});
