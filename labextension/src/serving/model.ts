/**
 * The Serving page's decisions, pure (no DOM, no calls): how an endpoint's
 * state and health read, its gateway URLs, the create form's body (exact
 * strings, never floats) and its problems per field, a replica's probes,
 * a token's expiry, who may change an endpoint.
 */

import { bytesText, formatAmount } from '../amounts';
import { groupProblems, problemsOf } from '../problems';
import {
  ICreateBody,
  IEndpoint,
  IHealth,
  IProbe,
  IProblem,
  IReplica,
  IReplicaHealth,
  IScalingEvent,
  IToken,
  SlotMap
} from './types';

/** The service's prefix of the gateway, under the hub's base URL. */
export const GATEWAY = 'services/hubgrid-gateway/';

/** health statuses for people: "degraded" is reachable, with less capacity */
export const HEALTH_LABELS: { readonly [status: string]: string } = {
  healthy: 'healthy',
  degraded: 'degraded (reachable)',
  down: 'down (not reachable)',
  unknown: 'unknown'
};

export function healthLabel(health: IHealth | undefined): string {
  const status = health?.status ?? 'unknown';
  return HEALTH_LABELS[status] ?? status;
}

/** The health line: its label and, when known, how many replicas pass their probe of those wanted. */
export function healthText(health: IHealth | undefined): string {
  const label = healthLabel(health);
  if (!health || health.status === 'unknown' || health.replicas_up === null || health.replicas_wanted === null) {
    return label;
  }
  return `${label}: ${health.replicas_up} of ${health.replicas_wanted} up`;
}

/** The endpoint's state with its reason, when it has one. */
export function stateText(e: Pick<IEndpoint, 'state' | 'state_reason'>): string {
  return e.state_reason ? `${e.state}: ${e.state_reason}` : e.state;
}

/** "1 of 2" replicas serving of those asked for. */
export function replicasText(e: Pick<IEndpoint, 'running_replicas' | 'replicas'>): string {
  return `${e.running_replicas} of ${e.replicas}`;
}

/**
 * The hub's base URL from Lab's `hubPrefix` ("/hub/", "/jh/hub/"): where
 * the hub's services live ("/", "/jh/").
 */
export function hubBase(hubPrefix: string): string {
  const prefix = hubPrefix.endsWith('/') ? hubPrefix : `${hubPrefix}/`;
  return prefix.endsWith('hub/') ? prefix.slice(0, -'hub/'.length) : '/';
}

/** The endpoint's stable URL and the OpenAI-compatible base URL of the gateway. */
export function gatewayUrls(origin: string, hubPrefix: string, endpointId: string): { endpoint: string; openai: string } {
  const base = `${origin}${hubBase(hubPrefix)}${GATEWAY}`;
  return { endpoint: `${base}e/${encodeURIComponent(endpointId)}/`, openai: `${base}v1` };
}

/**
 * The model name a caller gives the gateway's `v1/...` for `e`: its name,
 * or `project/name` where two endpoints of `all` share the name
 * (`domain/project/name` where that is not enough), as the gateway names
 * the endpoints a caller may use.
 */
export function modelName(e: IEndpoint, all: readonly IEndpoint[]): string {
  const same = all.filter(o => o.name === e.name);
  if (same.length <= 1) {
    return e.name;
  }
  const inProject = same.filter(o => o.project === e.project);
  return inProject.length <= 1 ? `${e.project}/${e.name}` : `${e.domain}/${e.project}/${e.name}`;
}

/** A replica's amount of one slot for people. */
export function slotText(slot: string, value: string): string {
  try {
    return slot === 'mem' ? bytesText(value) : formatAmount(value);
  } catch {
    return value;
  }
}

/** "cpu 1, mem 512 MiB" */
export function slotsText(slots: SlotMap): string {
  return Object.keys(slots)
    .sort()
    .map(k => `${k} ${slotText(k, slots[k])}`)
    .join(', ');
}

// --- the create form ----------------------------------------------------------

/** The create form's fields, as typed (every amount a string). */
export interface IForm {
  name: string;
  project: string;
  resource_group: string;
  image: string;
  model_folder: string;
  cpu: string;
  mem: string;
  gpu: string;
  gpu_shares: string;
  replicas: string;
}

export const EMPTY_FORM: IForm = {
  name: '',
  project: '',
  resource_group: '',
  image: '',
  model_folder: '',
  cpu: '1',
  mem: '1G',
  gpu: '',
  gpu_shares: '',
  replicas: '1'
};

