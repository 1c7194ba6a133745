/**
 * A session's detail view as data (pure: no IO, no DOM): its scheduling
 * history (GET allocations/{id}/history) and its live use (GET
 * allocations/{id}/usage) as rows of text. Amounts stay exact (bytes in
 * binary units, percentages as the service sent them); times are local.
 */

import { formatBytes, formatAmount } from '../amounts';
import { gpuShareText, ISharesLine, sharesLine } from '../gpushares';
import { formatSlot } from '../summary/exact';
import { IAllocation, IReason } from '../summary/types';
import { historyLabel } from '../words';
import { gpuText } from './model';

export interface IHistoryEvent {
  at: string | null;
  event: string;
  text: string;
  slots?: { [slot: string]: string };
  resource_group?: string;
  project?: string;
  reasons?: IReason[];
  passes?: number;
  node?: string | null;
  rule?: string;
  details?: { [key: string]: unknown };
  action?: string;
  by?: string | null;
  exit_code?: number | null;
}

export interface IHistory {
  id: string;
  state: string;
  events: IHistoryEvent[];
}

export interface IUsageSample {
  at: string;
  cpu_percent: string | null;
  mem_used: string | null;
  mem_limit: string | null;
  gpu_util: string | null;
  gpu_mem: string | null;
}

export interface IUsage {
  id: string;
  state: string;
  cores: string;
  latest: IUsageSample | null;
  samples: IUsageSample[];
  note: string;
}

export interface IHistoryRow {
  time: string;
  event: string;
  label: string;
  text: string;
  /** further lines: the reasons it waited for */
  lines: string[];
}

const pad = (n: number) => String(n).padStart(2, '0');

/** An ISO time as local "YYYY-MM-DD HH:MM:SS" ('' when absent, the text itself when unreadable). */
export function clockTime(iso: string | null | undefined): string {
  if (!iso) {
    return '';
  }
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) {
    return iso;
  }
  return (
    `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`
  );
}

/** "CPU 1 · Mem 1 GiB · GPU 0.5 share" from a slot map. */
export function slotsText(slots: { [slot: string]: string }): string {
  return `CPU ${formatSlot('cpu', slots['cpu'] ?? '0')} · Mem ${formatSlot('mem', slots['mem'] ?? '0')} · GPU ${gpuText(slots)}`;
}

function detail(e: IHistoryEvent, key: string): string {
  const value = e.details?.[key];
  return typeof value === 'string' ? value : '';
}

/** `text` without its leading `word` (the row's label says it already): "stopped by ada" → "by ada". */
function after(word: string, text: string): string {
  return text.startsWith(word) ? text.slice(word.length).trim() : text;
}

/** "by the idle rule: idle for 55 min" from a rule and a reason. */
function byRule(rule: string | undefined, reason: string): string {
  const who = rule ? `by the ${rule} rule` : '';
  return [who, reason].filter(Boolean).join(': ');
}

/** What a step says after its label, with exact amounts and local times. */
function eventText(e: IHistoryEvent): string {
  switch (e.event) {
    case 'requested': {
      const where = e.resource_group ? ` in ${e.resource_group}${e.project ? ` (${e.project})` : ''}` : '';
      return `${slotsText(e.slots ?? {})}${where}`;
    }
    case 'queued':
      return e.passes ? `${e.text} (${e.passes} scheduler passes)` : e.text;
    case 'kept': {
      const until = detail(e, 'kept_until');
      return until ? `until ${clockTime(until)}` : after('kept', e.text);
    }
    case 'warned':
    case 'would-reclaim':
    case 'reclaimed': {
      if (e.rule === undefined) {
        // how the session ended: "reclaimed (idle): ..." from its release reason
        return after('reclaimed', e.text).replace(/^\((\w+)\):\s*/, 'by the $1 rule: ');
      }
      const deadline = detail(e, 'deadline');
      const at = e.event !== 'reclaimed' && deadline && !Number.isNaN(Date.parse(deadline))
        ? ` (reclaim at ${clockTime(deadline)})` : '';
      return byRule(e.rule, detail(e, 'reason')) + at;
    }
    case 'logged':
      return e.by ? `${e.by}: ${e.text}` : e.text;
    default:
      return after(e.event, e.text);
  }
}

/** The history's rows, oldest first, for people. */
export function historyRows(history: IHistory): IHistoryRow[] {
  return history.events.map(e => ({
    time: clockTime(e.at),
    event: e.event,
    label: historyLabel(e.event),
    text: eventText(e),
    lines: e.event === 'queued' ? (e.reasons ?? []).map(r => r.text) : []
  }));
}

export interface IUsageView {
  at: string;
  cpu: string;
  mem: string;
  gpu: string;
  note: string;
}

/** The latest reading for people: "50 % of 2 cores", "1.5 GiB of 2 GiB", "12.5 % busy · 40 % memory". */
export function usageView(usage: IUsage): IUsageView {
  const s = usage.latest;
  if (!s) {
    return { at: '', cpu: '–', mem: '–', gpu: '–', note: usage.note };
  }
  const cores = formatAmount(usage.cores);
  const cpu = s.cpu_percent === null ? '–' : `${formatAmount(s.cpu_percent)} % of ${cores} ${cores === '1' ? 'core' : 'cores'}`;
  let mem = '–';
  if (s.mem_used !== null) {
    mem = formatBytes(s.mem_used) + (s.mem_limit !== null ? ` of ${formatBytes(s.mem_limit)}` : '');
  }
  const gpuParts: string[] = [];
  if (s.gpu_util !== null) {
    gpuParts.push(`${formatAmount(s.gpu_util)} % busy`);
  }
  if (s.gpu_mem !== null) {
    gpuParts.push(`${formatAmount(s.gpu_mem)} % memory`);
  }
  return { at: clockTime(s.at), cpu, mem, gpu: gpuParts.length ? gpuParts.join(' · ') : '–', note: usage.note };
}

export interface IGpuDetail {
  /** "GPU 3: 0.5, memory cap 40 GiB" or "GPU 0: whole", one per device */
  devices: string[];
  /** how its node enforces shares (null: no GPU, or the service does not say) */
  shares: ISharesLine | null;
}

/** A session's GPUs as its detail shows them: each device with its cap, and the node's sharing line. */
export function gpuDetail(a: IAllocation): IGpuDetail {
  const gpus = a.gpus ?? [];
  return {
    devices: gpus.map(g => gpuShareText(g)),
    shares: gpus.length ? sharesLine(a.shares) : null
  };
}
