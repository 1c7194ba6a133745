/**
 * Idle reclamation's notice in the Sessions menu (pure: no IO, no DOM): the
 * countdown to a session's reclaim, whether "keep it" is offered, what a
 * row says about it, and which sessions newly entered a warning or were
 * reclaimed since the last poll (to notify once per warning, not per poll).
 */

import { IAllocation } from '../summary/types';
import { duration } from './model';
import { localizeTimes, localTime } from './times';

/** The allocation's `reclaim` (docs/operations.md, "Warning and keep it"). */
export interface IReclaimNotice {
  rule: 'idle' | 'lifetime' | 'utilization' | string;
  deadline: string;
  reason: string;
  numbers: { [name: string]: unknown };
  warned_at: string;
  can_keep: boolean;
  keeps: number;
  max_keeps: number;
  keep_extension: number;
  kept_until: string | null;
}

/** What `POST allocations/{id}/keep` answers. */
export interface IKeepAnswer {
  id?: string;
  keeps: number;
  max_keeps: number;
  kept_until: string;
  can_keep: boolean;
}

/** An allocation as the API answers it, with its reclaim notice. */
export type IReclaimable = IAllocation & { reclaim?: IReclaimNotice | null };

function time(iso: string | null | undefined): number | null {
  if (!iso) {
    return null;
  }
  const t = Date.parse(iso);
  return Number.isNaN(t) ? null : t;
}

/** A running session's reclaim notice, if one is announced. */
export function noticeOf(a: IReclaimable): IReclaimNotice | null {
  const n = a.reclaim;
  return a.state === 'allocated' && n && time(n.deadline) !== null ? n : null;
}

/** "reclaimed in 4m 05s" from the deadline and now; "being reclaimed" once past it. */
export function countdown(deadline: string, now: number): string {
  const t = time(deadline);
  if (t === null) {
    return '';
  }
  const left = Math.ceil((t - now) / 1000);
  return left > 0 ? `reclaimed in ${duration(left)}` : 'being reclaimed';
}

const RULE_LABELS: { [rule: string]: string } = {
  idle: 'idle',
  lifetime: 'past its maximum lifetime',
  utilization: 'under-used'
};

/** The rule for people: "idle", "past its maximum lifetime", "under-used". */
export function ruleLabel(rule: string): string {
  return RULE_LABELS[rule] ?? rule;
}

/**
 * An ISO instant in local time as people read it: "HH:MM:SS" today, with
 * the day otherwise (`times.localTime`); "" when it is none.
 */
export function clock(iso: string | null | undefined): string {
  return localTime(iso);
}

/** What a session's row says about its reclaim. */
export interface IReclaimRow {
  /** the announced deadline (ISO), "" when nothing is announced */
  deadline: string;
  rule: string;
  /** "reclaimed in 1m 05s" */
  countdown: string;
  /** the service's reason (its numbers, as text) */
  reason: string;
  /** "kept until 10:07:00 (1 of 2 keeps)", or "" */
  kept: string;
  canKeep: boolean;
  /** the Keep button's caption: how far a keep pushes the deadline */
  keepTip: string;
}

/**
 * The reclaim part of a running session's row. `kept`: this page's last
 * keep of it (the answer of `keep`), shown until the service's next notice
 * (after a keep the service withdraws the notice until the new deadline is
 * close again).
 */
export function reclaimRow(a: IReclaimable, now: number, kept?: IKeepAnswer | null): IReclaimRow | null {
  if (a.state !== 'allocated') {
    return null;
  }
  const notice = noticeOf(a);
  // a notice older than this page's keep: the service withdrew it with the keep
  const n = notice && kept && notice.keeps < kept.keeps ? null : notice;
  const mine = kept && (time(kept.kept_until) ?? 0) > now ? kept.kept_until : null; // not once past
  const keptUntil = n?.kept_until ?? mine;
  const keeps = n ? n.keeps : kept?.keeps ?? 0;
  const maxKeeps = n ? n.max_keeps : kept?.max_keeps ?? 0;
  const keptText = keptUntil
    ? `kept until ${clock(keptUntil)} (${keeps} of ${maxKeeps} keep${maxKeeps === 1 ? '' : 's'})`
    : '';
  if (!n) {
    return keptText
      ? { deadline: '', rule: '', countdown: '', reason: '', kept: keptText, canKeep: false, keepTip: '' }
      : null;
  }
  return {
    deadline: n.deadline,
    rule: n.rule,
    countdown: countdown(n.deadline, now),
    reason: localizeTimes(n.reason, now),
    kept: keptText,
    canKeep: keepOffered(n, now),
    keepTip: `Keep it: ${duration(n.keep_extension)} more after the deadline`
  };
}

