/**
 * Exact amounts: the service sends resource amounts as decimal strings
 * ("0.3" GPU, "2147483648" bytes); they are added, compared and shown
 * with integer arithmetic (BigInt units at a decimal scale), never floats,
 * so three sessions of 0.3 GPU show 0.9, not 0.8999999999999999.
 */

/** A decimal value: units / 10^scale. */
interface Exact {
  units: bigint;
  scale: number;
}

const AMOUNT = /^([+-])?(\d+)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/;
const ZERO = BigInt(0);
const TEN = BigInt(10);

function pow10(n: number): bigint {
  let result = BigInt(1);
  for (let i = 0; i < n; i++) {
    result *= TEN;
  }
  return result;
}

/** Parse a decimal string ("0.3", "-12", "1E+1"); throws on anything else. */
function parse(text: string): Exact {
  const m = AMOUNT.exec(String(text).trim());
  if (m === null) {
    throw new Error(`not a decimal amount: ${JSON.stringify(text)}`);
  }
  const [, sign, whole, fraction = '', exponent = '0'] = m;
  const exp = parseInt(exponent, 10);
  if (Math.abs(exp) > 1000) {
    throw new Error(`amount out of range: ${JSON.stringify(text)}`);
  }
  let units = BigInt(whole + fraction);
  let scale = fraction.length - exp;
  if (scale < 0) {
    units *= pow10(-scale);
    scale = 0;
  }
  return { units: sign === '-' ? -units : units, scale };
}

function rescale(value: Exact, scale: number): bigint {
  return value.units * pow10(scale - value.scale);
}

/** The plain decimal string of a value, without trailing fractional zeros. */
function render(value: Exact): string {
  let { units, scale } = value;
  while (scale > 0 && units % TEN === ZERO) {
    units /= TEN;
    scale--;
  }
  const negative = units < ZERO;
  const digits = (negative ? -units : units).toString().padStart(scale + 1, '0');
  const whole = digits.slice(0, digits.length - scale);
  const fraction = digits.slice(digits.length - scale);
  return (negative ? '-' : '') + whole + (fraction ? `.${fraction}` : '');
}

/** The exact sum of decimal strings ("0.3" + "0.3" + "0.3" is "0.9"). */
export function sumAmounts(values: readonly string[]): string {
  const parsed = values.map(parse);
  const scale = Math.max(0, ...parsed.map(v => v.scale));
  const units = parsed.reduce((acc, v) => acc + rescale(v, scale), ZERO);
  return render({ units, scale });
}

/** a - b, exactly ("1" - "0.7" is "0.3"). */
export function subtractAmounts(a: string, b: string): string {
  const x = parse(a);
  const y = parse(b);
  const scale = Math.max(x.scale, y.scale);
  return render({ units: rescale(x, scale) - rescale(y, scale), scale });
}

/** -1, 0 or 1 as a is less than, equal to or greater than b. */
export function compareAmounts(a: string, b: string): -1 | 0 | 1 {
  const x = parse(a);
  const y = parse(b);
  const scale = Math.max(x.scale, y.scale);
  const d = rescale(x, scale) - rescale(y, scale);
  return d < ZERO ? -1 : d > ZERO ? 1 : 0;
}

export interface IFormatOptions {
  /** round (half away from zero) to at most this many fraction digits */
  maxFractionDigits?: number;
}

/**
 * A decimal string for display: "0.900" is "0.9", "1E+1" is "10", "-0" is "0";
 * with maxFractionDigits 2, "0.125" is "0.13".
 */
export function formatAmount(value: string, options: IFormatOptions = {}): string {
  const exact = parse(value);
  const max = options.maxFractionDigits;
  if (max === undefined || exact.scale <= max) {
    return render(exact);
  }
  if (!Number.isInteger(max) || max < 0) {
    throw new Error(`maxFractionDigits must be a non-negative integer, not ${max}`);
  }
  const divisor = pow10(exact.scale - max);
  const negative = exact.units < ZERO;
  const magnitude = negative ? -exact.units : exact.units;
  let units = magnitude / divisor;
  if ((magnitude % divisor) * BigInt(2) >= divisor) {
    units += BigInt(1);
  }
  return render({ units: negative ? -units : units, scale: max });
}
