import { NO_AUDIT_FILTERS, auditCsvPath, auditPath, pageLabel, previousOffset, utcText, utcTime } from '../admin/audit/query';
import { AdminError, errorFromBody, fieldErrors } from '../admin/errors';

describe('access log filters', () => {
  const f = { user: 'ada', action: 'user.create', outcome: 'denied', since: '2026-11-01T00:00', until: '' };

  it('pages with limit and offset', () => {
    expect(auditPath(NO_AUDIT_FILTERS, 0)).toBe('audit?limit=50&offset=0');
    expect(auditPath(f, 50)).toBe(
      'audit?user=ada&action=user.create&outcome=denied&since=2026-11-01T00%3A00%3A00Z&limit=50&offset=50'
    );
  });

  it('exports the CSV with the same filters and no paging', () => {
    expect(auditCsvPath(f)).toBe('audit?format=csv&user=ada&action=user.create&outcome=denied&since=2026-11-01T00%3A00%3A00Z');
  });

  it('reads times as UTC', () => {
    expect(utcTime('2026-11-01T10:30')).toBe('2026-11-01T10:30:00Z');
    expect(utcTime('2026-11-01T10:30:05')).toBe('2026-11-01T10:30:05Z');
    expect(utcTime('2026-11-01T10:30:05+02:00')).toBe('2026-11-01T10:30:05+02:00');
  });

  it('labels pages', () => {
    expect(pageLabel(50, 20)).toBe('entries 51–70');
    expect(pageLabel(0, 0)).toBe('no entries');
    expect(previousOffset(20)).toBe(0);
  });
});

describe('service errors', () => {
  it('puts each 422 problem next to its field', () => {
    const e = errorFromBody(422, 'Unprocessable', JSON.stringify({
      status: 422, reason: 'invalid', message: 'a; b',
      detail: ['max_keeps: Input should be a valid integer', 'total_resource_slots.cpu: bad amount']
    }));
    expect(e.status).toBe(422);
    expect(fieldErrors(e)).toEqual({
      max_keeps: 'max_keeps: Input should be a valid integer',
      total_resource_slots: 'total_resource_slots.cpu: bad amount'
    });
  });

  it('keeps a 403 message whole and gives no field errors', () => {
    const e = errorFromBody(403, 'Forbidden', '{"message": "not your domain"}');
    expect(e.message).toBe('not your domain');
    expect(fieldErrors(e)).toEqual({});
    expect(fieldErrors(new AdminError(422, 'name: too long'))).toEqual({ name: 'name: too long' });
  });
});

describe('the time of an entry', () => {
  it('reads in UTC, as the filters, to the second', () => {
    expect(utcText('2026-11-24T13:24:03.045886+00:00')).toBe('2026-11-24 13:24:03 UTC');
    expect(utcText('2026-11-24T14:24:03+01:00')).toBe('2026-11-24 13:24:03 UTC');
    expect(utcText('not a time')).toBe('not a time');
  });
});
