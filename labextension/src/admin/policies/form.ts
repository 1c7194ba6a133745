/**
 * The Resource policies page's form (pure): every field the service has
 * (core/schemas.py ResourcePolicyCreate/Update), the form's text values
 * from a policy, and the POST / PATCH body from the form. Numbers are sent
 * as the service wants them (integers as JSON numbers, amounts as decimal
 * strings); a value that is not one is sent as typed so the service's 422
 * names the field. Sizes (`bytes` fields, `mem` in slot maps) are typed and
 * shown with binary units ("32G", "512 MiB") and sent as exact bytes.
 * Emptying a limit in an edit clears it (`clear`).
 * formDraft and formChange work on any field list (the Domains page's edit
 * forms use them too).
 */

import { bytesText, parseBytes } from '../../amounts';

export type FieldKind = 'int' | 'bytes' | 'amount' | 'bool' | 'slots' | 'names' | 'thresholds' | 'operator' | 'text';

/** the slots whose amounts are bytes: typed and shown with binary units ("32 GiB") */
const BYTE_SLOTS = ['mem'];

export interface IPolicyField {
  key: string;
  label: string;
  kind: FieldKind;
  hint?: string;
  /** May be set back to unlimited with `clear` (PATCH). */
  clearable?: boolean;
}

export const POLICY_FIELDS: IPolicyField[] = [
  { key: 'total_resource_slots', label: 'Total resource slots', kind: 'slots', hint: 'cpu=8, mem=32 GiB, gpu.shares=2.5' },
  { key: 'unspecified_limited', label: 'Slots not named are limited to 0', kind: 'bool' },
  { key: 'max_concurrent_sessions', label: 'Max concurrent sessions', kind: 'int', clearable: true },
  { key: 'max_session_lifetime', label: 'Max session lifetime (s)', kind: 'int', clearable: true },
  { key: 'idle_timeout', label: 'Idle timeout (s)', kind: 'int', clearable: true },
  { key: 'max_pending_sessions', label: 'Max pending sessions', kind: 'int', clearable: true },
  { key: 'max_pending_resource_slots', label: 'Max pending resource slots', kind: 'slots', hint: 'cpu=4, gpu.shares=1' },
  { key: 'max_gpus_per_session', label: 'Max GPUs per session', kind: 'amount', clearable: true },
  { key: 'allowed_resource_groups', label: 'Allowed resource groups', kind: 'names', hint: 'names separated by commas; empty: any' },
  { key: 'max_vfolder_count', label: 'Max folders', kind: 'int', clearable: true },
  { key: 'max_vfolder_size', label: 'Max folder size', kind: 'bytes', clearable: true, hint: '100G, 512 MiB or bytes' },
  { key: 'allowed_vfolder_hosts', label: 'Allowed storage hosts', kind: 'names', hint: 'names separated by commas' },
  { key: 'utilization_window', label: 'Utilization window (s)', kind: 'int', clearable: true },
  { key: 'utilization_grace', label: 'Utilization grace (s)', kind: 'int', clearable: true },
  { key: 'utilization_thresholds', label: 'Utilization thresholds (%)', kind: 'thresholds', clearable: true, hint: 'cpu=5, mem=10, gpu_util=5, gpu_mem=10' },
  { key: 'utilization_operator', label: 'Idle when', kind: 'operator', hint: 'and: all metrics below; or: any' },
  { key: 'reclaim_warning', label: 'Reclaim warning (s)', kind: 'int', clearable: true },
  { key: 'keep_extension', label: 'Keep extension (s)', kind: 'int', clearable: true },
  { key: 'max_keeps', label: 'Max keeps', kind: 'int', clearable: true }
];

export type PolicyDraft = { [key: string]: string | boolean };

export type IPolicy = { name: string; [key: string]: unknown };

function mapText(value: unknown): string {
  if (!value || typeof value !== 'object') {
    return '';
  }
  return Object.entries(value as { [k: string]: unknown })
    .map(([k, v]) => `${k}=${BYTE_SLOTS.includes(k) ? bytesText(String(v)) : String(v)}`)
    .join(', ');
}

/** A size typed in a form as the API takes it: a JSON number while exact, else the decimal string. */
function bytesValue(text: string): { value?: unknown; error?: string } {
  try {
    const bytes = parseBytes(text);
    return { value: bytes <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(bytes) : bytes.toString() };
  } catch (e) {
    return { error: (e as Error).message };
  }
}

/**
 * The form's text values of `obj` for `fields` (null: an empty form). Also
 * the Domains page's edit forms (../domains/edit.ts).
 */
export function formDraft(fields: IPolicyField[], obj: { [key: string]: unknown } | null): PolicyDraft {
  const d: PolicyDraft = {};
  for (const f of fields) {
    const v = obj ? obj[f.key] : undefined;
    switch (f.kind) {
      case 'bool':
        d[f.key] = v === true;
        break;
      case 'operator':
        d[f.key] = typeof v === 'string' ? v : 'and';
        break;
      case 'slots':
      case 'thresholds':
        d[f.key] = mapText(v);
        break;
      case 'names':
        d[f.key] = Array.isArray(v) ? v.join(', ') : '';
        break;
      case 'bytes':
        d[f.key] = v === null || v === undefined ? '' : bytesText(String(v));
        break;
      default:
        d[f.key] = v === null || v === undefined ? '' : String(v);
    }
  }
  return d;
}

