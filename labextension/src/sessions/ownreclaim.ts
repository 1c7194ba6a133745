/**
 * The reclaim of the session this Lab runs in, and times as people read them
 * (pure: no IO, no DOM). The server extension answers `hubgrid/reclaim` from
 * a few seconds before the announced deadline (its `reclaim_save_ahead`):
 * the Lab saves its open documents then, and keeps the notice to say, once
 * the server is gone, what happened and why, instead of the stock "Server
 * unavailable". Input in the Lab is posted to `hubgrid/input` (activity
 * for idle reclamation), at most once per `INPUT_EVERY`.
 */

import { IReclaimNotice, ruleLabel } from './reclaim';
import { localizeTimes, localTime } from './times';

/** How often input in the Lab is reported while someone types or clicks (ms). */
export const INPUT_EVERY = 20_000;

/** How long after the deadline a lost connection is still read as the reclaim (ms). */
export const RECLAIM_WINDOW = 10 * 60_000;

function time(iso: string | null | undefined): number | null {
  if (!iso) {
    return null;
  }
  const t = Date.parse(iso);
  return Number.isNaN(t) ? null : t;
}

/** What the server extension answers when the reclaim is due. */
export interface IDueReclaim {
  reclaim: IReclaimNotice;
  /** the notice's identity (sent back as `seen`: the next call waits for another) */
  key: string;
  save_ahead: number;
  /** the session's allocation (the final record is asked for by it), "" if unknown */
  allocation?: string;
}

/** The final record of the reclaim (`reclaim/events?kind=reclaimed`'s details): as of the stop. */
export interface IFinalReclaim {
  /** when the session was really stopped (ISO) */
  stopped_at: string;
  /** why, with the numbers as of the stop */
  reason: string;
  [name: string]: unknown;
}

/** What this Lab remembers of its own reclaim. */
export interface IOwnReclaim {
  notice: IReclaimNotice;
  /** when the documents were saved (ms), or null if saving failed */
  savedAt: number | null;
  /** how many documents had unsaved changes */
  dirty: number;
  /** why saving failed, "" if it did not */
  saveError: string;
  /** copies written next to files that had changed on disk (their paths) */
  copies?: string[];
  /** documents that could not be written at all */
  unsaved?: number;
  /** the session's allocation */
  allocation?: string;
  /** the service's final record, once read (after the stop) */
  final?: IFinalReclaim | null;
}

/** Whether a lost connection is this reclaim: from shortly before its deadline for a while after. */
export function isReclaimed(own: IOwnReclaim | null, now: number): boolean {
  const deadline = time(own?.notice.deadline);
  if (!own || deadline === null) {
    return false;
  }
  const ahead = 60_000; // the pass runs at the deadline; a clock a little ahead of ours
  return now >= deadline - ahead && now <= deadline + RECLAIM_WINDOW;
}

/** The dialog that replaces "Server unavailable" after this session's reclaim. */
export interface IReclaimedText {
  title: string;
  /** plain-text paragraphs (rendered as text) */
  lines: string[];
}

export function reclaimedText(own: IOwnReclaim, now: number = Date.now()): IReclaimedText {
  const n = own.notice;
  const f = own.final;
  // the final record's time and numbers (as of the stop); without it (the
  // service could not be read) the warning's, said as such
  const lines = f
    ? [
        `hubgrid stopped this session at ${localTime(f.stopped_at, now)} (${ruleLabel(n.rule)}) ` +
          'to give its resources back to others.',
        `Why: ${localizeTimes(f.reason, now)}.`
      ]
    : [
        `hubgrid reclaimed this session (${ruleLabel(n.rule)}), due at ${localTime(n.deadline, now)}, ` +
          'to give its resources back to others.',
        `Why, as announced at ${localTime(n.warned_at, now)}: ${localizeTimes(n.reason, now)}.`
      ];
  const copies = own.copies ?? [];
  if (own.savedAt !== null) {
    lines.push(
      own.dirty > 0
        ? `Your ${own.dirty} open document${own.dirty === 1 ? '' : 's'} with unsaved changes ` +
            `${own.dirty === 1 ? 'was' : 'were'} saved at ${localTime(new Date(own.savedAt).toISOString(), now)}.`
        : 'Your open documents had no unsaved changes.'
    );
  } else {
    lines.push(`Your open documents could not be saved: ${own.saveError || 'unknown error'}.`);
  }
  if (copies.length > 0) {
    lines.push(
      `${copies.length === 1 ? 'One file' : `${copies.length} files`} had changed on disk since ` +
        'you opened or saved them: the files were left as they were on disk, and your ' +
        `version was saved next to them as ${copies.join(', ')}.`
    );
  }
  lines.push(
    'Files in your hubgrid folders are kept. In a container session, files saved outside ' +
      'your folders ended with it. Start the session again to go on working.'
  );
  return { title: 'Your session was reclaimed', lines };
}

/**
 * Where the service's final record of a reclaim is read once the server is
 * gone: the service's console API under the hub (its login cookie, OAuth
 * through the hub); "" outside a hub or without an allocation.
 */
export function finalRecordUrl(hubPrefix: string, allocation: string): string {
  if (!hubPrefix || !allocation) {
    return '';
  }
  const prefix = hubPrefix.endsWith('/') ? hubPrefix : `${hubPrefix}/`;
  const base = prefix.endsWith('hub/') ? prefix.slice(0, -'hub/'.length) : '/';
  return `${base}services/hubgrid/console/hubgrid/api/reclaim/events?kind=reclaimed&allocation=${encodeURIComponent(allocation)}`;
}

/** The console page whose visit logs this browser in to the service. */
export function consoleUrl(recordUrl: string): string {
  return recordUrl.split('hubgrid/api/')[0];
}

/** Whether input now is reported (the last report is `INPUT_EVERY` old). */
export function inputDue(lastSent: number | null, now: number, every: number = INPUT_EVERY): boolean {
  return lastSent === null || now - lastSent >= every;
}

/**
 * The hub's page that starts this server again (its spawn form, as the
 * hub's own "Restart" opens); "" outside a hub.
 */
export function restartUrl(hubHost: string, hubPrefix: string, user: string, server: string): string {
  if (!hubPrefix) {
    return '';
  }
  const prefix = hubPrefix.endsWith('/') ? hubPrefix : `${hubPrefix}/`;
  const enc = encodeURIComponent;
  return server && user
    ? `${hubHost}${prefix}spawn/${enc(user)}/${enc(server)}`
    : `${hubHost}${prefix}spawn`;
}