/** Whether "keep it" is offered: the policy allows one more and the deadline has not passed. */
export function keepOffered(n: IReclaimNotice, now: number): boolean {
  const t = time(n.deadline);
  return !!n.can_keep && n.keep_extension > 0 && n.keeps < n.max_keeps && t !== null && t > now;
}

/** A warning's identity: one notification per warning, whatever the number of polls. */
export function warningKey(a: IReclaimable): string | null {
  const n = noticeOf(a);
  return n ? `${a.id} ${n.warned_at}` : null;
}

/** What this page remembers between polls to notify once. */
export interface IWatchState {
  /** the warnings notified (warningKey) */
  notified: Set<string>;
  /** allocation id -> the kept_until of a keep made from this page */
  kept: Map<string, string>;
  /** the sessions this page saw warned, still running */
  warned: Set<string>;
}

export function watchState(): IWatchState {
  return { notified: new Set(), kept: new Map(), warned: new Set() };
}

/** What a poll brings for the notifications. */
export interface IWatchNews {
  /** sessions newly warned: notify each once */
  warned: IReclaimable[];
  /** sessions this page saw warned that ended since (reclaimed, or stopped): their reason */
  ended: IReclaimable[];
  /** sessions this page saw warned that are no longer listed */
  gone: string[];
  /** every session of this read (set by the store: the own session's banner) */
  mine?: IReclaimable[];
}

/**
 * Compare a poll of my sessions with what this page saw: the sessions that
 * newly entered a warning (not the one that follows a keep made here: its
 * new deadline is the one the keep answered), and the warned ones that
 * ended. `mine`: my sessions (running and recently ended). Updates `state`.
 */
export function watch(state: IWatchState, mine: IReclaimable[]): IWatchNews {
  const news: IWatchNews = { warned: [], ended: [], gone: [] };
  const byId = new Map(mine.map(a => [a.id, a]));
  for (const a of mine) {
    const key = warningKey(a);
    const n = noticeOf(a);
    if (!key || !n) {
      continue;
    }
    const mine = time(state.kept.get(a.id));
    const afterMyKeep = mine !== null && time(n.kept_until) === mine;
    if (!state.notified.has(key) && !afterMyKeep) {
      news.warned.push(a);
    }
    state.notified.add(key);
    state.warned.add(a.id);
  }
  for (const id of [...state.warned]) {
    const a = byId.get(id);
    if (a && (a.state === 'allocated' || a.state === 'pending')) {
      continue; // warned, or withdrawn for now (activity came back, or kept)
    }
    state.warned.delete(id);
    if (a) {
      news.ended.push(a);
    } else {
      news.gone.push(id);
    }
  }
  return news;
}

/** Remember a keep made from this page (its following warning is not notified again). */
export function rememberKeep(state: IWatchState, id: string, answer: IKeepAnswer): void {
  state.kept.set(id, answer.kept_until);
}

/**
 * The warning notification's text (plain text: the toast renders it as
 * text, cut at 140 characters: the reason and its numbers are on the row).
 */
export function warningMessage(name: string, n: IReclaimNotice): string {
  return `Session ${name} will be reclaimed at ${clock(n.deadline)} (${ruleLabel(n.rule)}).`;
}

/** The text of the notification of a warned session that ended. */
export function endedMessage(name: string, a: IReclaimable): string {
  return `Session ${name} ended: ${localizeTimes(a.release_reason || a.state)}`;
}

/** Whether `a` is the session this Lab runs in (its hub server). */
export function isOwnSession(a: IReclaimable, user: string, server: string): boolean {
  return !!user && a.origin === 'hub' && a.user === user && (a.server_name || '') === server;
}

/** What the own session's warning banner (`reclaimbanner.ts`) says (plain text), or null when nothing is announced. */
export function bannerText(a: IReclaimable, now: number): { head: string; why: string } | null {
  const n = noticeOf(a);
  if (!n) {
    return null;
  }
  const left = countdown(n.deadline, now);
  return {
    head:
      `This session will be ${left === 'being reclaimed' ? 'reclaimed now' : left}` +
      ` (${ruleLabel(n.rule)}), at ${localTime(n.deadline, now)}.`,
    why: localizeTimes(n.reason, now)
  };
}
