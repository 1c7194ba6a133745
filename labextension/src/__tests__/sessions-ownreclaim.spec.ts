import {
  consoleUrl,
  finalRecordUrl,
  inputDue,
  INPUT_EVERY,
  IOwnReclaim,
  isReclaimed,
  RECLAIM_WINDOW,
  reclaimedText,
  restartUrl
} from '../sessions/ownreclaim';
import { responseMessage } from '../request';
import { IReclaimNotice, warningMessage } from '../sessions/reclaim';
import { localizeTimes, localTime } from '../sessions/times';

const T0 = Date.parse('2026-11-24T10:00:00Z');
const at = (s: number) => new Date(T0 + s * 1000).toISOString();
const pad = (n: number) => String(n).padStart(2, '0');
/** the local clock of an instant, as the browser shows it */
const hms = (ms: number) => {
  const d = new Date(ms);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
};

function notice(over: Partial<IReclaimNotice> = {}): IReclaimNotice {
  return {
    rule: 'idle',
    deadline: at(120),
    reason: 'no activity for 60 s (last: 2026-11-24 09:59:00 UTC, the hub); the policy\'s idle_timeout is 120 s',
    numbers: { idle_seconds: 60, idle_timeout: 120 },
    warned_at: at(60),
    can_keep: false,
    keeps: 0,
    max_keeps: 0,
    keep_extension: 0,
    kept_until: null,
    ...over
  };
}

function own(over: Partial<IOwnReclaim> = {}): IOwnReclaim {
  return { notice: notice(), savedAt: T0 + 100_000, dirty: 1, saveError: '', ...over };
}

describe('times as people read them', () => {
  it('today: the local clock; another day: the day too; none: empty', () => {
    expect(localTime(at(5), T0)).toBe(hms(T0 + 5000));
    const lastYear = localTime('2025-03-02T10:00:00Z', T0);
    expect(lastYear).toContain('2025');
    expect(lastYear).toContain(hms(Date.parse('2025-03-02T10:00:00Z')));
    const otherDay = localTime(new Date(T0 - 3 * 86400_000).toISOString(), T0);
    expect(otherDay).not.toContain('2026');
    expect(otherDay).toMatch(/^\w{3} \d{1,2} \w{3} \d\d:\d\d:\d\d$/);
    expect(localTime(null, T0)).toBe('');
    expect(localTime('not a time', T0)).toBe('');
  });

  it('the service\'s times in a text become local times, no ISO and no microseconds left', () => {
    const utc = localizeTimes('no activity for 60 s (last: 2026-11-24 09:59:00 UTC, the hub)', T0);
    expect(utc).toBe(`no activity for 60 s (last: ${hms(Date.parse('2026-11-24T09:59:00Z'))}, the hub)`);
    const iso = localizeTimes('running since 2026-11-24T09:00:00.123456+00:00, longer than', T0);
    expect(iso).toBe(`running since ${hms(Date.parse('2026-11-24T09:00:00Z'))}, longer than`);
    expect(localizeTimes('nothing to change', T0)).toBe('nothing to change');
  });

  it('the warning says the deadline in local time', () => {
    expect(warningMessage('gpu-1', notice())).toMatch(/ at (\w{3} \d{1,2} \w{3} )?\d\d:\d\d:\d\d \(idle\)\.$/);
    expect(warningMessage('gpu-1', notice())).not.toContain('2026-11-24T');
  });
});

