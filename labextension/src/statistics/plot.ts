/**
 * The daily plots of the Statistics page: one per slot figure, a stacked
 * bar per group and UTC day. Figures stay exact strings until the very
 * last step: the "others" bar is the day's total minus the shown groups,
 * subtracted exactly; Number() only turns the results into bar heights.
 */

import { compareAmounts, subtractAmounts, sumAmounts } from '../amounts';
import { KEY_FIELDS } from './query';
import { Figure, IUsageDay, IUsageFigures, IUsageGroup, IUsageReport } from './types';

export interface IPlotSpec {
  figure: Figure;
  title: string;
  unit: string;
}

/** The plots, one per slot figure, and the sessions. */
export const PLOTS: ReadonlyArray<IPlotSpec> = [
  { figure: 'gpu_device_hours', title: 'GPU device-hours', unit: 'device-hours (whole GPUs and shares)' },
  { figure: 'core_hours', title: 'Core-hours', unit: 'CPU cores x hours' },
  { figure: 'mem_gib_hours', title: 'Memory GiB-hours', unit: 'GiB x hours' },
  { figure: 'sessions', title: 'Sessions', unit: 'sessions that ran in the day' }
];

/** Groups drawn on their own; the rest are one "others" bar. */
export const MAX_PLOT_GROUPS = 8;

export interface IDataset {
  label: string;
  /** exact values per day (decimal strings), for tooltips and tests */
  values: string[];
  /** bar heights for drawing only */
  data: number[];
}

export interface IPlotData {
  /** the UTC days, `YYYY-MM-DD` */
  labels: string[];
  datasets: IDataset[];
  /** whether anything at all was used */
  empty: boolean;
}

/** A figure as an exact decimal string (session counts are integers). */
export function figureText(f: IUsageFigures, figure: Figure): string {
  const v = f[figure];
  return typeof v === 'number' ? String(v) : v;
}

/**
 * A group's name for a legend or a row: its key field, with its domain
 * when the report spans several domains ("acme / alice").
 */
export function groupLabel(group: IUsageGroup, report: IUsageReport): string {
  const fields = KEY_FIELDS[report.by];
  const domains = new Set(report.groups.map(g => g.domain));
  const shown = fields.filter(f => f !== 'domain' || fields.length === 1 || domains.size > 1);
  return shown.map(f => group[f] ?? '').join(' / ');
}

function byDay(series: IUsageDay[] | undefined): Map<string, IUsageDay> {
  return new Map((series ?? []).map(d => [d.day, d]));
}

/** The groups with the most of `figure` in the period, at most `max`, in the report's order. */
export function topGroups(report: IUsageReport, figure: Figure, max = MAX_PLOT_GROUPS): IUsageGroup[] {
  const ranked = report.groups
    .map((g, i) => ({ g, i }))
    .filter(({ g }) => compareAmounts(figureText(g, figure), '0') > 0)
    .sort((a, b) => compareAmounts(figureText(b.g, figure), figureText(a.g, figure)) || a.i - b.i)
    .slice(0, max);
  return ranked.sort((a, b) => a.i - b.i).map(({ g }) => g);
}

/** The bars of one figure: per day (every day of the period), per top group, and the others. */
export function plotData(report: IUsageReport, figure: Figure, max = MAX_PLOT_GROUPS): IPlotData {
  const total = report.series ?? [];
  const labels = total.map(d => d.day);
  const top = topGroups(report, figure, max);
  const datasets: IDataset[] = top.map(g => {
    const days = byDay(g.series);
    const values = labels.map(day => {
      const d = days.get(day);
      return d ? figureText(d, figure) : '0';
    });
    return { label: groupLabel(g, report), values, data: values.map(Number) };
  });
  if (top.length < report.groups.length) {
    const values = total.map((d, i) =>
      subtractAmounts(figureText(d, figure), sumAmounts(['0', ...datasets.map(s => s.values[i])]))
    );
    if (values.some(v => compareAmounts(v, '0') !== 0)) {
      const rest = report.groups.length - top.length;
      datasets.push({ label: `${rest} other${rest === 1 ? '' : 's'}`, values, data: values.map(Number) });
    }
  }
  const empty = total.every(d => compareAmounts(figureText(d, figure), '0') === 0);
  return { labels, datasets, empty };
}

/** An axis label for a day: "11-23" when all the days are of one year, else the day. */
export function dayTick(day: string, days: readonly string[]): string {
  const year = days[0]?.slice(0, 4);
  return days.every(d => d.slice(0, 4) === year) ? day.slice(5) : day;
}
