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