describe('this Lab\'s own reclaim', () => {
  it('a lost connection is the reclaim from shortly before its deadline for a while after', () => {
    expect(isReclaimed(null, T0 + 120_000)).toBe(false);
    expect(isReclaimed(own(), T0)).toBe(false); // two minutes ahead: something else
    expect(isReclaimed(own(), T0 + 119_000)).toBe(true);
    expect(isReclaimed(own(), T0 + 125_000)).toBe(true);
    expect(isReclaimed(own(), T0 + 120_000 + RECLAIM_WINDOW + 1)).toBe(false);
    expect(isReclaimed(own({ notice: notice({ deadline: 'x' }) }), T0 + 120_000)).toBe(false);
  });

  it('the dialog says when it was really stopped, which rule, why as of the stop (local times) and what was saved', () => {
    const final = {
      stopped_at: at(127),
      reason: 'no activity for 187 s when it was stopped at 2026-11-24 10:02:07 UTC ' +
        '(last: 2026-11-24 09:59:00 UTC, the hub); the policy\'s idle_timeout is 120 s',
      idle_seconds: 187
    };
    const text = reclaimedText(own({ final }), T0 + 130_000);
    expect(text.title).toBe('Your session was reclaimed');
    expect(text.lines[0]).toBe(`hubgrid stopped this session at ${hms(T0 + 127_000)} (idle) ` +
      'to give its resources back to others.');
    expect(text.lines[1]).toContain('no activity for 187 s when it was stopped at');
    expect(text.lines[1]).not.toContain('60 s'); // not the warning's numbers
    expect(text.lines[1]).toContain("the policy's idle_timeout is 120 s");
    expect(text.lines[1]).toContain(`last: ${hms(Date.parse('2026-11-24T09:59:00Z'))}`);
    expect(text.lines[1]).not.toContain('UTC');
    expect(text.lines[2]).toBe(`Your 1 open document with unsaved changes was saved at ${hms(T0 + 100_000)}.`);
    expect(reclaimedText(own({ dirty: 3 }), T0).lines[2]).toContain('3 open documents with unsaved changes were saved');
    expect(reclaimedText(own({ dirty: 0 }), T0).lines[2]).toBe('Your open documents had no unsaved changes.');
    const failed = reclaimedText(own({ savedAt: null, saveError: 'disk full' }), T0);
    expect(failed.lines[2]).toBe('Your open documents could not be saved: disk full.');
    expect(text.lines[3]).toContain('Start the session again');
  });

  it('without the final record the dialog says the warning\'s numbers as the warning\'s, and the deadline as due', () => {
    const text = reclaimedText(own(), T0 + 130_000);
    expect(text.lines[0]).toBe(`hubgrid reclaimed this session (idle), due at ${hms(T0 + 120_000)}, ` +
      'to give its resources back to others.');
    expect(text.lines[0]).not.toContain('stopped');
    expect(text.lines[1]).toContain(`as announced at ${hms(T0 + 60_000)}: no activity for 60 s`);
  });

  it('the final record is read from the service under the hub, by allocation', () => {
    const url = finalRecordUrl('/hub/', 'a b');
    expect(url).toBe('/services/hubgrid/console/hubgrid/api/reclaim/events?kind=reclaimed&allocation=a%20b');
    expect(consoleUrl(url)).toBe('/services/hubgrid/console/');
    expect(finalRecordUrl('/pre/hub/', 'x')).toMatch(/^\/pre\/services\/hubgrid\//);
    expect(finalRecordUrl('', 'x')).toBe('');
    expect(finalRecordUrl('/hub/', '')).toBe('');
  });

  it('input is reported at most once per interval', () => {
    expect(inputDue(null, T0)).toBe(true);
    expect(inputDue(T0, T0 + INPUT_EVERY - 1)).toBe(false);
    expect(inputDue(T0, T0 + INPUT_EVERY)).toBe(true);
  });

  it('start it again: the hub\'s spawn page of this server; none outside a hub', () => {
    expect(restartUrl('', '/hub/', 'ann', '')).toBe('/hub/spawn');
    expect(restartUrl('', '/hub', 'ann', 'gpu 1')).toBe('/hub/spawn/ann/gpu%201');
    expect(restartUrl('https://h', '/hub/', 'ann', 'x')).toBe('https://h/hub/spawn/ann/x');
    expect(restartUrl('', '', 'ann', '')).toBe('');
  });
});

describe('a call to a server that is gone', () => {
  it('says so for people instead of the hub\'s raw text; other errors keep the service\'s message', () => {
    const raw = 'JupyterHub server no longer running at /user/ann/hubgrid/api/me';
    expect(responseMessage(424, { message: raw })).toContain('no longer running (stopped, or reclaimed)');
    expect(responseMessage(424, raw)).not.toContain('/user/ann');
    expect(responseMessage(409, { message: 'busy' })).toBe('busy');
    expect(responseMessage(500, 'plain')).toBe('plain');
  });
});
