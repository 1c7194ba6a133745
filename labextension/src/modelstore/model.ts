/**
 * The Model Store page's pure parts: what a card shows, the search, the
 * deploy and publish forms read into request bodies (or the problems that
 * keep them from being sent), and a check's problems by form field. No IO.
 */

import { bytesInput, formatAmount, formatBytes } from '../amounts';
import { groupProblems, problemsOf } from '../problems';
import { IDeployBody, IProblem, IPublishBody, IStoreModel } from './types';

/** The fields of the deploy form (problems of other fields are shown above it). */
export type DeployField = 'project' | 'resource_group' | 'replicas' | 'name' | 'other';

export interface IDeployForm {
  project: string;
  resource_group: string;
  replicas: string;
  name: string;
}

export interface IPublishForm {
  folder: string;
  image: string;
  /** '' : every domain (superadmins) */
  domain: string;
  name: string;
  cpu: string;
  mem: string;
}

const ENTITY_NAME = /^[a-z0-9]([a-z0-9_-]{0,62}[a-z0-9])?$/;

/** The title a card shows: the metadata's title, else the entry's name. */
export function titleOf(m: IStoreModel): string {
  return m.card.title?.trim() || m.name;
}

/** One amount for people: memory in binary units, the rest exact. */
export function slotText(slot: string, amount: string): string {
  return slot === 'mem' ? formatBytes(amount) : formatAmount(amount);
}

/** One replica's resources, e.g. "cpu 0.5 · mem 128 MiB". */
export function slotsText(slots: { [slot: string]: string }): string {
  const keys = Object.keys(slots).sort();
  return keys.length ? keys.map(k => `${k} ${slotText(k, slots[k])}`).join(' · ') : 'none';
}

/** Where an entry is published, for people. */
export function scopeText(m: IStoreModel): string {
  return m.domain === null ? 'every domain' : `domain ${m.domain}`;
}

/** Entries whose title, name, task, category, description or labels hold every word of `query`. */
export function search(models: readonly IStoreModel[], query: string): IStoreModel[] {
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  if (!words.length) {
    return [...models];
  }
  return models.filter(m => {
    const c = m.card;
    const text = [titleOf(m), m.name, c.task, c.category, c.description, c.author, ...c.label]
      .filter(Boolean)
      .join(' ')
      .toLowerCase();
    return words.every(w => text.includes(w));
  });
}

/** The deploy form as a request body, or the problems that keep it from being sent. */
export function deployBody(form: IDeployForm): IDeployBody | { problems: IProblem[] } {
  const problems: IProblem[] = [];
  if (!form.project) {
    problems.push({ field: 'project', message: 'pick a project of yours' });
  }
  if (!form.resource_group) {
    problems.push({ field: 'resource_group', message: 'pick a resource group that runs inference sessions' });
  }
  const replicas = form.replicas.trim();
  if (!/^\d{1,2}$/.test(replicas) || Number(replicas) < 1 || Number(replicas) > 64) {
    problems.push({ field: 'replicas', message: 'a whole number from 1 to 64' });
  }
  const name = form.name.trim();
  if (name && !ENTITY_NAME.test(name)) {
    problems.push({
      field: 'name',
      message: '1 to 64 lowercase letters, digits, - or _, starting and ending with a letter or digit'
    });
  }
  if (problems.length) {
    return { problems };
  }
  const body: IDeployBody = { project: form.project, resource_group: form.resource_group, replicas: Number(replicas) };
  if (name) {
    body.name = name;
  }
  return body;
}

/** The form field a check's problem belongs at (`slots.cpu`: the replicas' size). */
export function deployField(field: string): DeployField {
  if (field === 'project' || field === 'resource_group' || field === 'name') {
    return field;
  }
  if (field === 'replicas' || field === 'slots' || field.startsWith('slots.')) {
    return 'replicas';
  }
  return 'other';
}

/** Problems grouped by the form field they are shown at. */
export function byField(problems: readonly IProblem[]): Map<DeployField, IProblem[]> {
  return groupProblems(problems, deployField);
}

export { problemsOf };

