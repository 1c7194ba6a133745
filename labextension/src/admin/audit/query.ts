/** The Access log page's pure parts: filters → query string, paging. */

import { withQuery } from '../query';

export interface IAuditFilters {
  user: string;
  action: string;
  outcome: string; // '' | success | failure | denied | invalid | error
  since: string; // a datetime-local value (UTC) or ISO time
  until: string;
}

export const NO_AUDIT_FILTERS: IAuditFilters = { user: '', action: '', outcome: '', since: '', until: '' };

export const OUTCOMES = ['success', 'failure', 'denied', 'invalid', 'error'];

export const PAGE_SIZE = 50;

/** An ISO time as the filters read it: "2026-11-24 05:00:03 UTC" (no fraction of a second). */
export function utcText(iso: string): string {
  const t = new Date(iso);
  if (!iso || Number.isNaN(t.getTime())) {
    return iso;
  }
  return `${t.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

/** "2026-11-24T05:00" (a datetime-local input, read as UTC) → ISO with Z. */
export function utcTime(value: string): string {
  const v = value.trim();
  if (!v) {
    return '';
  }
  if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/.test(v)) {
    return `${v}:00Z`;
  }
  if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?$/.test(v)) {
    return `${v}Z`;
  }
  return v;
}

function filterParams(f: IAuditFilters): Array<[string, string]> {
  return [
    ['user', f.user],
    ['action', f.action],
    ['outcome', f.outcome],
    ['since', utcTime(f.since)],
    ['until', utcTime(f.until)]
  ];
}

/** `audit?user=&action=&outcome=&since=&until=&limit=&offset=` of one page. */
export function auditPath(f: IAuditFilters, offset: number, limit = PAGE_SIZE): string {
  return withQuery('audit', [...filterParams(f), ['limit', limit], ['offset', offset]]);
}

/** The CSV export with the same filters (no limit/offset: the service refuses them). */
export function auditCsvPath(f: IAuditFilters): string {
  return withQuery('audit', [['format', 'csv'], ...filterParams(f)]);
}

/** "entries 51–100" of a page; "no entries" for an empty one. */
export function pageLabel(offset: number, count: number): string {
  return count ? `entries ${offset + 1}–${offset + count}` : 'no entries';
}

/** The previous page's offset (never below 0). */
export function previousOffset(offset: number, limit = PAGE_SIZE): number {
  return Math.max(0, offset - limit);
}
