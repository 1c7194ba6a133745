import { bannerText, IReclaimable, isOwnSession } from '../sessions/reclaim';

const T0 = Date.parse('2026-11-24T10:00:00Z');
const at = (s: number) => new Date(T0 + s * 1000).toISOString();

function session(over: Partial<IReclaimable> = {}): IReclaimable {
  return {
    id: 'a1',
    user: 'alice',
    origin: 'hub',
    server_name: '',
    state: 'allocated',
    reclaim: {
      rule: 'idle',
      deadline: at(120),
      reason: 'no activity for 60 s (last: 2026-11-24 10:00:00 UTC, the start); the policy\'s idle_timeout is 120 s',
      numbers: { idle_seconds: 60, idle_timeout: 120 },
      warned_at: at(60),
      can_keep: false,
      keeps: 0,
      max_keeps: 0,
      keep_extension: 0,
      kept_until: null
    },
    ...over
  } as unknown as IReclaimable;
}

describe('the own session\'s reclaim banner', () => {
  it('counts down to the deadline, says the rule and why, in local time', () => {
    const text = bannerText(session(), T0 + 55_000)!;
    expect(text.head).toMatch(/^This session will be reclaimed in 1m 05s \(idle\), at \d\d:\d\d:\d\d\.$/);
    expect(text.why).toContain("idle_timeout is 120 s");
    expect(text.why).not.toContain('UTC');
    expect(bannerText(session(), T0 + 56_000)!.head).toContain('reclaimed in 1m 04s');
    expect(bannerText(session(), T0 + 121_000)!.head).toContain('will be reclaimed now');
  });

  it('nothing announced, or the session ended: no banner', () => {
    expect(bannerText(session({ reclaim: null }), T0)).toBeNull();
    expect(bannerText(session({ state: 'released' } as Partial<IReclaimable>), T0)).toBeNull();
  });

  it('is only for the server this Lab runs in', () => {
    expect(isOwnSession(session(), 'alice', '')).toBe(true);
    expect(isOwnSession(session({ server_name: 'gpu' } as Partial<IReclaimable>), 'alice', '')).toBe(false);
    expect(isOwnSession(session({ server_name: 'gpu' } as Partial<IReclaimable>), 'alice', 'gpu')).toBe(true);
    expect(isOwnSession(session({ user: 'bob' } as Partial<IReclaimable>), 'alice', '')).toBe(false);
    expect(isOwnSession(session({ origin: 'api' } as Partial<IReclaimable>), 'alice', '')).toBe(false);
    expect(isOwnSession(session(), '', '')).toBe(false);
  });
});
