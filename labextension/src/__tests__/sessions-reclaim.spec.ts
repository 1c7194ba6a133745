import {
  countdown,
  endedMessage,
  IReclaimable,
  IReclaimNotice,
  keepOffered,
  reclaimRow,
  rememberKeep,
  ruleLabel,
  warningMessage,
  watch,
  watchState
} from '../sessions/reclaim';
import { diffSessions } from '../sessions/model';

const T0 = Date.parse('2026-11-24T10:00:00Z');
const at = (s: number) => new Date(T0 + s * 1000).toISOString();

function notice(over: Partial<IReclaimNotice> = {}): IReclaimNotice {
  return {
    rule: 'idle',
    deadline: at(300),
    reason: 'no activity for 300 s (last: ..., the start); the policy\'s idle_timeout is 600 s',
    numbers: { idle_seconds: 300, idle_timeout: 600 },
    warned_at: at(0),
    can_keep: true,
    keeps: 0,
    max_keeps: 2,
    keep_extension: 3600,
    kept_until: null,
    ...over
  };
}

function alloc(id: string, over: Partial<IReclaimable> = {}): IReclaimable {
  return {
    id,
    user: 'alice',
    domain: 'acme',
    project: 'ml',
    resource_group: 'gpu',
    session_type: 'interactive',
    slots: { cpu: '1' },
    state: 'allocated',
    node: 'n1',
    gpus: [],
    reasons: [],
    created_at: at(-600),
    admitted_at: at(-600),
    released_at: null,
    release_reason: null,
    origin: 'api',
    image: null,
    server_name: null,
    command: null,
    apps: [],
    exit_code: null,
    ended_at: null,
    reclaim: null,
    ...over
  };
}

describe('countdown', () => {
  it('counts down to the deadline, rounding up to the second', () => {
    expect(countdown(at(300), T0)).toBe('reclaimed in 5m 00s');
    expect(countdown(at(300), T0 + 299_500)).toBe('reclaimed in 1s');
    expect(countdown(at(65), T0 + 1000)).toBe('reclaimed in 1m 04s');
  });

  it('says the reclaim is under way once the deadline passed', () => {
    expect(countdown(at(300), T0 + 300_000)).toBe('being reclaimed');
    expect(countdown(at(300), T0 + 400_000)).toBe('being reclaimed');
  });

  it('says nothing for a deadline it cannot read', () => {
    expect(countdown('soon', T0)).toBe('');
  });
});

describe('keep offered', () => {
  it('while the policy allows one more and the deadline is ahead', () => {
    expect(keepOffered(notice(), T0)).toBe(true);
    expect(keepOffered(notice({ keeps: 2, can_keep: false }), T0)).toBe(false);
    expect(keepOffered(notice({ keeps: 2 }), T0)).toBe(false);
    expect(keepOffered(notice({ keep_extension: 0, can_keep: false }), T0)).toBe(false);
    expect(keepOffered(notice(), T0 + 300_000)).toBe(false);
  });
});

describe('the row', () => {
  it('shows the deadline, the countdown and the reason of a warned session', () => {
    const row = reclaimRow(alloc('a', { reclaim: notice() }), T0 + 60_000)!;
    expect(row.deadline).toBe(at(300));
    expect(row.countdown).toBe('reclaimed in 4m 00s');
    expect(row.reason).toContain('idle_timeout is 600 s');
    expect(row.canKeep).toBe(true);
    expect(row.keepTip).toBe('Keep it: 1h 00m more after the deadline');
    expect(row.kept).toBe('');
  });

  it('shows how far it was kept', () => {
    const row = reclaimRow(alloc('a', { reclaim: notice({ keeps: 1, kept_until: at(3900) }) }), T0)!;
    expect(row.kept).toMatch(/^kept until (\w{3} \d{1,2} \w{3} )?\d\d:\d\d:\d\d \(1 of 2 keeps\)$/); // local time, with the day when not today
    expect(row.canKeep).toBe(true);
  });

  it('after a keep made here, before the next notice: the keep, no countdown, no Keep', () => {
    const kept = { keeps: 1, max_keeps: 1, kept_until: at(3900), can_keep: false };
    const row = reclaimRow(alloc('a'), T0, kept)!;
    expect(row.deadline).toBe('');
    expect(row.kept).toMatch(/\(1 of 1 keep\)$/);
    expect(row.canKeep).toBe(false);
    expect(reclaimRow(alloc('a'), T0 + 3900_000, kept)).toBeNull(); // that keep is over
    // the poll before the keep still has the notice: the keep wins
    const stale = reclaimRow(alloc('a', { reclaim: notice({ max_keeps: 1 }) }), T0, kept)!;
    expect(stale.deadline).toBe('');
    expect(stale.canKeep).toBe(false);
    expect(stale.kept).toMatch(/\(1 of 1 keep\)$/);
  });

  it('is nothing for a session without a notice, or ended', () => {
    expect(reclaimRow(alloc('a'), T0)).toBeNull();
    expect(reclaimRow(alloc('a', { state: 'released', reclaim: notice() }), T0)).toBeNull();
  });
});