/** The form's values of a policy (a new policy: null). */
export function policyDraft(p: IPolicy | null): PolicyDraft {
  return { name: p ? p.name : '', ...formDraft(POLICY_FIELDS, p) };
}

/**
 * "cpu=8, mem=32 GiB, gpu.shares=2.5" → {cpu: "8", mem: "34359738368", ...}:
 * memory with binary units is sent as exact bytes; a part without "=" or a
 * size that is not one is an error.
 */
export function parseMap(text: string): { value?: { [k: string]: string }; error?: string } {
  const value: { [k: string]: string } = {};
  for (const part of text.split(/[,;\n]/).map(s => s.trim()).filter(Boolean)) {
    const m = /^([^=:\s]+)\s*[=:]\s*(\S(?:.*\S)?)$/.exec(part);
    if (!m) {
      return { error: `"${part}" is not name=amount` };
    }
    if (BYTE_SLOTS.includes(m[1])) {
      try {
        value[m[1]] = parseBytes(m[2]).toString();
      } catch (e) {
        return { error: `${m[1]}: ${(e as Error).message}` };
      }
    } else {
      value[m[1]] = m[2];
    }
  }
  return { value };
}

function fieldValue(f: IPolicyField, raw: string | boolean): { value?: unknown; error?: string } {
  if (f.kind === 'bool') {
    return { value: raw === true };
  }
  const text = String(raw).trim();
  switch (f.kind) {
    case 'int':
      return { value: /^\d+$/.test(text) ? Number(text) : text };
    case 'bytes':
      return bytesValue(text);
    case 'amount':
    case 'operator':
    case 'text':
      return { value: text };
    case 'names':
      return { value: text.split(/[,;\s]+/).filter(Boolean) };
    default:
      return parseMap(text);
  }
}

function isEmpty(f: IPolicyField, raw: string | boolean): boolean {
  return f.kind !== 'bool' && String(raw).trim() === '';
}

export interface IPolicyRequest {
  method: 'POST' | 'PATCH';
  path: string;
  body: { [k: string]: unknown };
  /** Problems found before sending (a map not written name=amount), per field. */
  errors: { [field: string]: string };
}

/** The field's value into `body`, or its problem into `errors`. */
function putValue(
  f: IPolicyField,
  raw: string | boolean,
  body: { [k: string]: unknown },
  errors: { [field: string]: string }
): void {
  const { value, error } = fieldValue(f, raw);
  if (error) {
    errors[f.key] = `${f.key}: ${error}`;
  } else {
    body[f.key] = value;
  }
}

/**
 * What the form changed in `original` (an object with `fields`' values): the
 * PATCH body with only the changed fields, `clear` for the clearable limits
 * emptied, and the problems found before sending, per field.
 */
export function formChange(
  fields: IPolicyField[],
  original: { [key: string]: unknown },
  d: PolicyDraft
): { body: { [k: string]: unknown }; errors: { [field: string]: string } } {
  const errors: { [field: string]: string } = {};
  const body: { [k: string]: unknown } = {};
  const before = formDraft(fields, original);
  const clear: string[] = [];
  for (const f of fields) {
    const raw = d[f.key] ?? (f.kind === 'bool' ? false : '');
    if (f.kind === 'bool' ? raw === before[f.key] : String(raw).trim() === String(before[f.key]).trim()) {
      continue;
    }
    if (isEmpty(f, raw) && f.clearable) {
      clear.push(f.key);
      continue;
    }
    putValue(f, raw, body, errors);
  }
  if (clear.length) {
    body.clear = clear;
  }
  return { body, errors };
}

/**
 * The request of the form: POST resource-policies with every filled field
 * (a new policy), or PATCH resource-policies/{name} with what changed and
 * `clear` for the limits emptied.
 */
export function policyRequest(original: IPolicy | null, d: PolicyDraft): IPolicyRequest {
  if (original) {
    const { body, errors } = formChange(POLICY_FIELDS, original, d);
    return { method: 'PATCH', path: `resource-policies/${encodeURIComponent(original.name)}`, body, errors };
  }
  const errors: { [field: string]: string } = {};
  const body: { [k: string]: unknown } = { name: String(d.name).trim() };
  for (const f of POLICY_FIELDS) {
    const raw = d[f.key] ?? (f.kind === 'bool' ? false : '');
    if (isEmpty(f, raw) || (f.kind === 'bool' && raw === false) || (f.kind === 'operator' && raw === 'and')) {
      continue;
    }
    putValue(f, raw, body, errors);
  }
  return { method: 'POST', path: 'resource-policies', body, errors };
}

/** A value of a policy as the table shows it ("—" for unlimited). */
export function policyCell(p: IPolicy, f: IPolicyField): string {
  const d = policyDraft(p)[f.key];
  if (f.kind === 'bool') {
    return d ? 'yes' : 'no';
  }
  return String(d) || '—';
}
