import { dayTick, groupLabel, plotData, PLOTS, topGroups } from '../statistics/plot';
import { IUsageGroup } from '../statistics/types';
import { day, docsReport, figures } from './stats-fixtures';

describe('daily plots', () => {
  it('one bar per group and day, every day of the period, zeros where a group had none', () => {
    const plot = plotData(docsReport(), 'core_hours');
    expect(plot.labels).toEqual(['2026-11-23', '2026-11-24']);
    expect(plot.datasets.map(d => [d.label, d.values])).toEqual([
      ['alice', ['22.000000', '20.000000']],
      ['bob', ['0', '1.000000']]
    ]);
    expect(plot.datasets[0].data).toEqual([22, 20]);
    expect(plot.empty).toBe(false);
  });

  it('plots every slot figure and the sessions', () => {
    expect(PLOTS.map(p => p.figure)).toEqual(['gpu_device_hours', 'core_hours', 'mem_gib_hours', 'sessions']);
    const sessions = plotData(docsReport(), 'sessions');
    expect(sessions.datasets.map(d => d.values)).toEqual([['2', '1'], ['0', '1']]);
  });

  it('leaves out groups that used none of a figure, and says when nothing was used', () => {
    const gpu = plotData(docsReport(), 'gpu_device_hours');
    expect(gpu.datasets.map(d => d.label)).toEqual(['alice']);
    const report = docsReport();
    report.groups = [];
    report.series = [day('2026-11-23'), day('2026-11-24')];
    expect(plotData(report, 'gpu_device_hours')).toEqual({
      labels: ['2026-11-23', '2026-11-24'], datasets: [], empty: true
    });
  });

  it('beyond the largest groups, the others are the total minus those shown, exactly', () => {
    const report = docsReport();
    const many: IUsageGroup[] = ['u1', 'u2', 'u3'].map((u, i) => ({
      domain: 'acme', user: u, ...figures({ gpu_device_hours: ['0.1', '0.2', '0.3'][i] }),
      series: [day('2026-11-23', { gpu_device_hours: ['0.1', '0.2', '0.3'][i] })]
    }));
    report.groups = many;
    report.series = [day('2026-11-23', { gpu_device_hours: '0.6' })];
    expect(topGroups(report, 'gpu_device_hours', 1).map(g => g.user)).toEqual(['u3']);
    const plot = plotData(report, 'gpu_device_hours', 1);
    expect(plot.datasets.map(d => [d.label, d.values])).toEqual([
      ['u3', ['0.3']],
      ['2 others', ['0.3']]
    ]);
    // 0.6 - 0.3 as floats is 0.3 here, but 0.1 + 0.2 is not 0.3: the others are exact
    const two = plotData(report, 'gpu_device_hours', 2);
    expect(two.datasets.map(d => d.values[0])).toEqual(['0.2', '0.3', '0.1']);
  });

  it('ranks ties in the report order, and keeps the report order in the legend', () => {
    const report = docsReport();
    report.groups = ['c', 'a', 'b'].map(u => ({ domain: 'acme', user: u, ...figures({ core_hours: u === 'b' ? '2' : '1' }) }));
    expect(topGroups(report, 'core_hours', 2).map(g => g.user)).toEqual(['c', 'b']);
  });

  it('labels groups by their key, with the domain only when domains differ', () => {
    const report = docsReport();
    expect(groupLabel(report.groups[0], report)).toBe('alice');
    report.groups[1].domain = 'other';
    expect(groupLabel(report.groups[0], report)).toBe('acme / alice');
    report.by = 'domain';
    expect(groupLabel({ domain: 'acme', ...figures() }, report)).toBe('acme');
    report.by = 'resource_group';
    expect(groupLabel({ resource_group: 'gpu', ...figures() }, report)).toBe('gpu');
  });
});

describe('axis labels', () => {
  it('drop the year when every day is of one year', () => {
    expect(dayTick('2026-11-23', ['2026-11-23', '2026-11-24'])).toBe('11-23');
    expect(dayTick('2026-12-31', ['2026-12-31', '2027-01-01'])).toBe('2026-12-31');
  });
});
