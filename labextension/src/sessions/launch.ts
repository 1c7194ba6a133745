/**
 * The launcher dialog as data (pure): the form, its checks, the dry-run
 * body the service judges, the hub's user_options that start the same
 * session, and the verdict for people.
 */

import { compareAmounts, parseBytes } from '../amounts';
import { formatSlot } from '../summary/exact';
import { IReason } from '../summary/types';

export type GpuMode = 'none' | 'whole' | 'shares';

export interface ILaunchForm {
  name: string;
  project: string;
  group: string;
  image: string;
  cpu: string;
  mem: string;
  gpuMode: GpuMode;
  /** whole GPUs (gpuMode whole) or a share of one (gpuMode shares) */
  gpu: string;
  folders: string[];
  type: 'interactive' | 'batch';
  command: string;
}

export interface IDryRun {
  verdict: 'admit' | 'pending' | 'refuse' | string;
  fits_now: boolean;
  node: string | null;
  gpus: { index: number; share: string }[];
  reasons: IReason[];
}

/** A registry image as `GET images` lists it (the parts the launcher reads). */
export interface IImageEntry {
  name: string;
  /** the session types it runs (older services: absent, i.e. sessions) */
  session_types?: string[];
}

/**
 * The images the launcher offers: those that run interactive or batch
 * sessions; an inference image (`session_types: ["inference"]`, the
 * replicas of model-serving endpoints) runs no Jupyter session.
 */
export function sessionImages(images: IImageEntry[]): string[] {
  return images
    .filter(
      i =>
        !i.session_types ||
        i.session_types.some(t => t === 'interactive' || t === 'batch')
    )
    .map(i => i.name);
}

export const SERVER_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;
const DECIMAL = /^\d+(\.\d+)?$/;
const MEMORY = /^\d+(\.\d+)?\s*([KMGTP]i?B?)?$/i;

/** A resource preset of the service (`GET resource-presets`): a name and its slots. */
export interface IPreset {
  name: string;
  /** cpu, mem (bytes), optionally gpu or gpu.shares: exact decimal text */
  slots: { [slot: string]: string };
  default: boolean;
  description?: string;
}

/** Bytes as the memory field shows them, exactly: "2G", "512M" when whole, else the bytes. */
export function memText(bytes: string): string {
  if (!/^\d+$/.test(bytes)) {
    return bytes;
  }
  const value = BigInt(bytes);
  const zero = BigInt(0);
  for (const [unit, power] of [['T', 4], ['G', 3], ['M', 2]] as const) {
    const size = BigInt(1024) ** BigInt(power);
    if (value > zero && value % size === zero) {
      return `${value / size}${unit}`;
    }
  }
  return bytes;
}

/** The size fields of a preset. */
export function presetSize(preset: IPreset): Pick<ILaunchForm, 'cpu' | 'mem' | 'gpuMode' | 'gpu'> {
  const { slots } = preset;
  const gpuMode: GpuMode = slots['gpu'] ? 'whole' : slots['gpu.shares'] ? 'shares' : 'none';
  return {
    cpu: slots['cpu'] ?? '',
    mem: memText(slots['mem'] ?? ''),
    gpuMode,
    gpu: slots['gpu'] ?? slots['gpu.shares'] ?? ''
  };
}

/** The preset whose size the form has ('' when none: a custom size). */
export function presetOf(form: ILaunchForm, presets: IPreset[]): string {
  const same = (a: string, b: string) => DECIMAL.test(a) && DECIMAL.test(b) && compareAmounts(a, b) === 0;
  const found = presets.find(p => {
    const size = presetSize(p);
    return (
      same(size.cpu, form.cpu.trim()) &&
      size.mem === memText(form.mem.trim()) &&
      size.gpuMode === form.gpuMode &&
      (size.gpuMode === 'none' || same(size.gpu, form.gpu.trim()))
    );
  });
  return found?.name ?? '';
}

/**
 * The launcher's first form: my first project, the default group, and the
 * size of the service's default preset (the one the hub's spawn form starts on).
 */
export function defaultForm(projects: string[], groups: string[], presets: IPreset[] = []): ILaunchForm {
  const preset = presets.find(p => p.default);
  return {
    name: '',
    project: projects[0] ?? '',
    group: groups.includes('default') ? 'default' : groups[0] ?? '',
    image: '',
    ...(preset ? presetSize(preset) : { cpu: '', mem: '', gpuMode: 'none' as GpuMode, gpu: '' }),
    folders: [],
    type: 'interactive',
    command: ''
  };
}

