/**
 * The Sessions menu as data (pure: no IO, no DOM): one row per session
 * (state, project, group, image, cpu/mem/GPU, elapsed time, why it waits or
 * how it ended), which sessions to show, what changed between two polls,
 * how long to wait before the next poll, and how to stop a session.
 */

import { sumAmounts } from '../amounts';
import { formatSlot } from '../summary/exact';
import { IAllocation, IApp, IReason } from '../summary/types';
import { STARTING, stateLabel as labelOf, STOPPING } from '../words';

export const ACTIVE = ['pending', 'allocated'];

export interface ISessionRow {
  id: string;
  shortId: string;
  /** the server's name, "(default)" for the default server, else the short id */
  name: string;
  state: string;
  /** running, waiting, ended, cancelled */
  stateLabel: string;
  active: boolean;
  project: string;
  group: string;
  type: string;
  image: string;
  command: string;
  cpu: string;
  mem: string;
  gpu: string;
  /** node [GPU index: share, ...] or "" */
  placement: string;
  elapsed: string;
  /** the scheduler's reasons while pending */
  reasons: IReason[];
  /** how it ended: exit code and/or the release reason */
  ended: string;
  exitCode: number | null;
  apps: IApp[];
}

/** "45s", "12m 03s", "3h 04m", "2d 03h" from seconds. */
export function duration(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  const pad = (n: number) => String(n).padStart(2, '0');
  if (s < 60) {
    return `${s}s`;
  }
  if (s < 3600) {
    return `${Math.floor(s / 60)}m ${pad(s % 60)}s`;
  }
  if (s < 86400) {
    return `${Math.floor(s / 3600)}h ${pad(Math.floor((s % 3600) / 60))}m`;
  }
  return `${Math.floor(s / 86400)}d ${pad(Math.floor((s % 86400) / 3600))}h`;
}

function time(iso: string | null | undefined): number | null {
  if (!iso) {
    return null;
  }
  const t = Date.parse(iso);
  return Number.isNaN(t) ? null : t;
}

/**
 * Running: since admission; pending: waiting since the request; ended: how
 * long it ran (or waited, if it never ran).
 */
export function elapsed(a: IAllocation, now: number): string {
  const start = time(a.admitted_at) ?? time(a.created_at);
  if (start === null) {
    return '-';
  }
  const end = time(a.ended_at) ?? time(a.released_at) ?? now;
  return duration((end - start) / 1000);
}

export function gpuText(slots: { [slot: string]: string }): string {
  const shares = slots['gpu.shares'];
  const whole = slots['gpu'];
  const parts: string[] = [];
  if (whole && whole !== '0') {
    parts.push(formatSlot('gpu', whole));
  }
  if (shares && shares !== '0') {
    parts.push(`${formatSlot('gpu.shares', shares)} share`);
  }
  return parts.length ? parts.join(' + ') : '0';
}

export function placementText(a: IAllocation): string {
  if (!a.node) {
    return '';
  }
  const gpus = (a.gpus ?? []).map(g => `GPU ${g.index}: ${formatSlot('gpu.shares', g.share)}`);
  return gpus.length ? `${a.node} (${gpus.join(', ')})` : a.node;
}

export function endedText(a: IAllocation): string {
  if (ACTIVE.includes(a.state)) {
    return '';
  }
  const parts: string[] = [];
  if (a.exit_code !== null && a.exit_code !== undefined) {
    parts.push(`exit code ${a.exit_code}`);
  }
  if (a.release_reason) {
    parts.push(a.release_reason);
  }
  return parts.join('; ');
}

/**
 * One session for people. `hubPending`: the hub's `pending` of its server
 * ("spawn" while it starts, "stop" while it stops), shown over the
 * allocation's state.
 */
export function sessionRow(a: IAllocation, now: number, hubPending?: string | null): ISessionRow {
  const slots = a.slots ?? {};
  let stateLabel = labelOf(a.state);
  if (a.state === 'allocated' && hubPending === 'spawn') {
    stateLabel = STARTING;
  } else if (ACTIVE.includes(a.state) && hubPending === 'stop') {
    stateLabel = STOPPING;
  }
  return {
    id: a.id,
    shortId: a.id.slice(0, 8),
    name: a.server_name || (a.origin === 'hub' ? '(default)' : a.id.slice(0, 8)),
    state: a.state,
    stateLabel,
    active: ACTIVE.includes(a.state),
    project: a.project,
    group: a.resource_group,
    type: a.session_type,
    image: a.image ?? '',
    command: a.command ?? '',
    cpu: formatSlot('cpu', slots['cpu'] ?? '0'),
    mem: formatSlot('mem', slots['mem'] ?? '0'),
    gpu: gpuText(slots),
    placement: placementText(a),
    elapsed: elapsed(a, now),
    reasons: a.state === 'pending' ? a.reasons ?? [] : [],
    ended: endedText(a),
    exitCode: a.exit_code ?? null,
    apps: a.state === 'allocated' ? a.apps ?? [] : []
  };
}