const DECIMAL = /^\d+(\.\d+)?$/;
const WHOLE = /^\d+$/;
const SIZE = /^\d+(\.\d+)?\s*([kKmMgGtT]i?[bB]?)?$/;

/** A field's amount is left out when empty or zero. */
function given(text: string): boolean {
  const t = text.trim();
  return t !== '' && !/^0*(\.0*)?$/.test(t);
}

/**
 * The create body of the form, or the problems that the page says before
 * asking the service (what the service could not even read). The service's
 * validate says the rest.
 */
export function createBody(form: IForm): { body: ICreateBody } | { problems: IProblem[] } {
  const problems: IProblem[] = [];
  const need = (field: keyof IForm, what: string): void => {
    if (!form[field].trim()) {
      problems.push({ field: String(field), message: `choose ${what}` });
    }
  };
  need('name', 'a name');
  need('project', 'a project');
  need('resource_group', 'a resource group');
  need('image', 'an image');
  need('model_folder', 'a model folder');
  const slots: SlotMap = {};
  const amount = (field: keyof IForm, slot: string, re: RegExp, what: string): void => {
    const text = form[field].trim();
    if (!given(text)) {
      return;
    }
    if (!re.test(text)) {
      problems.push({ field: `slots.${slot}`, message: `${JSON.stringify(text)} is not ${what}` });
      return;
    }
    slots[slot] = text.replace(/\s+/g, '');
  };
  amount('cpu', 'cpu', DECIMAL, 'a number of cores (e.g. 1 or 0.5)');
  amount('mem', 'mem', SIZE, 'a size (e.g. 512M or 4G)');
  amount('gpu', 'gpu', WHOLE, 'a whole number of GPUs');
  amount('gpu_shares', 'gpu.shares', DECIMAL, 'a share of one GPU (e.g. 0.25)');
  if (slots.gpu && slots['gpu.shares']) {
    problems.push({ field: 'slots.gpu.shares', message: 'whole GPUs or a share of one, not both' });
  }
  if (!Object.keys(slots).length && !problems.some(p => p.field.startsWith('slots.'))) {
    problems.push({ field: 'slots', message: 'a replica must ask for resources (e.g. cpu 1, mem 1G)' });
  }
  const replicas = form.replicas.trim();
  if (!WHOLE.test(replicas) || Number(replicas) > 64) {
    problems.push({ field: 'replicas', message: 'a whole number from 0 to 64' });
  }
  if (problems.length) {
    return { problems };
  }
  return {
    body: {
      name: form.name.trim(),
      project: form.project,
      resource_group: form.resource_group,
      image: form.image,
      model_folder: form.model_folder,
      slots,
      replicas: Number(replicas)
    }
  };
}

/** The form field a problem's `field` belongs to ("slots.cpu" -> cpu; a definition's -> model_folder). */
export function formField(field: string): keyof IForm | 'other' {
  if (field.startsWith('model-definition.yaml')) {
    return 'model_folder';
  }
  const map: { [f: string]: keyof IForm } = {
    name: 'name',
    project: 'project',
    resource_group: 'resource_group',
    image: 'image',
    model_folder: 'model_folder',
    'slots.cpu': 'cpu',
    'slots.mem': 'mem',
    'slots.gpu': 'gpu',
    'slots.gpu.shares': 'gpu_shares',
    replicas: 'replicas'
  };
  return map[field] ?? 'other';
}

/** Problems (or warnings) grouped by the form field they belong to. */
export function byField(problems: readonly IProblem[]): Map<keyof IForm | 'other', IProblem[]> {
  return groupProblems(problems, formField);
}

export { problemsOf };

/** The form's key of what was validated: Create is enabled only for the form as validated. */
export function formKey(form: IForm): string {
  return JSON.stringify(form);
}

/** The images offered for endpoints: those that run inference sessions. */
export function inferenceImages(images: ReadonlyArray<{ name: string; session_types?: string[] }>): string[] {
  return images.filter(i => (i.session_types ?? []).includes('inference')).map(i => i.name);
}

/** The folders offered as model folders: those not in the trash. */
export function modelFolders(
  folders: ReadonlyArray<{ id: string; name: string; status?: string }>
): Array<{ id: string; name: string }> {
  return folders.filter(f => f.status !== 'trashed').map(f => ({ id: f.id, name: f.name }));
}

/** The groups offered: those that run inference sessions. */
export function inferenceGroups(groups: ReadonlyArray<{ name: string; session_types: string[] }>): string[] {
  return groups.filter(g => (g.session_types ?? []).includes('inference')).map(g => g.name);
}

// --- one endpoint ------------------------------------------------------------