/** A free server name like "s-3f9a1c" (random part given, for tests). */
export function suggestName(random: string, taken: string[]): string {
  let name = `s-${random.slice(0, 6)}`;
  for (let i = 2; taken.includes(name); i++) {
    name = `s-${random.slice(0, 6)}-${i}`;
  }
  return name;
}

/** field -> what is wrong with it (empty: the form may be sent). */
export function checkForm(form: ILaunchForm, taken: string[] = []): { [field: string]: string } {
  const errors: { [field: string]: string } = {};
  if (!SERVER_NAME.test(form.name)) {
    errors.name =
      "lowercase letters, digits, '.', '_' and '-', starting with a letter or digit, at most 64";
  } else if (taken.includes(form.name)) {
    errors.name = `you already have a session named ${form.name}`;
  }
  if (!form.project) {
    errors.project = 'choose a project';
  }
  if (!form.group) {
    errors.group = 'choose a resource group';
  }
  if (!DECIMAL.test(form.cpu.trim()) || compareAmounts(form.cpu.trim(), '0') <= 0) {
    errors.cpu = 'a positive number of cores, e.g. 0.5 or 2';
  }
  if (!MEMORY.test(form.mem.trim()) || !wholeBytes(form.mem)) {
    errors.mem = 'a whole number of bytes, or with a unit: 512M, 2G, 1.5 GiB';
  }
  const gpu = form.gpu.trim();
  if (form.gpuMode === 'whole' && !/^[1-9]\d*$/.test(gpu)) {
    errors.gpu = 'a whole number of GPUs, 1 or more';
  }
  if (
    form.gpuMode === 'shares' &&
    (!DECIMAL.test(gpu) || compareAmounts(gpu, '0') <= 0 || compareAmounts(gpu, '1') > 0)
  ) {
    errors.gpu = 'a share of one GPU, more than 0 and at most 1 (e.g. 0.5)';
  }
  if (form.type === 'batch' && !form.command.trim()) {
    errors.command = 'a batch session runs a command';
  }
  return errors;
}

/** Whether the memory field is a whole number of bytes ("1.5G" is, "1.1K" is not). */
function wholeBytes(text: string): boolean {
  try {
    parseBytes(text);
    return true;
  } catch {
    return false;
  }
}

function slots(form: ILaunchForm): { [slot: string]: string } {
  const out: { [slot: string]: string } = { cpu: form.cpu.trim(), mem: form.mem.trim() };
  if (form.gpuMode === 'whole') {
    out['gpu'] = form.gpu.trim();
  } else if (form.gpuMode === 'shares') {
    out['gpu.shares'] = form.gpu.trim();
  }
  return out;
}

/** The body of `POST allocations/dry-run`: the same request the spawner makes. */
export function dryRunBody(form: ILaunchForm): object {
  const body: { [key: string]: unknown } = {
    project: form.project,
    resource_group: form.group,
    slots: slots(form),
    session_type: form.type
  };
  if (form.image) {
    body.image = form.image;
  }
  if (form.type === 'batch') {
    body.command = form.command;
  }
  return body;
}

/** The hub's `user_options` that start this session (the spawn form's fields). */
export function userOptions(form: ILaunchForm): { [key: string]: unknown } {
  const opts: { [key: string]: unknown } = {
    project: form.project,
    resource_group: form.group,
    cpu: form.cpu.trim(),
    mem: form.mem.trim()
  };
  if (form.image) {
    opts.image = form.image;
  }
  if (form.gpuMode === 'whole') {
    opts.gpu = Number.parseInt(form.gpu.trim(), 10);
  } else if (form.gpuMode === 'shares') {
    opts.gpu_shares = form.gpu.trim();
  }
  if (form.folders.length) {
    opts.vfolders = [...form.folders];
  }
  if (form.type === 'batch') {
    opts.session_type = 'batch';
    opts.command = form.command;
  }
  return opts;
}

export interface IVerdict {
  /** fits: starts now; waits: would queue; refused: would be refused */
  kind: 'fits' | 'waits' | 'refused';
  headline: string;
  reasons: string[];
}

export function verdictOf(result: IDryRun): IVerdict {
  if (result.fits_now) {
    const gpus = (result.gpus ?? []).map(
      g => `GPU ${g.index} (${formatSlot('gpu.shares', g.share)})`
    );
    return {
      kind: 'fits',
      headline: `Fits now: node ${result.node ?? '?'}${gpus.length ? `, ${gpus.join(', ')}` : ''}`,
      reasons: []
    };
  }
  const refused = result.verdict === 'refuse';
  return {
    kind: refused ? 'refused' : 'waits',
    headline: refused ? 'Would be refused:' : 'Would wait in the queue:',
    reasons: (result.reasons ?? []).map(r => r.text)
  };
}
