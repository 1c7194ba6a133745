/**
 * The table of the Statistics page: one row per group with its exact
 * figures (the service's strings, as they come), and the report's total
 * (the service's own, never re-added here). Sorting compares exactly.
 */

import { compareAmounts } from '../amounts';
import { KEY_FIELDS, GROUPING_LABELS } from './query';
import { Figure, IUsageFigures, IUsageReport } from './types';
import { figureText } from './plot';

export interface IColumn {
  /** a key field (`user`, `domain`, ...) or a figure */
  key: string;
  title: string;
  numeric: boolean;
  /** what the figure counts, for a tooltip */
  unit?: string;
}

export interface IRow {
  /** a stable React key (the group's key fields) */
  key: string;
  cells: string[];
}

export interface ITable {
  columns: IColumn[];
  rows: IRow[];
  total: IRow;
}

/** The figures listed, in order. */
export const TABLE_FIGURES: ReadonlyArray<{ figure: Figure; title: string }> = [
  { figure: 'sessions', title: 'Sessions' },
  { figure: 'running', title: 'Running' },
  { figure: 'gpu_device_hours', title: 'GPU device-hours' },
  { figure: 'gpu_hours', title: 'Whole-GPU hours' },
  { figure: 'gpu_share_hours', title: 'GPU share-hours' },
  { figure: 'core_hours', title: 'Core-hours' },
  { figure: 'mem_gib_hours', title: 'GiB-hours' },
  { figure: 'session_hours', title: 'Session hours' }
];

function figureCells(f: IUsageFigures): string[] {
  return TABLE_FIGURES.map(c => figureText(f, c.figure));
}

/** The report as a table: key columns, figure columns, group rows, the total. */
export function tableModel(report: IUsageReport): ITable {
  const keys = KEY_FIELDS[report.by];
  const columns: IColumn[] = [
    ...keys.map(k => ({ key: k, title: GROUPING_LABELS[k], numeric: false })),
    ...TABLE_FIGURES.map(c => ({
      key: c.figure,
      title: c.title,
      numeric: true,
      unit: report.units?.[c.figure]
    }))
  ];
  const rows = report.groups.map(g => {
    const keyCells = keys.map(k => g[k] ?? '');
    return { key: JSON.stringify(keyCells), cells: [...keyCells, ...figureCells(g)] };
  });
  const totalKeys = keys.map((_, i) => (i === 0 ? 'Total' : ''));
  return { columns, rows, total: { key: 'total', cells: [...totalKeys, ...figureCells(report.total)] } };
}

/** Rows sorted by a column (figures exactly, names as text); ties keep their order. */
export function sortRows(table: ITable, column: number, descending: boolean): IRow[] {
  const numeric = table.columns[column]?.numeric ?? false;
  const sign = descending ? -1 : 1;
  return table.rows
    .map((row, i) => ({ row, i }))
    .sort((a, b) => {
      const x = a.row.cells[column];
      const y = b.row.cells[column];
      const c = numeric ? compareAmounts(x, y) : x < y ? -1 : x > y ? 1 : 0;
      return sign * c || a.i - b.i;
    })
    .map(({ row }) => row);
}
