import { bytesInput, formatBytes, parseBytes } from '../amounts';

describe('parseBytes', () => {
  it('reads plain bytes and binary units, exactly', () => {
    expect(parseBytes('34359738368')).toBe(BigInt('34359738368'));
    expect(parseBytes('32G')).toBe(BigInt(32) * BigInt(2) ** BigInt(30));
    expect(parseBytes('32 GiB')).toBe(BigInt('34359738368'));
    expect(parseBytes('512 MiB')).toBe(BigInt(512 * 1024 * 1024));
    expect(parseBytes('512m')).toBe(BigInt(512 * 1024 * 1024));
    expect(parseBytes('1.5G')).toBe(BigInt(1610612736));
    expect(parseBytes('2048 B')).toBe(BigInt(2048));
    expect(parseBytes(' 1 KB ')).toBe(BigInt(1024));
    expect(parseBytes('8 PiB')).toBe(BigInt(8) * BigInt(2) ** BigInt(50));
  });

  it('keeps sizes past 2^53 exact', () => {
    expect(parseBytes('9007199254740993')).toBe(BigInt('9007199254740993'));
    expect(parseBytes('7.5 PiB')).toBe(BigInt(15) * BigInt(2) ** BigInt(49));
    expect(() => parseBytes('7.999999999 PiB')).toThrow('not a whole number of bytes');
  });

  it('refuses what is not a whole number of bytes or not a size', () => {
    expect(() => parseBytes('0.5')).toThrow('not a whole number of bytes');
    expect(() => parseBytes('1.1K')).toThrow('not a whole number of bytes');
    expect(() => parseBytes('-1G')).toThrow('not a size');
    expect(() => parseBytes('1e9')).toThrow('not a size');
    expect(() => parseBytes('12 parsecs')).toThrow('examples: 32G');
    expect(() => parseBytes('')).toThrow('not a size');
  });

  it('gives a form the API value, or nothing when empty', () => {
    expect(bytesInput('  ')).toBe('');
    expect(bytesInput('1G')).toBe('1073741824');
    expect(() => bytesInput('1 Q')).toThrow();
  });
});

describe('formatBytes', () => {
  it('shows bytes in the largest exact binary unit', () => {
    expect(formatBytes('0')).toBe('0 B');
    expect(formatBytes('1023')).toBe('1023 B');
    expect(formatBytes('1610612736')).toBe('1.5 GiB');
    expect(formatBytes('1074790400')).toBe('1025 MiB');
    expect(formatBytes(BigInt('34359738368'))).toBe('32 GiB');
  });

  it('marks an amount exact in no unit with ≈ (the widgets\' 200000014 B)', () => {
    expect(formatBytes('200000014')).toBe('≈ 190.73 MiB');
    expect(formatBytes('25274793984')).toBe('≈ 23.54 GiB');
  });

  it('reads back what it shows when exact', () => {
    for (const text of ['1.5 GiB', '1025 MiB', '32 GiB', '3 KiB']) {
      expect(formatBytes(parseBytes(text))).toBe(text);
    }
  });
});