describe('notifications', () => {
  it('notify once per warning, not per poll', () => {
    const state = watchState();
    const warned = alloc('a', { reclaim: notice() });
    expect(watch(state, [alloc('a'), alloc('b')]).warned).toEqual([]);
    expect(watch(state, [warned, alloc('b')]).warned.map(a => a.id)).toEqual(['a']);
    expect(watch(state, [warned, alloc('b')]).warned).toEqual([]);
    expect(watch(state, [warned, alloc('b')]).warned).toEqual([]);
  });

  it('a new warning (withdrawn by activity, then warned again) is notified again', () => {
    const state = watchState();
    watch(state, [alloc('a', { reclaim: notice() })]);
    expect(watch(state, [alloc('a')]).warned).toEqual([]);
    const again = alloc('a', { reclaim: notice({ warned_at: at(900), deadline: at(1200) }) });
    expect(watch(state, [again]).warned.map(a => a.id)).toEqual(['a']);
  });

  it('the warning that follows a keep made here is not notified; one after a keep elsewhere is', () => {
    const state = watchState();
    watch(state, [alloc('a', { reclaim: notice() })]);
    rememberKeep(state, 'a', { keeps: 1, max_keeps: 2, kept_until: at(3900), can_keep: true });
    // the service writes '+00:00' where the keep's answer may say 'Z': the same instant
    const sameInstant = at(3900).replace('.000Z', '+00:00');
    const mine = notice({ warned_at: at(3700), deadline: at(3900), keeps: 1, kept_until: sameInstant });
    expect(watch(state, [alloc('a', { reclaim: mine })]).warned).toEqual([]);
    const elsewhere = notice({ warned_at: at(7400), deadline: at(7500), keeps: 2, kept_until: at(7500) });
    expect(watch(state, [alloc('a', { reclaim: elsewhere })]).warned.map(a => a.id)).toEqual(['a']);
  });

  it('a warned session that ended is reported once with its reason; one no longer listed is gone', () => {
    const state = watchState();
    watch(state, [alloc('a', { reclaim: notice() }), alloc('b', { reclaim: notice() }), alloc('c')]);
    const reclaimed = alloc('a', {
      state: 'released',
      release_reason: 'reclaimed (idle): no activity for 600 s',
      reclaim: notice()
    });
    const news = watch(state, [reclaimed, alloc('c', { state: 'released', release_reason: 'stopped' })]);
    expect(news.ended.map(a => a.id)).toEqual(['a']);
    expect(news.gone).toEqual(['b']);
    expect(news.warned).toEqual([]);
    expect(watch(state, [reclaimed]).ended).toEqual([]);
    expect(endedMessage('abc', reclaimed)).toBe('Session abc ended: reclaimed (idle): no activity for 600 s');
  });

  it('the texts name the session, the rule and the reason', () => {
    expect(ruleLabel('lifetime')).toBe('past its maximum lifetime');
    expect(ruleLabel('other')).toBe('other');
    const text = warningMessage('gpu-1', notice());
    expect(text).toMatch(/^Session gpu-1 will be reclaimed at (\w{3} \d{1,2} \w{3} )?\d\d:\d\d:\d\d \(idle\)\.$/);
  });
});

describe('the poll', () => {
  it('sees a warning, and a keep, as a change (it polls quickly again)', () => {
    const before = [alloc('a')];
    const warned = [alloc('a', { reclaim: notice() })];
    expect(diffSessions(before, warned).changed).toEqual(['a']);
    expect(diffSessions(warned, warned).changed).toEqual([]);
    const kept = [alloc('a', { reclaim: notice({ keeps: 1, kept_until: at(3900) }) })];
    expect(diffSessions(warned, kept).changed).toEqual(['a']);
  });
});
