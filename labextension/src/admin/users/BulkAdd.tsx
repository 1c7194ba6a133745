/**
 * Bulk add on the Users page: a CSV file (header name,domain,role,projects,
 * resource_policy,active; projects separated by ;) sent as text/csv to
 * POST users/bulk, then the per-row result table.
 */

import * as React from 'react';

import { ErrorBar, IAdminPageProps } from '../frame';
import { adminCall } from '../http';
import { bulkLines, IBulkAnswer } from './model';

export function BulkAdd(props: IAdminPageProps & { onDone: () => void }): JSX.Element {
  const [answer, setAnswer] = React.useState<IBulkAnswer | null>(null);
  const [error, setError] = React.useState<unknown>(null);
  const [busy, setBusy] = React.useState(false);
  const send = async (file: File) => {
    setBusy(true);
    try {
      const text = await file.text();
      setAnswer(await adminCall<IBulkAnswer>(props.settings, 'users/bulk', 'POST', text, 'text/csv'));
      setError(null);
      props.onDone();
    } catch (e) {
      setError(e);
      setAnswer(null);
    } finally {
      setBusy(false);
    }
  };
  const shown = answer ? bulkLines(answer) : null;
  return (
    <div className="jp-hubgrid-admin-bulk">
      <h3>Add users from a CSV file</h3>
      <p className="jp-hubgrid-admin-hint">
        Header row: name,domain,role,projects,resource_policy,active (projects separated by ;).
      </p>
      <input
        type="file"
        name="bulk-csv"
        accept=".csv,text/csv"
        disabled={busy}
        onChange={e => {
          const file = e.target.files?.[0];
          if (file) {
            void send(file);
          }
          e.target.value = '';
        }}
      />
      {error ? <ErrorBar error={error} /> : null}
      {shown && (
        <>
          <p className="jp-hubgrid-admin-count" data-summary="bulk">{shown.summary}</p>
          <table className="jp-hubgrid-admin-table" data-table="bulk">
            <thead>
              <tr>
                <th>Row</th>
                <th>Name</th>
                <th>Result</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {shown.lines.map(l => (
                <tr key={l.row} data-row={l.row} data-result={l.result}>
                  <td>{l.row}</td>
                  <td>{l.name}</td>
                  <td>{l.result}</td>
                  <td>{l.text}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </div>
  );
}
