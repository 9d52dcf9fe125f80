import { describe, expect, it } from 'vitest';
import cases from './format-cases.json';
import { avalText, compactParams, formatMs, formatScalar, humanBytes, shortDtypeName, sourceLong, sourceShort } from './format';

describe('avalText', () => {
  it('writes dtypes as the jaxpr printout does and marks weak types like str(aval)', () => {
    expect(avalText({ shape: [3], dtype: 'float32', weak_type: false, short: 'float32[3]' })).toBe('f32[3]');
    expect(avalText({ shape: [], dtype: 'float32', weak_type: true, short: 'float32[]' })).toBe('~f32[]');
    expect(avalText({ shape: [2, 2], dtype: 'bool', weak_type: false, short: 'bool[2,2]' })).toBe('bool[2,2]');
    // Already short or already marked: unchanged, never marked twice.
    expect(avalText({ shape: [], dtype: 'int32', weak_type: true, short: '~i32[]' })).toBe('~i32[]');
  });

  it('follows jax._src.dtypes.short_dtype_name', () => {
    // The names JAX prints in jaxprs (e.g. `bf16[8]`, `u8[]`, `c64[4]`).
    expect(['float32', 'bfloat16', 'float16', 'uint8', 'int32', 'int64', 'complex64', 'bool'].map(shortDtypeName)).toEqual(
      ['f32', 'bf16', 'f16', 'u8', 'i32', 'i64', 'c64', 'bool'],
    );
  });
});

describe('numbers for people', () => {
  it('humanBytes uses binary units and says when a figure is missing', () => {
    expect(humanBytes(0)).toBe('0 B');
    expect(humanBytes(1000)).toBe('1000 B');
    expect(humanBytes(1536)).toBe('1.50 KiB');
    expect(humanBytes(4_000_000)).toBe('3.81 MiB');
    expect(humanBytes(-1)).toBe('not reported');
  });

  it('formatMs keeps three significant digits', () => {
    expect(formatMs(0.028432)).toBe('0.0284 ms');
    expect(formatMs(7.0555)).toBe('7.06 ms');
    expect(formatMs(1234)).toBe('1.23 s');
  });

  it('compactParams keeps JAX order and cuts long text', () => {
    expect(compactParams({ axes: '(0,)', out_sharding: 'None' })).toBe('axes=(0,) out_sharding=None');
    expect(compactParams({ a: 'x'.repeat(100) }, 10)).toHaveLength(10);
    expect(compactParams({ donated_invars: '(False,)', name: '_where' })).toBe('name=_where donated_invars=(False,)');
  });
});

describe('formatScalar', () => {
  it('prints float32 with float32 digits, never float64 ones (the review findings)', () => {
    expect(formatScalar(0.10000000149011612, 'float32')).toBe('0.1');
    // Math.fround round-trip gives 0.19886744; the array previews cap at 6 digits after the point.
    expect(formatScalar(0.19886744022369385, 'float32')).toBe('0.198867');
    expect(formatScalar(-1.3560506105422974, 'float32')).toBe('-1.356051');
    expect(formatScalar(0.1, 'float64')).toBe('0.1');
    expect(formatScalar(1234.5677490234375, 'float32')).toBe('1234.5677');
    expect(formatScalar(1234.5677490234375, 'float64')).toBe('1234.567749');
  });

  it('writes special values, integers and booleans as numpy does', () => {
    expect(formatScalar(Number.NaN, 'float32')).toBe('nan');
    expect(formatScalar(Infinity, 'float32')).toBe('inf');
    expect(formatScalar(-Infinity, 'float64')).toBe('-inf');
    expect(formatScalar('nan', 'float32')).toBe('nan');
    expect(formatScalar(-0, 'float32')).toBe('-0.0');
    expect(formatScalar(0, 'float32')).toBe('0.0');
    expect(formatScalar(1, 'float32')).toBe('1.0');
    expect(formatScalar(7, 'int32')).toBe('7');
    expect(formatScalar(-7, 'int64')).toBe('-7');
    expect(formatScalar(true, 'bool')).toBe('True');
    expect(formatScalar(0, 'bool')).toBe('False');
    expect(formatScalar(null, 'float32')).toBe('—');
  });

  it('rounds half to even past 6 digits and goes scientific where numpy does', () => {
    expect(formatScalar(0.0078125, 'float32')).toBe('0.007812');
    expect(formatScalar(0.0234375, 'float32')).toBe('0.023438');
    expect(formatScalar(1e-5, 'float32')).toBe('1e-05');
    expect(formatScalar(12345678, 'float32')).toBe('1.234568e+07');
    expect(formatScalar(12345678, 'float64')).toBe('12345678.0');
  });

  it('finds the shortest digits of float16 and bfloat16', () => {
    expect(formatScalar(0.0999755859375, 'float16')).toBe('0.1');
    expect(formatScalar(0.10009765625, 'bfloat16')).toBe('0.1');
    expect(formatScalar(1.5, 'bfloat16')).toBe('1.5');
    expect(formatScalar(70000, 'float16')).toBe('inf');
  });

  it('agrees with numpy (the backend preview_value) on every shared case', () => {
    const wrong = cases.cases
      .map((c) => {
        const value = typeof c.value === 'string' && c.value === '-0.0' ? -0 : typeof c.value === 'string' ? Number(c.value.replace('inf', 'Infinity')) : c.value;
        return { ...c, got: formatScalar(value, c.dtype) };
      })
      .filter((c) => c.got !== c.text);
    expect(wrong).toEqual([]);
    expect(cases.cases.length).toBeGreaterThan(300);
  });
});

describe('eqn sources', () => {
  const nested = { line: 26, function: 'layer_norm', callers: [{ line: 41, function: 'block' }, { line: 50, function: 'f' }] };
  it('names the line and the snippet frames that called it', () => {
    expect(sourceShort(nested)).toBe('line 26 ← 41 ← 50');
    expect(sourceLong(nested)).toBe('line 26 in layer_norm, called from line 41 in block, called from line 50 in f');
  });
  it('is one line in the outermost frame, and a dash without a place', () => {
    expect(sourceShort({ line: 3, function: 'f', callers: null })).toBe('line 3');
    expect(sourceLong({ line: 3, function: '<module>' })).toBe('line 3');
    expect(sourceShort(null)).toBe('—');
  });
});
