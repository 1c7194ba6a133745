import {
  addDays,
  asOfText,
  dayMs,
  daysBetween,
  describePeriod,
  lastDays,
  reportDay,
  resolvePeriod
} from '../statistics/period';

describe('periods in UTC days', () => {
  it('the last 7 days are today (UTC) and the 6 before, up to the end of today', () => {
    const now = new Date('2026-11-24T10:00:00Z');
    expect(lastDays(7, now)).toEqual({ start: '2026-11-18', end: '2026-11-25' });
    expect(lastDays(30, now)).toEqual({ start: '2026-10-26', end: '2026-11-25' });
  });

  it('counts the UTC day, not the local one, near midnight', () => {
    // 23:30 at UTC-5 on the 24th is already the 25th in UTC
    const now = new Date('2026-11-24T23:30:00-05:00');
    expect(lastDays(1, now)).toEqual({ start: '2026-11-25', end: '2026-11-26' });
  });

  it('crosses months, leap days and years', () => {
    expect(addDays('2028-02-28', 1)).toBe('2028-02-29');
    expect(addDays('2026-12-31', 1)).toBe('2027-01-01');
    expect(addDays('2026-03-01', -1)).toBe('2026-02-28');
    expect(daysBetween('2026-01-01', '2027-01-01')).toBe(365);
  });

  it('knows a real day from a look-alike', () => {
    expect(dayMs('2026-02-30')).toBeNull();
    expect(dayMs('2026-2-3')).toBeNull();
    expect(dayMs('')).toBeNull();
    expect(dayMs('2026-02-28')).toBe(Date.UTC(2026, 1, 28));
  });

  it('a from-to range includes its last day', () => {
    const now = new Date('2026-11-24T10:00:00Z');
    expect(resolvePeriod({ kind: 'range', from: '2026-11-01', to: '2026-11-30' }, now)).toEqual({
      period: { start: '2026-11-01', end: '2026-12-01' }
    });
    expect(resolvePeriod({ kind: 'range', from: '2026-11-05', to: '2026-11-05' }, now)).toEqual({
      period: { start: '2026-11-05', end: '2026-11-06' }
    });
  });

  it('refuses a backwards, an unreadable or a too long range with the reason', () => {
    const now = new Date('2026-11-24T10:00:00Z');
    const back = resolvePeriod({ kind: 'range', from: '2026-11-05', to: '2026-11-04' }, now);
    expect(back).toEqual({ error: 'From (2026-11-05) is after To (2026-11-04)' });
    const bad = resolvePeriod({ kind: 'range', from: '', to: '2026-11-04' }, now);
    expect('error' in bad && bad.error).toMatch(/^From: not a date/);
    const long = resolvePeriod({ kind: 'range', from: '2024-01-01', to: '2026-01-01' }, now);
    expect('error' in long && long.error).toMatch(/at most 731 days/);
    expect(resolvePeriod({ kind: 'range', from: '2024-01-01', to: '2025-12-31' }, now)).toEqual({
      period: { start: '2024-01-01', end: '2026-01-01' }
    });
    expect('error' in resolvePeriod({ kind: 'last', days: 0 }, now)).toBe(true);
  });

  it('describes a period by its included days', () => {
    expect(describePeriod({ start: '2026-11-18', end: '2026-11-25' })).toBe(
      '2026-11-18 to 2026-11-24 (7 UTC days)'
    );
    expect(describePeriod({ start: '2026-11-18', end: '2026-11-19' })).toBe('2026-11-18 (1 UTC day)');
  });

  it('reads the report times as UTC', () => {
    expect(reportDay('2026-11-23T00:00:00+00:00')).toBe('2026-11-23');
    expect(reportDay('2026-11-23T01:00:00+01:00')).toBe('2026-11-23');
    expect(reportDay('2026-11-23T08:00:00+00:00')).toBeNull();
    expect(asOfText('2026-11-24T10:00:05.123456+00:00')).toBe('2026-11-24 10:00 UTC');
    expect(asOfText('soon')).toBe('soon');
  });
});
