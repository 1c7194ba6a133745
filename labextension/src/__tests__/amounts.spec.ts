import {
  compareAmounts,
  formatAmount,
  subtractAmounts,
  sumAmounts
} from '../amounts';

describe('sumAmounts', () => {
  it('adds three 0.3 GPU shares to exactly 0.9', () => {
    expect(sumAmounts(['0.3', '0.3', '0.3'])).toBe('0.9');
  });

  it('adds 0.1 and 0.2 to exactly 0.3', () => {
    expect(sumAmounts(['0.1', '0.2'])).toBe('0.3');
  });

  it('keeps a sum of nothing and of zeros at 0', () => {
    expect(sumAmounts([])).toBe('0');
    expect(sumAmounts(['0', '0.00'])).toBe('0');
  });

  it('adds byte counts past 2^53 exactly', () => {
    expect(sumAmounts(['9007199254740993', '1'])).toBe('9007199254740994');
  });

  it('adds mixed scales, exponents and signs', () => {
    expect(sumAmounts(['1E+1', '0.25', '-0.5'])).toBe('9.75');
  });
});

describe('subtractAmounts', () => {
  it('subtracts exactly', () => {
    expect(subtractAmounts('1', '0.7')).toBe('0.3');
    expect(subtractAmounts('0.5', '0.75')).toBe('-0.25');
  });
});

describe('compareAmounts', () => {
  it('orders values of different scales', () => {
    expect(compareAmounts('0.9', '0.90')).toBe(0);
    expect(compareAmounts('0.3', '0.25')).toBe(1);
    expect(compareAmounts('-1', '0')).toBe(-1);
  });
});

describe('formatAmount', () => {
  it('drops trailing fraction zeros', () => {
    expect(formatAmount('0.900')).toBe('0.9');
    expect(formatAmount('2.000')).toBe('2');
    expect(formatAmount('-0.0')).toBe('0');
    expect(formatAmount('1E+1')).toBe('10');
  });

  it('rounds half away from zero when asked', () => {
    expect(formatAmount('0.125', { maxFractionDigits: 2 })).toBe('0.13');
    expect(formatAmount('-0.125', { maxFractionDigits: 2 })).toBe('-0.13');
    expect(formatAmount('0.124', { maxFractionDigits: 2 })).toBe('0.12');
    expect(formatAmount('0.3', { maxFractionDigits: 2 })).toBe('0.3');
  });

  it('refuses what is not a decimal string', () => {
    expect(() => formatAmount('0.3 GPU')).toThrow('not a decimal amount');
    expect(() => formatAmount('NaN')).toThrow('not a decimal amount');
    expect(() => formatAmount('')).toThrow('not a decimal amount');
  });
});
