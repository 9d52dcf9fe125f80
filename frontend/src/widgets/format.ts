/**
 * Small formatters shared by the exhibit views: avals as JAX writes them, params in one line,
 * bytes and milliseconds for people.
 */

/** The fields of a protocol `AvalView` this module reads. */
export interface AvalLike {
  shape: readonly number[];
  dtype: string;
  weak_type?: boolean | null;
  short: string;
}

/**
 * An aval as the jaxpr printout writes it, with the weak-type mark of `str(aval)`: `aval.str_short()`
 * (`float32[3]`) with the dtype shortened (`f32[3]`) and a `~` prefix when the aval is weakly
 * typed (it came from a Python scalar), e.g. `~f32[]`.
 */
export function avalText(aval: AvalLike): string {
  let short = aval.short.startsWith('~') ? aval.short.slice(1) : aval.short;
  if (short.startsWith(aval.dtype)) short = shortDtypeName(aval.dtype) + short.slice(aval.dtype.length);
  return aval.weak_type ? `~${short}` : short;
}

/**
 * A dtype name as the jaxpr printout writes it (`float32` -> `f32`, `uint8` -> `u8`,
 * `complex64` -> `c64`, `bool` stays): the rule of `jax._src.dtypes.short_dtype_name`.
 */
export function shortDtypeName(dtype: string): string {
  return dtype.replace('float', 'f').replace('uint', 'u').replace('int', 'i').replace('complex', 'c');
}

/**
 * `key=value` pairs in JAX's order, `name` first (as JAX prints `jit[name=_where ...]`), cut to
 * `max` characters with an ellipsis.
 */