/** The publish form as a request body, or its problems (slots left empty: the definition's min_resource). */
export function publishBody(form: IPublishForm): IPublishBody | { problems: IProblem[] } {
  const problems: IProblem[] = [];
  if (!form.folder) {
    problems.push({ field: 'folder', message: 'pick a model folder' });
  }
  if (!form.image) {
    problems.push({ field: 'image', message: 'pick an inference image' });
  }
  const name = form.name.trim();
  if (name && !ENTITY_NAME.test(name)) {
    problems.push({ field: 'name', message: 'lowercase letters, digits, - or _ (at most 64)' });
  }
  const slots: { [slot: string]: string } = {};
  const cpu = form.cpu.trim();
  if (cpu) {
    if (!/^\d{1,6}(\.\d{1,3})?$/.test(cpu) || Number(cpu) === 0) {
      problems.push({ field: 'slots.cpu', message: 'CPU cores: a number above 0, e.g. 0.5' });
    } else {
      slots.cpu = cpu;
    }
  }
  if (form.mem.trim()) {
    try {
      slots.mem = bytesInput(form.mem);
    } catch (e) {
      problems.push({ field: 'slots.mem', message: (e as Error).message });
    }
  }
  if (Object.keys(slots).length === 1) {
    problems.push({ field: 'slots', message: 'give both CPU and memory, or neither (the definition\'s min_resource)' });
  }
  if (problems.length) {
    return { problems };
  }
  const body: IPublishBody = { folder: form.folder, image: form.image };
  if (form.domain) {
    body.domain = form.domain;
  }
  if (name) {
    body.name = name;
  }
  if (Object.keys(slots).length) {
    body.slots = slots;
  }
  return body;
}

/** A folder as `GET vfolders` lists it (the fields the publish form reads). */
export interface IPublishFolder {
  id: string;
  name: string;
  status?: string;
  usage_mode?: string;
  owner?: { kind: string; user?: string; project?: string; domain?: string };
}

/** The caller as the publish form needs them (`GET me`). */
export interface IPublisher {
  name: string;
  domain: string;
  projects: Array<{ name: string; domain: string }>;
}

/**
 * The publish form's folders, the caller's own first (model folders before
 * the rest), then their projects' folders, then what else they may read
 * (an admin lists every folder of their domains: others' private folders
 * are listed last and never preselected); trashed folders are left out.
 * `preselected` is the first own or project folder, '' when there is none:
 * the form then asks to pick one rather than publish someone else's.
 */
export function publishFolders(
  folders: readonly IPublishFolder[],
  me: IPublisher
): { folders: Array<{ id: string; name: string; whose: string }>; preselected: string } {
  const projects = new Set(me.projects.map(p => `${p.domain}/${p.name}`));
  const rank = (f: IPublishFolder): number => {
    const o = f.owner;
    const own = o?.kind === 'user' && o.user === me.name;
    const project = o?.kind === 'project' && projects.has(`${o.domain ?? me.domain}/${o.project}`);
    const base = own ? 0 : project ? 2 : 4;
    return base + (f.usage_mode === 'model' ? 0 : 1);
  };
  const whose = (f: IPublishFolder): string => {
    const o = f.owner;
    if (!o) {
      return '';
    }
    if (o.kind === 'project') {
      return `project ${o.project}`;
    }
    return o.user === me.name ? 'yours' : `${o.user}'s`;
  };
  const shown = folders
    .filter(f => f.status !== 'trashed')
    .map((f, i) => ({ f, i, r: rank(f) }))
    .sort((a, b) => a.r - b.r || a.i - b.i);
  const first = shown.find(x => x.r < 4);
  return {
    folders: shown.map(({ f }) => ({ id: f.id, name: f.name, whose: whose(f) })),
    preselected: first ? first.f.id : ''
  };
}

/**
 * Where the caller may publish: a superadmin every domain ('') and each
 * active domain; a domain admin their own domain. The first is preselected.
 */
export function publishScopes(
  role: string,
  ownDomain: string,
  domains: ReadonlyArray<{ name: string; active?: boolean }>
): string[] {
  if (role !== 'superadmin') {
    return [ownDomain];
  }
  const names = domains.filter(d => d.active !== false).map(d => d.name);
  return ['', ...(names.includes(ownDomain) ? [ownDomain] : []), ...names.filter(n => n !== ownDomain).sort()];
}
