import { sortRows, tableModel } from '../statistics/table';
import { docsReport, figures } from './stats-fixtures';

describe('the table of groups', () => {
  it("lists each group's exact figures as the service sent them, and the service's total", () => {
    const t = tableModel(docsReport());
    expect(t.columns.map(c => c.key)).toEqual([
      'domain', 'user', 'sessions', 'running', 'gpu_device_hours', 'gpu_hours',
      'gpu_share_hours', 'core_hours', 'mem_gib_hours', 'session_hours'
    ]);
    expect(t.rows[0].cells).toEqual([
      'acme', 'alice', '2', '1', '10.500000', '4.500000', '6.000000', '42.000000', '168.000000', '16.500000'
    ]);
    expect(t.total.cells).toEqual([
      'Total', '', '3', '1', '10.500000', '4.500000', '6.000000', '43.000000', '170.000000', '18.500000'
    ]);
    expect(t.columns.find(c => c.key === 'core_hours')?.unit).toBe('CPU cores x hours');
  });

  it('never re-adds: a total the service sends is the total shown', () => {
    const report = docsReport();
    report.groups = ['0.1', '0.2'].map((h, i) => ({ domain: 'acme', user: `u${i}`, ...figures({ core_hours: h }) }));
    report.total = figures({ core_hours: '0.3' });
    const t = tableModel(report);
    const col = t.columns.findIndex(c => c.key === 'core_hours');
    expect(t.total.cells[col]).toBe('0.3');
  });

  it('has the key columns of the grouping', () => {
    const report = docsReport();
    report.by = 'resource_group';
    report.groups = [{ resource_group: 'gpu', ...figures() }];
    const t = tableModel(report);
    expect(t.columns[0]).toEqual({ key: 'resource_group', title: 'Resource group', numeric: false });
    expect(t.rows[0].cells[0]).toBe('gpu');
    expect(t.total.cells[0]).toBe('Total');
  });

  it('sorts figures exactly and names as text, ties in their order', () => {
    const report = docsReport();
    report.groups = [
      { domain: 'acme', user: 'b', ...figures({ core_hours: '10.000000' }) },
      { domain: 'acme', user: 'a', ...figures({ core_hours: '9.000000' }) },
      { domain: 'acme', user: 'c', ...figures({ core_hours: '10.000000' }) },
      { domain: 'acme', user: 'd', ...figures({ core_hours: '10.000001' }) }
    ];
    const t = tableModel(report);
    const col = t.columns.findIndex(c => c.key === 'core_hours');
    expect(sortRows(t, col, true).map(r => r.cells[1])).toEqual(['d', 'b', 'c', 'a']);
    expect(sortRows(t, col, false).map(r => r.cells[1])).toEqual(['a', 'b', 'c', 'd']);
    expect(sortRows(t, 1, false).map(r => r.cells[1])).toEqual(['a', 'b', 'c', 'd']);
  });
});