/**
 * What the list shows: my active sessions (oldest first), then my ended
 * ones, newest first, at most `endedLimit` of them; of `endedTotal` in all
 * (the service's count, when it sent only the newest).
 */
export function visibleSessions(
  all: IAllocation[],
  me: string,
  endedLimit: number,
  endedTotal?: number
): { active: IAllocation[]; ended: IAllocation[]; endedTotal: number } {
  const mine = all.filter(a => a.user === me);
  const active = mine
    .filter(a => ACTIVE.includes(a.state))
    .sort((a, b) => ((a.created_at ?? '') < (b.created_at ?? '') ? -1 : 1));
  const endedAll = mine
    .filter(a => !ACTIVE.includes(a.state))
    .sort((a, b) => {
      const x = a.ended_at ?? a.released_at ?? a.created_at ?? '';
      const y = b.ended_at ?? b.released_at ?? b.created_at ?? '';
      return x < y ? 1 : x > y ? -1 : 0;
    });
  const ended = endedAll.slice(0, endedLimit);
  return { active, ended, endedTotal: Math.max(endedTotal ?? 0, endedAll.length) };
}

/** What a poll brought: sessions that appeared, ended, or changed otherwise. */
export interface ISessionDiff {
  added: string[];
  ended: string[];
  changed: string[];
}

function fingerprint(a: IAllocation): string {
  const reclaim = (a as { reclaim?: unknown }).reclaim ?? null; // a reclaim warning, a keep
  return JSON.stringify([a.state, a.node, a.gpus, a.reasons, a.exit_code, a.release_reason, reclaim]);
}

export function diffSessions(before: IAllocation[], after: IAllocation[]): ISessionDiff {
  const old = new Map(before.map(a => [a.id, a]));
  const diff: ISessionDiff = { added: [], ended: [], changed: [] };
  for (const a of after) {
    const was = old.get(a.id);
    if (!was) {
      diff.added.push(a.id);
    } else if (ACTIVE.includes(was.state) && !ACTIVE.includes(a.state)) {
      diff.ended.push(a.id);
    } else if (fingerprint(was) !== fingerprint(a)) {
      diff.changed.push(a.id);
    }
  }
  const now = new Set(after.map(a => a.id));
  for (const a of before) {
    if (!now.has(a.id) && ACTIVE.includes(a.state)) {
      diff.ended.push(a.id);
    }
  }
  return diff;
}

export function isQuiet(diff: ISessionDiff): boolean {
  return !diff.added.length && !diff.ended.length && !diff.changed.length;
}

/**
 * The next poll interval: back to `base` when something changed (or a
 * session is starting: `busy`), else twice the last one, up to `max`.
 */
export function nextInterval(
  current: number,
  quiet: boolean,
  busy: boolean,
  base: number,
  max: number
): number {
  if (!quiet || busy) {
    return base;
  }
  return Math.min(max, Math.max(base, current * 2));
}

/** How to stop a session: through the hub (a server) or by releasing it. */
export type StopPlan =
  | { kind: 'hub'; user: string; server: string }
  | { kind: 'release'; id: string }
  | null;

export function stopPlan(a: IAllocation): StopPlan {
  if (!ACTIVE.includes(a.state)) {
    return null;
  }
  if (a.origin === 'hub') {
    return { kind: 'hub', user: a.user, server: a.server_name ?? '' };
  }
  return { kind: 'release', id: a.id };
}

/**
 * An app's URL, if it is one the browser may open: a path on this origin
 * (the hub's proxy) or an http(s) URL; never javascript: or data:.
 */
export function safeAppUrl(url: string | null | undefined): string | null {
  if (!url) {
    return null;
  }
  const u = url.trim();
  if (u.startsWith('/') && !u.startsWith('//')) {
    return u;
  }
  return /^https?:\/\//i.test(u) ? u : null;
}

/** A server's own URL under the hub (for a hub session without app list). */
export function serverUrl(user: string, server: string): string {
  const enc = encodeURIComponent;
  return server ? `/user/${enc(user)}/${enc(server)}/` : `/user/${enc(user)}/`;
}

/** The sessions' total GPU use, exact (for a one-line summary). */
export function totalGpu(rows: IAllocation[]): string {
  return sumAmounts(
    rows
      .filter(a => a.state === 'allocated')
      .map(a => sumAmounts([a.slots?.['gpu'] ?? '0', a.slots?.['gpu.shares'] ?? '0']))
  );
}
