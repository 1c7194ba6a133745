/**
 * The Access log page: filters (user, action, outcome, since/until in UTC),
 * one page of entries at a time (limit/offset), and the CSV export of every
 * matching entry (GET audit?format=csv with the same filters).
 */

import * as React from 'react';

import { AdminFrame, ErrorBar, IAdminPageProps, useAdminLoad } from '../frame';
import { saveBlob } from '../../download';
import { adminCall, adminDownload } from '../http';
import { auditCsvPath, auditPath, IAuditFilters, NO_AUDIT_FILTERS, OUTCOMES, pageLabel, PAGE_SIZE, previousOffset, utcText } from './query';

interface IEntry {
  id: number;
  timestamp: string;
  actor: string;
  domain: string | null;
  source: string | null;
  action: string;
  target: string | null;
  outcome: string;
  status: number | null;
  detail: string | null;
}

interface IAuditPage {
  entries: IEntry[];
  offset: number;
  limit: number;
  next_offset: number | null;
}

export function AuditPage(props: IAdminPageProps): JSX.Element {
  const [draft, setDraft] = React.useState<IAuditFilters>(NO_AUDIT_FILTERS);
  const [filters, setFilters] = React.useState<IAuditFilters>(NO_AUDIT_FILTERS);
  const [offset, setOffset] = React.useState(0);
  const [exportError, setExportError] = React.useState<unknown>(null);
  const page = useAdminLoad(() => adminCall<IAuditPage>(props.settings, auditPath(filters, offset)), [filters, offset]);
  const set = (k: keyof IAuditFilters) => (e: React.ChangeEvent<HTMLInputElement | HTMLSelectElement>) =>
    setDraft({ ...draft, [k]: e.target.value });
  const entries = page.data?.entries || [];
  const download = async () => {
    try {
      const { blob, name } = await adminDownload(props.settings, auditCsvPath(filters), 'audit.csv');
      saveBlob(blob, name);
      setExportError(null);
    } catch (e) {
      setExportError(e);
    }
  };
  return (
    <AdminFrame
      page="audit"
      title="Access log"
      onRefresh={() => void page.reload()}
      busy={page.busy}
      error={page.error}
      toolbar={
        <button className="jp-mod-styled" onClick={() => void download()}>
          Export CSV
        </button>
      }
    >
      {exportError ? <ErrorBar error={exportError} /> : null}
      <form
        className="jp-hubgrid-admin-filters"
        onSubmit={e => {
          e.preventDefault();
          setOffset(0);
          setFilters(draft);
        }}
      >
        <input
          className="jp-mod-styled"
          name="user"
          placeholder="user (or the start of a name)"
          title="Entries of every user whose name starts with this"
          value={draft.user}
          onChange={set('user')}
        />
        <input className="jp-mod-styled" name="action" placeholder="action, e.g. session.end" value={draft.action} onChange={set('action')} />
        <select className="jp-mod-styled" name="outcome" value={draft.outcome} onChange={set('outcome')}>
          <option value="">any result</option>
          {OUTCOMES.map(o => (
            <option key={o} value={o}>{o}</option>
          ))}
        </select>
        <label>
          since (UTC) <input className="jp-mod-styled" type="datetime-local" name="since" value={draft.since} onChange={set('since')} />
        </label>
        <label>
          until (UTC) <input className="jp-mod-styled" type="datetime-local" name="until" value={draft.until} onChange={set('until')} />
        </label>
        <button type="submit" className="jp-mod-styled jp-mod-accept">Filter</button>
      </form>
      <p className="jp-hubgrid-admin-hint" data-hint="audit-names">
        Sessions are <code>session.start</code> (started at once), <code>session.queue</code> (waits in the queue),{' '}
        <code>session.admit</code> (admitted from the queue), <code>session.stop</code> (someone asked the hub to stop it),{' '}
        <code>session.reclaim</code> and <code>session.end</code> (its detail says how it ended: stopped by whom, cancelled while
        waiting, reclaimed by which rule, died); the target is the session&apos;s id. Entries written before these names read{' '}
        <code>allocation.create</code>, <code>allocation.delete</code>, <code>allocation.cancel</code> and{' '}
        <code>allocation.reclaim</code> (and a hub server&apos;s sessions were not logged). Nodes: <code>node.drain</code>,{' '}
        <code>node.undrain</code> (before: <code>node.update</code>); grants: <code>resource-group.grant</code>,{' '}
        <code>resource-group.revoke</code> (before: <code>resource-group-grant.put</code>/<code>.delete</code>).
      </p>
      <table className="jp-hubgrid-admin-table" data-table="audit">
        <thead>
          <tr>
            <th>Time (UTC)</th>
            <th>User</th>
            <th>Domain</th>
            <th>Action</th>
            <th>Target</th>
            <th>Result</th>
            <th>Source</th>
            <th>Detail</th>
          </tr>
        </thead>
        <tbody>
          {entries.map(e => (
            <tr key={e.id} data-entry={e.id} data-outcome={e.outcome}>
              <td title={e.timestamp}>{utcText(e.timestamp)}</td>
              <td>{e.actor}</td>
              <td>{e.domain || ''}</td>
              <td>{e.action}</td>
              <td>{e.target || ''}</td>
              <td>{`${e.outcome}${e.status ? ` (${e.status})` : ''}`}</td>
              <td>{e.source || ''}</td>
              <td>{e.detail || ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <div className="jp-hubgrid-admin-pager">
        <button className="jp-mod-styled" disabled={offset === 0} onClick={() => setOffset(previousOffset(offset))}>
          Newer
        </button>
        <span data-page-label="">{pageLabel(offset, entries.length)}</span>
        <button
          className="jp-mod-styled"
          disabled={page.data?.next_offset == null}
          onClick={() => setOffset(page.data?.next_offset ?? offset + PAGE_SIZE)}
        >
          Older
        </button>
      </div>
    </AdminFrame>
  );
}
