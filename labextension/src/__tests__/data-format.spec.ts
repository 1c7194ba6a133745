import { formatBytes, formatRate, formatSeconds } from '../data/format';
import { answerKey, BASE_INTERVAL, MAX_INTERVAL, nextInterval } from '../data/idle';

describe('formatting', () => {
  it('shows bytes in binary units', () => {
    expect(formatBytes(0)).toBe('0 B');
    expect(formatBytes(1023)).toBe('1023 B');
    expect(formatBytes(1024)).toBe('1 KiB');
    expect(formatBytes(8 * 1024 * 1024)).toBe('8 MiB');
    expect(formatBytes(1.25 * 1024 ** 3)).toBe('1.25 GiB');
    expect(formatBytes(1234567)).toBe('≈ 1.18 MiB');
    expect(formatBytes(null)).toBe('–');
  });

  it('shows rates and durations', () => {
    expect(formatRate(10 * 1024 * 1024)).toBe('10 MiB/s');
    expect(formatRate(null)).toBe('');
    expect(formatSeconds(45)).toBe('45 s');
    expect(formatSeconds(185)).toBe('3 min 5 s');
    expect(formatSeconds(7800)).toBe('2 h 10 min');
    expect(formatSeconds(null)).toBe('');
  });
});

describe('polling while nothing changes', () => {
  it('doubles the interval up to the maximum, back to the base on a change', () => {
    let interval = BASE_INTERVAL;
    const seen: number[] = [];
    for (let i = 0; i < 8; i++) {
      interval = nextInterval(interval, false);
      seen.push(interval);
    }
    expect(seen[0]).toBe(2 * BASE_INTERVAL);
    expect(seen[seen.length - 1]).toBe(MAX_INTERVAL);
    expect(nextInterval(MAX_INTERVAL, true)).toBe(BASE_INTERVAL);
  });

  it('sees a change in any answer', () => {
    expect(answerKey([{ a: 1 }], [])).toBe(answerKey([{ a: 1 }], []));
    expect(answerKey([{ a: 1 }], [])).not.toBe(answerKey([{ a: 2 }], []));
  });
});
