/**
 * The Domains page's edit forms (pure): the fields of a domain
 * (`PATCH domains/{d}`, core/schemas.py DomainUpdate: superadmins) and of
 * a project (`PATCH domains/{d}/projects/{p}`, ProjectUpdate: the domain's
 * admins), prefilled from `GET` of the thing, and the PATCH of what changed
 * (the policies form's formDraft / formChange: amounts stay decimal strings,
 * integers go as numbers, anything else as typed so the service's 422 names
 * the field; an emptied project limit is cleared, emptied slots are `{}`,
 * no limit).
 */

import { formChange, formDraft, IPolicyField, PolicyDraft } from '../policies/form';

export const DOMAIN_FIELDS: IPolicyField[] = [
  { key: 'description', label: 'Description', kind: 'text' },
  { key: 'total_resource_slots', label: 'Total resource slots', kind: 'slots', hint: 'cpu=64, gpu.shares=8; empty: no limit' },
  { key: 'allowed_vfolder_hosts', label: 'Allowed storage hosts', kind: 'names', hint: 'names separated by commas' },
  { key: 'allowed_images', label: 'Allowed images', kind: 'names', hint: 'names separated by commas; empty: every image' },
  { key: 'allow_first_login', label: 'First login joins this domain', kind: 'bool' },
  { key: 'active', label: 'Active', kind: 'bool' }
];

export const PROJECT_FIELDS: IPolicyField[] = [
  { key: 'description', label: 'Description', kind: 'text' },
  { key: 'total_resource_slots', label: 'Total resource slots', kind: 'slots', hint: 'cpu=8, gpu.shares=2; empty: no limit' },
  { key: 'max_concurrent_sessions', label: 'Max concurrent sessions', kind: 'int', clearable: true },
  { key: 'max_vfolder_count', label: 'Max folders', kind: 'int', clearable: true },
  { key: 'max_vfolder_size', label: 'Max folder size', kind: 'bytes', clearable: true, hint: '100G, 512 MiB or bytes' },
  { key: 'allowed_vfolder_hosts', label: 'Allowed storage hosts', kind: 'names', hint: 'names separated by commas' },
  { key: 'active', label: 'Active', kind: 'bool' }
];

/** What is edited: a domain, or a project of a domain. */
export interface IEditTarget {
  domain: string;
  project?: string;
}

export function editFields(t: IEditTarget): IPolicyField[] {
  return t.project === undefined ? DOMAIN_FIELDS : PROJECT_FIELDS;
}

/** The path of the thing (GET prefills the form, PATCH saves it). */
export function editPath(t: IEditTarget): string {
  const d = `domains/${encodeURIComponent(t.domain)}`;
  return t.project === undefined ? d : `${d}/projects/${encodeURIComponent(t.project)}`;
}

/** The form's values of the thing as GET answers it. */
export function editDraft(t: IEditTarget, current: { [key: string]: unknown }): PolicyDraft {
  return formDraft(editFields(t), current);
}

export interface IEditRequest {
  path: string;
  /** only what changed (empty: nothing to send) */
  body: { [k: string]: unknown };
  /** problems found before sending (a map not written name=amount), per field */
  errors: { [field: string]: string };
}

/** The PATCH of the form: only the fields changed from `current`. */
export function editRequest(t: IEditTarget, current: { [key: string]: unknown }, d: PolicyDraft): IEditRequest {
  const { body, errors } = formChange(editFields(t), current, d);
  return { path: editPath(t), body, errors };
}