export interface IReplicaRow {
  name: string;
  state: string;
  node: string;
  allocation: string | null;
  reason: string;
  /** what the gateway's probe says: "up (L7OK)", "down (L4CON: ...)", "not routed" */
  probe: string;
  history: IProbe[];
}

/** haproxy's check codes in words (the code stays beside them). */
const CHECK_WORDS: { [code: string]: string } = {
  L7OK: 'probe passed',
  L7OKC: 'probe passed',
  L7STS: 'probe got the wrong status',
  L7RSP: 'probe got no valid answer',
  L7TOUT: 'probe timed out',
  L4CON: 'connection refused',
  L4TOUT: 'connection timed out',
  L6TOUT: 'connection timed out',
  SOCKERR: 'socket error',
  HANA: 'a call to it failed',
  INI: 'not probed yet'
};

/** "up (L7OK: probe passed)" / "down (L4CON: connection refused)". */
export function probeText(h: Pick<IReplicaHealth, 'up' | 'check' | 'detail'>): string {
  const words = CHECK_WORDS[h.check] ?? h.detail;
  const what = [h.check, words].filter(Boolean).join(': ');
  return `${h.up ? 'up' : 'down'}${what ? ` (${what})` : ''}`;
}

/** An ISO time of the service as people read it: "2026-12-04 10:10:10 UTC" (other text as it is). */
export function timeText(iso: string): string {
  const m = /^(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)(\.\d+)?(\+00:00|Z)$/.exec(iso);
  return m ? `${m[1]} ${m[2]} UTC` : iso;
}

/**
 * The replicas the endpoint lists with the gateway's probe of each (by
 * name), then any replica the gateway routes that the service no longer
 * lists (one being replaced).
 */
export function replicaRows(detail: readonly IReplica[], health: IHealth | undefined): IReplicaRow[] {
  const probes = new Map((health?.replicas ?? []).map(r => [r.name, r]));
  const rows: IReplicaRow[] = detail.map(r => {
    const h = probes.get(r.name);
    probes.delete(r.name);
    return {
      name: r.name,
      state: r.state,
      node: r.node ?? '',
      allocation: r.allocation || null,
      reason: r.reason,
      probe: h ? probeText(h) : r.state === 'serving' ? 'not probed yet' : 'not routed',
      history: h?.history ?? []
    };
  });
  for (const h of probes.values()) {
    rows.push({
      name: h.name, state: 'routed', node: '', allocation: null, reason: '',
      probe: probeText(h), history: h.history ?? []
    });
  }
  return rows;
}

/** A scaling event for people: "scaled 1 → 2: ...", with its repeat count. */
export function eventText(e: IScalingEvent): string {
  const counts = e.count && e.count > 1 ? ` (${e.count} times, last ${e.last_at ?? e.at})` : '';
  const change = e.replicas_before !== undefined && e.replicas_after !== undefined
    ? ` ${e.replicas_before} → ${e.replicas_after}`
    : '';
  return `${e.outcome}${change}: ${e.reason}${counts}`;
}

/** A token's line: its state and when it ends (or ended). */
export function tokenText(t: IToken): string {
  if (t.state === 'revoked') {
    return `revoked ${timeText(t.revoked_at ?? '')}`.trim();
  }
  const ends = timeText(t.expires_at);
  return t.state === 'expired' ? `expired ${ends}` : `active, expires ${ends}`;
}

/** The expiry the token form sends: whole days from 1 to `max`. */
export function expiryDays(text: string, max = 3650): number | string {
  const t = text.trim();
  if (!WHOLE.test(t) || Number(t) < 1 || Number(t) > max) {
    return `expiry: a whole number of days from 1 to ${max}`;
  }
  return Number(t);
}

/** The replicas a scale asks for: a whole number from 0 to 64, or the problem. */
export function scaleTo(text: string): number | string {
  const t = text.trim();
  if (!WHOLE.test(t) || Number(t) > 64) {
    return 'replicas: a whole number from 0 to 64';
  }
  return Number(t);
}

/**
 * Who may scale, change or delete `e`: its creator, admins of its domain,
 * superadmins (the service decides; this only says it beforehand). The
 * note for a caller who may not, or '' for one who may.
 */
export function changeNote(me: { name: string; role: string; domain: string }, e: IEndpoint): string {
  if (me.name === e.created_by || me.role === 'superadmin' || (me.role === 'domain-admin' && me.domain === e.domain)) {
    return '';
  }
  return `only its creator (${e.created_by}) or an admin of domain '${e.domain}' may scale, change or delete it`;
}
