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

// --- bytes: memory and folder sizes, in binary units --------------------------

const BINARY_UNITS: Array<[string, number]> = [
  ['PiB', 50],
  ['TiB', 40],
  ['GiB', 30],
  ['MiB', 20],
  ['KiB', 10]
];

/** what a unit's letter means: K, Ki, KiB, KB and k all read as 1024 (as JupyterHub's ByteSpecification) */
const UNIT_POWER: { [letter: string]: number } = { K: 10, M: 20, G: 30, T: 40, P: 50 };
const SIZE = /^(\d+)(?:\.(\d+))?\s*(?:([KMGTP])(?:I?B?)?|B)?$/;

/**
 * A memory or folder size typed by a person, as an exact count of bytes:
 * "34359738368", "32G", "32 GiB", "512 MiB", "1.5G", "2048 B" (units are
 * binary: "1G" is 1073741824, "1.5G" 1610612736). Throws with a message a
 * form can show for anything else (a negative size, a fraction of a byte,
 * an unknown unit).
 */
export function parseBytes(text: string): bigint {
  const m = SIZE.exec(String(text).trim().toUpperCase());
  if (m === null) {
    throw new Error(`not a size: ${JSON.stringify(text)} (examples: 32G, 512 MiB, 1073741824)`);
  }
  const [, whole, fraction = '', letter] = m;
  const power = letter ? UNIT_POWER[letter] : 0;
  const numerator = BigInt(whole + fraction) * BigInt(2) ** BigInt(power);
  const denominator = pow10(fraction.length);
  if (numerator % denominator !== ZERO) {
    throw new Error(`${JSON.stringify(text)} is not a whole number of bytes`);
  }
  return numerator / denominator;
}

/**
 * Bytes for people, in the largest binary unit in which the amount is exact
 * with at most two decimals and under 10000 ("1610612736" is "1.5 GiB",
 * "1074790400" is "1025 MiB"); an amount exact in no such unit (a machine's
 * odd memory size) is shown rounded to two decimals in the largest unit it
 * reaches, marked "≈" ("25274793984" is "≈ 23.54 GiB"). The one formatting
 * of memory and folder sizes everywhere in the UI; sums and comparisons
 * always use the exact amount.
 */
export function formatBytes(value: string | bigint): string {
  const plain = typeof value === 'bigint' ? value.toString() : formatAmount(value);
  if (plain.includes('.') || plain.startsWith('-') || plain === '0') {
    return `${plain} B`;
  }
  const bytes = BigInt(plain);
  const hundredths = bytes * BigInt(100);
  const show = (h: bigint, unit: string) => {
    const frac = (h % BigInt(100)).toString().padStart(2, '0').replace(/0+$/, '');
    return `${h / BigInt(100)}${frac ? `.${frac}` : ''} ${unit}`;
  };
  for (const [unit, power] of BINARY_UNITS) {
    const size = BigInt(2) ** BigInt(power);
    const readable = bytes / size < BigInt(10000) || unit === 'PiB';
    if (bytes >= size && readable && hundredths % size === ZERO) {
      return show(hundredths / size, unit);
    }
  }
  for (const [unit, power] of BINARY_UNITS) {
    const size = BigInt(2) ** BigInt(power);
    if (bytes >= size) {
      return `≈ ${show((hundredths + size / BigInt(2)) / size, unit)}`; // half up
    }
  }
  return `${bytes} B`;
}

/**
 * Bytes as a size field shows them for editing: in binary units when exact
 * ("32 GiB", which parseBytes reads back), else the plain byte count.
 */
export function bytesText(value: string): string {
  const shown = formatBytes(value);
  return shown.startsWith('≈') ? formatAmount(value) : shown;
}

/**
 * A size input's value as the API takes it (a decimal string of bytes), or
 * '' when empty; throws (with a message for the form) when it is not a size.
 */
export function bytesInput(text: string): string {
  return text.trim() === '' ? '' : parseBytes(text).toString();
}