export function compactParams(
  params: Readonly<Record<string, string | undefined>>,
  max = 80,
): string {
  const entries = Object.entries(params);
  const text = [...entries.filter(([k]) => k === 'name'), ...entries.filter(([k]) => k !== 'name')]
    .map(([k, v]) => `${k}=${(v ?? '').replace(/\s+/g, ' ')}`)
    .join(' ');
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'] as const;

/** Bytes in binary units: `0 B`, `512 B`, `1.5 KiB`, `3.00 MiB`. Negative means "not reported". */
export function humanBytes(bytes: number): string {
  if (!Number.isFinite(bytes) || bytes < 0) return 'not reported';
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < BYTE_UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  if (unit === 0) return `${value} B`;
  const digits = value >= 100 ? 0 : value >= 10 ? 1 : 2;
  return `${value.toFixed(digits)} ${BYTE_UNITS[unit]}`;
}

/** Milliseconds with three significant digits: `0.0421 ms`, `4.21 ms`, `421 ms`, `4.21 s`. */
export function formatMs(ms: number): string {
  if (!Number.isFinite(ms)) return '—';
  if (ms >= 1000) return `${(ms / 1000).toPrecision(3)} s`;
  if (ms === 0) return '0 ms';
  return `${Number(ms.toPrecision(3))} ms`;
}

/** A plain count with thousands separators (`1,234,567`), and up to 3 decimals for fractions. */
export function formatCount(n: number): string {
  return n.toLocaleString('en-US', { maximumFractionDigits: 3 });
}

/**
 * One element of an array of `dtype` as the value previews print it (the backend's
 * `preview_value`: numpy with `precision=6`, `floatmode='maxprec'`), for values the protocol
 * sends as JSON numbers. A float is written with the shortest digits that round back to the
 * same value *in its dtype* (float32: `Math.fround`; float16/bfloat16: rounded to their 11/8-bit
 * significands), at most 6 after the point, rounding the exact value half to even as numpy does;
 * scientific (`1e-05`, `1.234568e+07`) below 1e-4 and from `10 ** min(8, np.finfo(dtype).precision)`
 * (1e6 for float32, 1e8 for float64), as numpy decides for a single value.
 * A bare trailing point is completed (`1.0`, `-0.0`) as for a lone scalar preview. So a float32
 * 0.1 is `0.1`, never `0.10000000149011612`, and a scalar never shows more digits than the same
 * value inside an array preview. Integers as they are, booleans `True`/`False`, non-finite values
 * `nan`/`inf`/`-inf` (also when sent as those strings), `—` for a missing value. The cases in
 * `format-cases.json` are checked here and against numpy (backend/tests/test_value_format.py).
 */
export function formatScalar(value: number | string | boolean | null | undefined, dtype: string): string {
  if (value === null || value === undefined) return '—';
  if (typeof value === 'boolean') return value ? 'True' : 'False';
  if (typeof value === 'string') return value;
  if (dtype === 'bool') return value ? 'True' : 'False';
  if (Number.isNaN(value)) return 'nan';
  if (!Number.isFinite(value)) return value > 0 ? 'inf' : '-inf';
  if (/^u?int/.test(dtype)) return String(value);
  const x = roundTo(value, dtype);
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  const abs = Math.abs(x);
  const [mant, exp] = shortestDigits(x, dtype);
  // numpy compares with its thresholds in the dtype (a float32 1e-4 is not below 1e-4).
  if (abs >= roundTo(EXP_CUTOFF[dtype] ?? 1e8, dtype) || abs < roundTo(1e-4, dtype)) {
    // Scientific, as numpy writes it: mantissa digits after the point capped at PRECISION,
    // exponent signed with at least two digits.
    const [m, e] = (mant.split('.')[1] ?? '').length > PRECISION ? roundedDigits(x, PRECISION + 1) : [mant, exp];
    return `${m}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`;
  }
  // Positional: String() of a number from 1e-4 to 1e8 writes its shortest digits in full.
  const positional = String(Number(`${mant}e${exp}`));
  const text = (positional.split('.')[1] ?? '').length > PRECISION ? roundHalfEven(x.toFixed(100), PRECISION) : positional;
  return text.includes('.') ? text : `${text}.0`;
}

/** numpy's `precision` print option in the backend's previews: digits after the point. */
const PRECISION = 6;

/** Where numpy switches to scientific: `10 ** min(8, np.finfo(dtype).precision)`. */
const EXP_CUTOFF: Readonly<Record<string, number>> = { float64: 1e8, float32: 1e6, float16: 1e3, bfloat16: 1e2 };

/** Significand bits (with the implicit one) and smallest normal exponent of the small floats. */
const SMALL_FLOATS: Readonly<Record<string, { bits: number; minExp: number; max: number }>> = {
  float16: { bits: 11, minExp: -14, max: 65504 },
  bfloat16: { bits: 8, minExp: -126, max: 3.3895313892515355e38 },
};

/** `x` rounded (half to even) to the nearest value of `dtype`; float64 and unknown dtypes as is. */
function roundTo(x: number, dtype: string): number {
  if (dtype === 'float32') return Math.fround(x);
  const f = SMALL_FLOATS[dtype];
  if (f === undefined || x === 0) return x;
  const exp = Math.max(Math.floor(Math.log2(Math.abs(x))), f.minExp);
  const ulp = 2 ** (exp - (f.bits - 1));
  const q = x / ulp; // exact: a power-of-two scaling
  let r = Math.round(q);
  if (Math.abs(q - Math.trunc(q)) === 0.5 && r % 2 !== 0) r -= 1; // ties to even
  const y = r * ulp;
  // Past the largest finite value by half an ulp or more: overflow, as a cast does.
  return Math.abs(y) > f.max ? (y > 0 ? Infinity : -Infinity) : y;
}

/**
 * The shortest significand (`-1.5`) and exponent that round back to `x` in `dtype`: `x` rounded
 * half to even to 1, 2, ... significant digits (as numpy's Dragon4 picks the nearest of the
 * shortest candidates, ties to even; `toPrecision` would round ties up).
 */
function shortestDigits(x: number, dtype: string): [string, number] {
  const maxDigits = dtype === 'float32' ? 9 : dtype in SMALL_FLOATS ? 5 : 17;
  for (let p = 1; p < maxDigits; p++) {
    const [m, e] = roundedDigits(x, p);
    if (roundTo(Number(`${m}e${e}`), dtype) === x) return [m, e];
  }
  return roundedDigits(x, maxDigits);
}

/** `x` rounded half to even to `p` significant digits: [`-1.25`, exponent], zeros trimmed. */
function roundedDigits(x: number, p: number): [string, number] {
  const [exact = '', e = '0'] = x.toExponential(100).split('e');
  const m = roundHalfEven(exact, p - 1);
  // 9.96 to 2 digits is 10: one more in the exponent
  if (Math.abs(Number(m)) >= 10) return [x < 0 ? '-1' : '1', Number(e) + 1];
  return [m, Number(e)];
}

/** Decimal text (`-0.0078125000…`) rounded half to even at `digits` after the point, trailing zeros (and a bare point) dropped. */
function roundHalfEven(exact: string, digits: number): string {
  const negative = exact.startsWith('-');
  const [whole, fraction = ''] = (negative ? exact.slice(1) : exact).split('.');
  const kept = (whole ?? '0') + fraction.slice(0, digits).padEnd(digits, '0');
  const rest = fraction.slice(digits);
  let up = false;
  if (rest.length > 0 && rest[0]! > '5') up = true;
  else if (rest.length > 0 && rest[0] === '5') up = /[1-9]/.test(rest.slice(1)) || Number(kept[kept.length - 1]) % 2 === 1;
  let n = BigInt(kept);
  if (up) n += 1n;
  const s = n.toString().padStart(digits + 1, '0');
  const intPart = s.slice(0, s.length - digits);
  const fracPart = s.slice(s.length - digits).replace(/0+$/, '');
  return `${negative ? '-' : ''}${intPart}${fracPart ? `.${fracPart}` : ''}`;
}

/** The fields of a protocol `SourceLoc` the source formatters read. */
export interface SourceLike {
  line: number;
  function?: string | null;
  callers?: readonly { line: number; function?: string | null }[] | null;
}

/**
 * An eqn's place in the snippet in a table cell: its line, then the lines of the snippet
 * frames that called it, innermost first (`line 26 ← 41 ← 50`); `—` without a place.
 */
export function sourceShort(source: SourceLike | null | undefined): string {
  if (!source) return '—';
  const callers = source.callers ?? [];
  return [`line ${source.line}`, ...callers.map((c) => String(c.line))].join(' ← ');
}

/**
 * The same place in words, for a tooltip or a card:
 * `line 26 in layer_norm, called from line 41 in block, called from line 50 in f`.
 */
export function sourceLong(source: SourceLike | null | undefined): string {
  if (!source) return 'no line of the snippet';
  const at = (line: number, fn: string | null | undefined): string =>
    fn && fn !== '<module>' ? `line ${line} in ${fn}` : `line ${line}`;
  const callers = source.callers ?? [];
  return [at(source.line, source.function), ...callers.map((c) => `called from ${at(c.line, c.function)}`)].join(', ');
}

/**
 * What a value left out of a summary shows until its whole event arrives (details on demand:
 * the page asks for the steps near the stepper's cursor once the run has ended).
 */
export const LOADING = '(loading…)';
