/**
 * The Statistics page's table: the groups' exact figures as the service
 * sent them (text), the service's total in the footer, sortable columns.
 */

import * as React from 'react';

import { ITable, sortRows } from './table';

export function UsageTable(props: {
  table: ITable;
  sort: { column: number; descending: boolean } | null;
  onSort: (column: number) => void;
}): JSX.Element {
  const { table, sort, onSort } = props;
  const rows = sort ? sortRows(table, sort.column, sort.descending) : table.rows;
  return (
    <table className="jp-hubgrid-stats-table">
      <thead>
        <tr>
          {table.columns.map((c, i) => (
            <th
              key={c.key}
              data-column={c.key}
              className={c.numeric ? 'jp-mod-numeric' : ''}
              title={c.unit}
              aria-sort={sort?.column === i ? (sort.descending ? 'descending' : 'ascending') : undefined}
            >
              <button className="jp-hubgrid-stats-sort" onClick={() => onSort(i)}>
                {c.title}
                {sort?.column === i ? (sort.descending ? ' ▾' : ' ▴') : ''}
              </button>
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.length === 0 && (
          <tr>
            <td colSpan={table.columns.length} className="jp-hubgrid-note">
              No sessions in this period.
            </td>
          </tr>
        )}
        {rows.map(row => (
          <tr key={row.key} data-group={row.key}>
            {row.cells.map((cell, i) => (
              <td key={table.columns[i].key} data-column={table.columns[i].key}
                className={table.columns[i].numeric ? 'jp-mod-numeric' : 'jp-hubgrid-name'}>
                {cell}
              </td>
            ))}
          </tr>
        ))}
      </tbody>
      <tfoot>
        <tr data-group="total">
          {table.total.cells.map((cell, i) => (
            <td key={table.columns[i].key} data-column={table.columns[i].key}
              className={table.columns[i].numeric ? 'jp-mod-numeric' : ''}>
              {cell}
            </td>
          ))}
        </tr>
      </tfoot>
    </table>
  );
}
